// Google's Gemini API (Veo 3.1): declared as the second route of veo-3.1, sora-2-pro and sora-2
// (providers/google/adapter.ts), and not offered: Google shut the Veo 3.1 preview models down.
import { defineProvider, type RouteOutput } from '../define.js';

/** Veo 3.1 on the Gemini API: an MP4 at the asked aspect ratio and resolution. */
const veoOutput: RouteOutput = {
  formats: ['mp4'],
  aspectRatios: ['16:9', '9:16'],
  resolutions: ['720p', '1080p'],
  source: 'ai.google.dev/gemini-api/docs/video (parameters aspectRatio 16:9 | 9:16 and resolution 720p | 1080p; generated videos are MP4)',
};

/**
 * Why no Google route is offered. Google's Gemini API deprecations page
 * (ai.google.dev/gemini-api/docs/deprecations) lists veo-3.1-generate-preview,
 * veo-3.1-fast-generate-preview and veo-3.1-lite-generate-preview with the shutdown date 2026-10-22
 * and gemini-omni-1.1-flash as the replacement; calls since answer 404 "is no longer available"
 * (reported by resellers, e.g. docs.apiyi.com 2026-10-25). The GA ids veo-3.1-generate-001 and
 * veo-3.1-fast-generate-001 are documented for Vertex AI (Gemini Enterprise Agent Platform, OAuth
 * service-account auth, no adapter here) and not for the Gemini API: Google's release note of
 * 2026-06-15 sends Gemini API users to the preview ids, or to the GA ids "through Gemini Enterprise
 * Agent Platform". The replacement is another model (Gemini Omni, on the Interactions API: another
 * wire, 720p clips of its own lengths), not Veo 3.1, so it is not a route of these models.
 */
const shutDown =
  "Google shut the Gemini API's Veo 3.1 preview models down on 2026-10-22 (ai.google.dev/gemini-api/docs/deprecations) and documents no Veo model on the Gemini API since; Veo 3.1's GA ids are served on Vertex AI only, for which there is no adapter here";

export const google = defineProvider({
  name: 'google',
  keys: ['GEMINI_API_KEY'],
  config: ({ optionalString, url }) => ({
    GEMINI_API_KEY: optionalString.describe(
      "Google's Gemini API key. No Google route is offered while Google documents no Veo model on the Gemini API (docs/operations/providers/google.md).",
    ),
    GEMINI_BASE_URL: url
      .default('https://generativelanguage.googleapis.com')
      .describe("The Gemini API origin; a trailing /v1beta (the SDKs' base) is dropped."),
  }),
  /**
   * Google serves generated videos from the Gemini API's origin (the `video.uri` of an operation, read
   * with the key, which goes to the configured API origin only: outputHeaders). The host that download
   * redirects to is not documented (Google's user-content hosts in practice): an operator adds it for
   * google in PROVIDER_OUTPUT_HOSTS if downloads are refused.
   */
  outputHosts: { hosts: ['generativelanguage.googleapis.com'], keyHosts: ['generativelanguage.googleapis.com'] },
  // No cancel for the Gemini API's video operations.
  cancel: 'never',
  routes: {
    'sora-2-pro': {
      providerModelId: 'veo-3.1-generate-preview',
      source:
        "ai.google.dev/gemini-api/docs/video (Veo 3.1: 8-second videos, 16:9 | 9:16, first and/or last frame, up to three reference images); the REST wire read from Google's SDK @google/genai 2.32.0 and tested against it: providers/google/contract.ts",
      accepts: { durations: [8], resolutions: ['720p', '1080p'], aspectRatios: ['16:9', '9:16'] },
      disabled: shutDown,
      produces: veoOutput,
    },
    'sora-2': {
      providerModelId: 'veo-3.1-fast-generate-preview',
      source:
        "Google's Veo 3.1 model page (cloud.google.com/vertex-ai/generative-ai/docs/models/veo/3-1-generate: model id veo-3.1-fast-generate-preview, 16:9 | 9:16, 720p | 1080p); ai.google.dev/gemini-api/docs/video (8-second videos on the Gemini API); the REST wire read from Google's SDK @google/genai 2.32.0: providers/google/contract.ts",
      accepts: { durations: [8], resolutions: ['720p', '1080p'], aspectRatios: ['16:9', '9:16'], imageInputs: false },
      disabled: shutDown,
      produces: veoOutput,
    },
    'veo-3.1': {
      providerModelId: 'veo-3.1-generate-preview',
      source:
        "ai.google.dev/gemini-api/docs/video (8-second videos, 16:9 | 9:16, 720p | 1080p | 4k; 4k not offered); the REST wire (predictLongRunning with x-goog-api-key, the body, operation polling, generateVideoResponse.generatedSamples[].video.uri) read from Google's SDK @google/genai 2.32.0 and tested against it: providers/google/contract.ts",
      accepts: { durations: [8], resolutions: ['720p', '1080p'], aspectRatios: ['16:9', '9:16'] },
      disabled: shutDown,
      produces: veoOutput,
    },
  },
});
