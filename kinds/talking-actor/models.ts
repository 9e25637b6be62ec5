// The talking-actor kind's catalog models (shared/catalog.ts has the rules): each a speech step, then the route's lipsync.
// Values follow each provider's documentation; the `source` of each entry says where. Second routes:
// providers/<name>/descriptor.ts `routes`.
import type { ModelEntry } from '../../shared/catalog/types.js';

/** Every talking-actor model's catalog entry: the kinds' models list (kinds/models.ts) reads it. */
export const entries = {
  // Two workflow steps: ElevenLabs speaks the script (the speech step), then fal's image + audio
  // lipsync model renders the video (the route's own request).
  'talking-actor': {
    model: 'talking-actor',
    kind: 'talking_actor',
    provider: 'fal',
    providerModelId: 'fal-ai/infinitalk',
    falRequest: 'infinitalk',
    speech: { provider: 'elevenlabs', modelId: 'eleven_multilingual_v2' },
    // elevenlabs.io/docs/api-reference/text-to-speech/convert: POST /v1/text-to-speech/{voice_id}
    // ?output_format=pcm_24000, header xi-api-key, body { text, model_id, voice_settings { stability,
    // similarity_boost, style, speed } }. fal-ai/infinitalk: image_url, audio_url, prompt, resolution 480p | 720p.
    otherRoutes: 'A two-provider pipeline (ElevenLabs speech, then fal-ai/infinitalk); no second route for either step here. No alternate.',
    source:
      'ElevenLabs POST /v1/text-to-speech/{voice_id} (voice_settings stability, similarity_boost, style, speed 0.7-1.2); fal.ai fal-ai/infinitalk (image_url, audio_url, prompt, resolution)',
    aspectRatios: ['9:16', '16:9', '1:1'],
    defaultAspectRatio: '9:16',
    // InfiniteTalk keeps its image's shape: the image is center-cropped to the asked aspect ratio first.
    produces: {
      formats: ['mp4'],
      aspectRatios: ['9:16', '16:9', '1:1'],
      resolutions: ['720p'],
      source: 'fal.ai model page fal-ai/infinitalk (resolution 480p | 720p, the MP4 follows the image)',
    },
    resolutions: ['720p'],
    defaultResolution: '720p',
    deadlineSeconds: 1800,
    price: { per: 'job', credits: 20, perHundredChars: 2, providerCost: 14 },
    takes: {
      // InfiniteTalk renders num_frames 41–721 at 25 fps: at most 28.8 s of speech per request. Longer
      // scripts are refused at create time on the live route (talkingActorScriptLimit), so what is charged
      // is what is delivered; the local renderer has no such cap.
      maxSpeechSeconds: 28.8,
    },
  },
  // ---- talking actor with ElevenLabs' flagship speech model, Eleven v3, then the same lipsync on fal
  'talking-actor-v3': {
    model: 'talking-actor-v3',
    kind: 'talking_actor',
    provider: 'fal',
    providerModelId: 'fal-ai/infinitalk',
    falRequest: 'infinitalk',
    speech: { provider: 'elevenlabs', modelId: 'eleven_v3' },
    otherRoutes: 'A two-provider pipeline (ElevenLabs speech with eleven_v3, then fal-ai/infinitalk); no second route for either step here. No alternate.',
    source:
      "ElevenLabs POST /v1/text-to-speech/{voice_id} with model_id eleven_v3 (elevenlabs.io/docs/models: Eleven v3, 70+ languages, 5,000 characters a request; output_format pcm_24000 from the API definition's one format list, elevenlabs-python, read 2026-12-02); price: Eleven v3 is billed at Multilingual v2's per-character rate (one 'Multilingual v2/v3' row on elevenlabs.io/pricing/api, $0.10 per 1,000 characters, as developer guides transcribe it: the page itself was not readable here), so the price is talking-actor's; fal.ai fal-ai/infinitalk (image_url, audio_url, prompt, resolution)",
    aspectRatios: ['9:16', '16:9', '1:1'],
    defaultAspectRatio: '9:16',
    produces: {
      formats: ['mp4'],
      aspectRatios: ['9:16', '16:9', '1:1'],
      resolutions: ['720p'],
      source: 'fal.ai model page fal-ai/infinitalk (resolution 480p | 720p, the MP4 follows the image)',
    },
    resolutions: ['720p'],
    defaultResolution: '720p',
    deadlineSeconds: 1800,
    price: { per: 'job', credits: 20, perHundredChars: 2, providerCost: 14 },
    takes: {
      // The same lipsync cap as talking-actor: at most 28.8 s of speech per video.
      maxSpeechSeconds: 28.8,
    },
  },
} as const satisfies Record<string, ModelEntry>;

/** The talking-actor models: the default first (ElevenLabs Multilingual v2 speech), then Eleven v3's. */
export const talkingActorModels = ['talking-actor', 'talking-actor-v3'] as const satisfies readonly (keyof typeof entries)[];
const everyPipelineListed: [Exclude<keyof typeof entries, (typeof talkingActorModels)[number]>] extends [never] ? true : never = true;
void everyPipelineListed;
