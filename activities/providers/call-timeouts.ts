// The longest synchronous call each provider's adapter makes — the request whose answer is the paid
// result itself (an Images API generation, a speech synthesis) — in one place: the adapters take
// their timeouts from here, and each provider fleet's shutdown grace is at least its providers'
// longest call (worker/workers.ts), so a deploy lets a paid call finish instead of aborting it and
// paying the retry again.
import type { ProviderName } from '../../shared/job-model.js';
import { defaultTimeoutMs } from './http.js';

/** OpenAI's and Azure OpenAI's Images API answer a generation synchronously, in up to ten minutes. */
export const IMAGES_API_TIMEOUT_MS = 600_000;
/** ElevenLabs speaks a script synchronously (elevenlabs-js waits 240 s by default). */
export const ELEVENLABS_TIMEOUT_MS = 240_000;
/** BytePlus ModelArk's Seedream answers an image generation synchronously. */
export const BYTEPLUS_IMAGE_TIMEOUT_MS = 600_000;

/** Per provider: the longest call its adapter makes (queue-based providers: one status or submit call). */
export const longestCallMs: Record<ProviderName, number> = {
  fal: defaultTimeoutMs,
  openai: IMAGES_API_TIMEOUT_MS,
  azure: IMAGES_API_TIMEOUT_MS,
  elevenlabs: ELEVENLABS_TIMEOUT_MS,
  byteplus: BYTEPLUS_IMAGE_TIMEOUT_MS,
  xai: defaultTimeoutMs,
  google: defaultTimeoutMs,
  alibaba: defaultTimeoutMs,
  // Free: a render cut short is rendered again at no cost.
  local: 0,
};

/** What a step needs after its call returns (recording the reference, storing the outputs' first bytes, answering Temporal). */
export const AFTER_CALL_MARGIN_MS = 30_000;

/** A provider fleet's shutdown grace: the configured one, or longer when its providers' calls take longer. */
export function providerShutdownGraceMs(providers: readonly ProviderName[], configuredMs: number): number {
  const longest = Math.max(0, ...providers.map((p) => longestCallMs[p]));
  return longest > 0 ? Math.max(configuredMs, longest + AFTER_CALL_MARGIN_MS) : configuredMs;
}
