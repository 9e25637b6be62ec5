// xAI's own video API: grok-video's second route (providers/xai/adapter.ts).
import { defineProvider } from '../define.js';

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
      produces: {
        formats: ['mp4'],
        aspectRatios: ['16:9', '9:16', '1:1', '4:3', '3:4', '3:2', '2:3'],
        resolutions: ['480p', '720p'],
        source:
          'docs.x.ai video generation (aspect_ratio 1:1 | 16:9 | 9:16 | 4:3 | 3:4 | 3:2 | 2:3 and resolution 480p | 720p answered as asked; video.url an MP4)',
      },
    },
  },
});
