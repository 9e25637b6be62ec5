// The retry schedule of the provider steps (workflows/job-steps.ts submitActivity and
// checkActivity), as data both sides read: the workflow sets it as the steps' retry policy, and a
// provider step measures from it how long its provider has been unreachable (activities/jobs.ts
// givesUp), whatever time the step spent queued behind a busy fleet before it ran.
export const providerStepRetry = { initialMs: 2_000, coefficient: 2, maxIntervalMs: 30_000 } as const;

/** The time the retry schedule waited between the failed attempts before attempt `attempt`: how long the provider has been failing, at least. */
export function failingForMs(attempt: number): number {
  let total = 0;
  let interval: number = providerStepRetry.initialMs;
  for (let i = 1; i < attempt; i++) {
    total += interval;
    interval = Math.min(interval * providerStepRetry.coefficient, providerStepRetry.maxIntervalMs);
  }
  return total;
}

/**
 * The wait before a provider step's next attempt when the provider said how long to wait (Retry-After,
 * or a 429's rate-limit reset): its ask, but never past the time the job has left (`remainingMs`, the
 * customer's deadline or the step's own), since an ask longer than that would sleep through the
 * deadline instead of letting the job fail over or end on it; at least 100 ms. Undefined (the retry
 * schedule decides) when the provider asked nothing.
 */
export function retryWaitMs(askedMs: number | undefined, remainingMs: number | undefined): number | undefined {
  if (askedMs === undefined) return undefined;
  const capped = remainingMs === undefined ? askedMs : Math.min(askedMs, Math.max(0, remainingMs));
  return Math.max(capped, 100);
}
