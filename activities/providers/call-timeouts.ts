// The longest synchronous call each provider's adapter makes, in one table derived from the
// descriptors (\`longestCallMs\`, providers/<name>/descriptor.ts): the adapters take that call's
// timeout from it, and each provider fleet's shutdown grace is at least its providers' longest call
// (worker/workers.ts), so a deploy lets a paid call finish instead of aborting it and paying the
// retry again.
import type { ProviderName } from '../../shared/job-model.js';
import { providers } from '../../providers/index.js';
import { defaultTimeoutMs } from './http.js';

/** Per provider: the longest call its adapter makes (a queue API: one status or submit call). */
export const longestCallMs = {
  ...Object.fromEntries(providers.map((p) => [p.name, p.longestCallMs ?? defaultTimeoutMs])),
  // Free: a render cut short is rendered again at no cost.
  local: 0,
} as Record<ProviderName, number>;

/** What a step needs after its call returns (recording the reference, storing the outputs' first bytes, answering Temporal). */
export const AFTER_CALL_MARGIN_MS = 30_000;

/** A provider fleet's shutdown grace: the configured one, or longer when its providers' calls take longer. */
export function providerShutdownGraceMs(providers: readonly ProviderName[], configuredMs: number): number {
  const longest = Math.max(0, ...providers.map((p) => longestCallMs[p]));
  return longest > 0 ? Math.max(configuredMs, longest + AFTER_CALL_MARGIN_MS) : configuredMs;
}
