// Settings given per provider as `provider=n` pairs (PROVIDER_CONCURRENCY, PROVIDER_RATE_PER_SECOND):
// read by the worker that sizes its queues and by the provider steps that pace their own polls.
import { providerNames, type ProviderName } from './job-model.js';

/** Parses "fal=8,local=2" into a map; an unknown name or a number that is not positive throws `fail(message)`. */
export function parsePerProvider(
  spec: string | undefined,
  what: string,
  fail: (message: string) => Error = (message) => new Error(message),
): Partial<Record<ProviderName, number>> {
  const out: Partial<Record<ProviderName, number>> = {};
  if (!spec) return out;
  for (const part of spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const [name, value] = part.split('=');
    const n = Number(value);
    if (!name || !(providerNames as readonly string[]).includes(name) || !Number.isFinite(n) || n <= 0) {
      throw fail(`${what}: bad entry "${part}" (expected provider=number)`);
    }
    out[name as ProviderName] = n;
  }
  return out;
}
