// Routing configuration for tests: live mode with every provider key unset, then the ones a test
// names. Adding a provider adds its key here once (the Record type makes a missing key a compile error).
import type { ProviderKey } from '../../shared/routing.js';

const unset: Record<ProviderKey, undefined> = {
  FAL_KEY: undefined,
  OPENAI_API_KEY: undefined,
  ELEVENLABS_API_KEY: undefined,
  XAI_API_KEY: undefined,
  GEMINI_API_KEY: undefined,
  ARK_API_KEY: undefined,
  DASHSCOPE_API_KEY: undefined,
  AZURE_OPENAI_API_KEY: undefined,
  AZURE_OPENAI_ENDPOINT: undefined,
};

export function liveKeys(set: Partial<Record<ProviderKey, string>> = {}): { PROVIDERS_MODE: 'live' } & Record<ProviderKey, string | undefined> {
  return { PROVIDERS_MODE: 'live', ...unset, ...set };
}
