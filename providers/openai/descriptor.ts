// OpenAI's Images API (gpt-image-1.5; providers/openai/adapter.ts).
import { defineProvider } from '../define.js';

export const openai = defineProvider({
  name: 'openai',
  keys: ['OPENAI_API_KEY'],
  config: ({ optionalString, url }) => ({
    OPENAI_API_KEY: optionalString.describe("OpenAI's API key: gpt-image-1.5 is live on OpenAI only with it."),
    OPENAI_BASE_URL: url.default('https://api.openai.com').describe("OpenAI's API origin."),
  }),
  // Images are answered as base64: no output host at all.
  outputHosts: { hosts: [], keyHosts: [] },
  // The Images API answers within the request: nothing is left to cancel.
  cancel: 'never',
  // The Images API answers a generation synchronously, in up to ten minutes (openai-node's timeout).
  longestCallMs: 600_000,
});
