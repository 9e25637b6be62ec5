// xAI's own video API: grok-video's second route (activities/providers/xai.ts).
import { defineProvider } from './define.js';

export const xai = defineProvider({
  name: 'xai',
  keys: ['XAI_API_KEY'],
  config: ({ optionalString, url }) => ({
    XAI_API_KEY: optionalString.describe("xAI's API key: grok-video's second route is live only with it."),
    XAI_BASE_URL: url.default('https://api.x.ai').describe("xAI's API origin."),
  }),
  /** xAI serves generated videos from vidgen.x.ai (the `video.url` of docs.x.ai's Video Generation answers); no key goes there. */
  outputHosts: { hosts: ['vidgen.x.ai'], keyHosts: [] },
  // No cancel for deferred video requests.
  cancel: 'never',
  routes: {
    'grok-video': {
      providerModelId: 'grok-imagine-video',
      source: 'docs.x.ai video generation: POST /v1/videos/generations → request_id, GET /v1/videos/{request_id} (status pending | done | expired | failed)',
    },
  },
});
