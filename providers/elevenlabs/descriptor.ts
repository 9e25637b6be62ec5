// ElevenLabs speech: the speech step of the talking-actor routes (their catalog `speech`), run on this
// provider's queue before the route's lipsync on fal (providers/elevenlabs/adapter.ts).
import { defineProvider } from '../define.js';

export const elevenlabs = defineProvider({
  name: 'elevenlabs',
  keys: ['ELEVENLABS_API_KEY'],
  config: ({ optionalString, url }) => ({
    ELEVENLABS_API_KEY: optionalString.describe("ElevenLabs' API key: the talking actor is live only with it and FAL_KEY."),
    ELEVENLABS_BASE_URL: url.default('https://api.elevenlabs.io').describe("ElevenLabs' API origin."),
  }),
  // The speech is stored by the step itself: no output is ever downloaded from ElevenLabs.
  outputHosts: { hosts: [], keyHosts: [] },
  // Speech is synthesized within the request, and paid: there is nothing to cancel.
  cancel: 'never',
  // Speech is synthesized within the request (elevenlabs-js waits 240 s by default).
  longestCallMs: 240_000,
});
