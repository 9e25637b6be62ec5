// The retry schedule of the provider steps (workflows/pipeline-common.ts submitActivity and
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
