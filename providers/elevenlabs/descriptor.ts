// ElevenLabs speech: the talking-actor pipeline is ElevenLabs speech, then a lipsync on fal
// (providers/elevenlabs/adapter.ts), so it needs fal's key too.
import { defineProvider } from '../define.js';
import { fal } from '../fal/descriptor.js';

export const elevenlabs = defineProvider({
  name: 'elevenlabs',
  keys: ['ELEVENLABS_API_KEY', 'FAL_KEY'],
  config: ({ optionalString, url }) => ({
    ELEVENLABS_API_KEY: optionalString.describe("ElevenLabs' API key: the talking actor is live only with it and FAL_KEY."),
    ELEVENLABS_BASE_URL: url.default('https://api.elevenlabs.io').describe("ElevenLabs' API origin."),
  }),
  // The talking-actor video is a fal lipsync output.
  outputHosts: fal.outputHosts,
  // The speech is synthesized (and paid) before the fal lipsync is queued.
  cancel: 'never',
  // Speech is synthesized within the request (elevenlabs-js waits 240 s by default).
  longestCallMs: 240_000,
});
