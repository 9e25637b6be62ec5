// The catalog's video models (shared/catalog.ts has the rules). Values follow each provider's
// documentation; the `source` of each entry says where. Second routes: providers/<name>/descriptor.ts `routes`.
import type { ModelEntry } from '../../shared/catalog/types.js';
import { transcribedVideoEntries } from './models-transcribed.js';

const videoEntries = {
  // ---- videos
  // OpenAI shut down the Videos API with sora-2 and sora-2-pro on 2026-09-24 and named no successor
  // (developers.openai.com/api/docs/models/sora-2, "shut down"). Resold Sora endpoints ran on it and
  // stopped too. Both public names therefore route to the closest live tier on fal: Veo 3.1 Fast for
  // sora-2 (speed-first, audio on) and Veo 3.1 for sora-2-pro (quality-first, audio on).
  'sora-2-pro': {
    model: 'sora-2-pro',
    kind: 'video',
    provider: 'fal',
    providerModelId: 'fal-ai/veo3.1',
    falRequest: 'veo',
    // fal's input types (the pinned @fal-ai/client): every Veo 3.1 endpoint has generate_audio; all but
    // reference-to-video have seed and negative_prompt.
    controls: ['seed', 'negative_prompt', 'audio'],
    referenceControls: ['audio'],
    secondaryModelIds: {
      imageToVideo: 'fal-ai/veo3.1/image-to-video',
      firstLastFrame: 'fal-ai/veo3.1/first-last-frame-to-video',
      reference: 'fal-ai/veo3.1/reference-to-video',
    },
    // fal's Veo 3.1 schema puts no rule between resolution and duration: 4s, 6s and 8s at 720p and 1080p
    // (4k is billed higher and not offered). Reference images (1-3) go to reference-to-video, 8s only.
    otherRoutes:
      "Served as Veo 3.1 on fal (fal-ai/veo3.1/*) only. Google's Gemini API route (veo-3.1-generate-preview) is declared but not offered: Google shut that model down on 2026-10-22 (providers/google/descriptor.ts). Vertex AI serves Veo 3.1 (veo-3.1-generate-001); no adapter.",
    source:
      'OpenAI Videos API retired 2026-09-24 (sora-2-pro shut down); routed to fal.ai fal-ai/veo3.1 (duration 4s | 6s | 8s at 720p and 1080p, aspect_ratio 16:9 | 9:16; reference-to-video: 1-3 image_urls, 8s only)',
    servedAs: { model: 'Veo 3.1 on fal (fal-ai/veo3.1): OpenAI shut sora-2-pro down on 2026-09-24' },
    // The name outlived its model: new integrations should ask for Veo 3.1 by its own name. No
    // retirement date is set while the name is served (docs/api/deprecations.md).
    deprecation: {
      since: '2026-09-24',
      reason: 'OpenAI shut sora-2-pro down on 2026-09-24 (developers.openai.com/api/docs/models/sora-2); this name is served as Veo 3.1',
      replacement: 'veo-3.1',
    },
    takes: {
      maxReferenceImages: 3,
      referenceDurations: [8],
    },
    aspectRatios: ['16:9', '9:16'],
    defaultAspectRatio: '16:9',
    produces: {
      formats: ['mp4'],
      aspectRatios: ['16:9', '9:16'],
      resolutions: ['720p', '1080p'],
      source: 'fal.ai model page fal-ai/veo3.1 (aspect_ratio 16:9 | 9:16 and resolution 720p | 1080p of the MP4 answered as asked)',
    },
    durations: { values: [4, 6, 8] },
    defaultDuration: 8,
    resolutions: ['720p', '1080p'],
    defaultResolution: '1080p',
    deadlineSeconds: 1800,
    // The same upstream call as veo-3.1 (fal-ai/veo3.1, audio on, 720p or 1080p at one per-second rate),
    // so the same price: a name is not a tier. test/unit/catalog-prices.test.ts holds the two together.
    price: { per: 'second', credits: 20, providerCost: 14 },
  },
  'sora-2': {
    model: 'sora-2',
    kind: 'video',
    provider: 'fal',
    providerModelId: 'fal-ai/veo3.1/fast',
    falRequest: 'veo',
    // fal's input types (the pinned @fal-ai/client): every Veo 3.1 endpoint has generate_audio; all but
    // reference-to-video have seed and negative_prompt.
    controls: ['seed', 'negative_prompt', 'audio'],
    secondaryModelIds: {
      imageToVideo: 'fal-ai/veo3.1/fast/image-to-video',
      firstLastFrame: 'fal-ai/veo3.1/fast/first-last-frame-to-video',
    },
    // Veo 3.1 Fast on fal has no reference-to-video endpoint: one reference image is used as the first
    // frame (image-to-video); more would be dropped, so they are refused. Durations as Veo 3.1.
    otherRoutes:
      "Served as Veo 3.1 Fast on fal (fal-ai/veo3.1/fast/*) only. Google's Gemini API route (veo-3.1-fast-generate-preview) is declared but not offered: Google shut that model down on 2026-10-22 (providers/google/descriptor.ts). Vertex AI serves Veo 3.1 Fast (veo-3.1-fast-generate-001); no adapter.",
    source:
      'OpenAI Videos API retired 2026-09-24 (sora-2 shut down); routed to fal.ai fal-ai/veo3.1/fast (duration 4s | 6s | 8s at 720p and 1080p, aspect_ratio 16:9 | 9:16; no reference-to-video)',
    servedAs: { model: 'Veo 3.1 Fast on fal (fal-ai/veo3.1/fast): OpenAI shut sora-2 down on 2026-09-24' },
    // The catalog has no public Veo 3.1 Fast name: veo-3.1 is the same model family at its quality tier.
    deprecation: {
      since: '2026-09-24',
      reason: 'OpenAI shut sora-2 down on 2026-09-24 (developers.openai.com/api/docs/models/sora-2); this name is served as Veo 3.1 Fast',
      replacement: 'veo-3.1',
    },
    takes: {
      maxReferenceImages: 1,
    },
    aspectRatios: ['16:9', '9:16'],
    defaultAspectRatio: '16:9',
    produces: {
      formats: ['mp4'],
      aspectRatios: ['16:9', '9:16'],
      resolutions: ['720p', '1080p'],
      source: 'fal.ai model page fal-ai/veo3.1/fast (aspect_ratio 16:9 | 9:16 and resolution 720p | 1080p of the MP4 answered as asked)',
    },
    durations: { values: [4, 6, 8] },
    defaultDuration: 8,
    resolutions: ['720p', '1080p'],
    defaultResolution: '720p',
    deadlineSeconds: 1200,
    price: { per: 'second', credits: 10, providerCost: 7 },
  },
  'kling-3.0': {
    model: 'kling-3.0',
    kind: 'video',
    provider: 'fal',
    providerModelId: 'fal-ai/kling-video/v3/pro/text-to-video',
    falRequest: 'kling',
    // fal's input types of Kling 3.0 Pro and 2.6 Pro (text and image to video): negative_prompt and generate_audio, no seed.
    controls: ['negative_prompt', 'audio'],
    secondaryModelIds: { imageToVideo: 'fal-ai/kling-video/v3/pro/image-to-video' },
    // fal.ai/docs/model-api-reference/video-generation-api/kling-video-v3-pro: duration "3" … "15",
    // aspect_ratio 16:9 | 9:16 | 1:1, generate_audio; image-to-video takes start_image_url / end_image_url.
    otherRoutes:
      "Kuaishou serves Kling models on its own API (app.klingai.com/global/dev), but its reference is not reachable from this build's sources: only third-party summaries, which disagree on the host and on authentication (a JWT signed with an access/secret key pair at api.klingai.com, or a bearer key at an api-singapore host after a 2026 revision). No adapter is written from those. No alternate.",
    source:
      'fal.ai model page fal-ai/kling-video/v3/pro/text-to-video (duration 3-15, aspect_ratio 16:9 | 9:16 | 1:1, generate_audio; prompt at most 2500 characters)',
    takes: {
      // One reference image is the first frame (image-to-video); there is no multi-reference endpoint.
      maxReferenceImages: 1,
      promptChars: { max: 2500 },
    },
    aspectRatios: ['16:9', '9:16', '1:1'],
    defaultAspectRatio: '16:9',
    produces: {
      formats: ['mp4'],
      aspectRatios: ['16:9', '9:16', '1:1'],
      resolutions: ['1080p'],
      source: 'fal.ai model page fal-ai/kling-video/v3/pro/text-to-video (aspect_ratio 16:9 | 9:16 | 1:1; MP4 at 1080p)',
    },
    durations: { min: 3, max: 15 },
    defaultDuration: 5,
    resolutions: ['1080p'],
    defaultResolution: '1080p',
    deadlineSeconds: 1200,
    price: { per: 'second', credits: 14, providerCost: 10 },
  },
  'kling-2.6': {
    model: 'kling-2.6',
    kind: 'video',
    provider: 'fal',
    providerModelId: 'fal-ai/kling-video/v2.6/pro/text-to-video',
    falRequest: 'kling',
    // fal's input types of Kling 3.0 Pro and 2.6 Pro (text and image to video): negative_prompt and generate_audio, no seed.
    controls: ['negative_prompt', 'audio'],
    secondaryModelIds: { imageToVideo: 'fal-ai/kling-video/v2.6/pro/image-to-video' },
    otherRoutes:
      "Kuaishou serves Kling models on its own API (app.klingai.com/global/dev), but its reference is not reachable from this build's sources: only third-party summaries, which disagree on the host and on authentication (a JWT signed with an access/secret key pair at api.klingai.com, or a bearer key at an api-singapore host after a 2026 revision). No adapter is written from those. No alternate.",
    source:
      'fal.ai model page fal-ai/kling-video/v2.6/pro/text-to-video (duration "5" | "10", aspect_ratio 16:9 | 9:16 | 1:1, generate_audio; prompt at most 2500 characters)',
    takes: {
      // One reference image is the first frame (image-to-video); there is no multi-reference endpoint.
      maxReferenceImages: 1,
      promptChars: { max: 2500 },
    },
    aspectRatios: ['16:9', '9:16', '1:1'],
    defaultAspectRatio: '16:9',
    produces: {
      formats: ['mp4'],
      aspectRatios: ['16:9', '9:16', '1:1'],
      resolutions: ['1080p'],
      source: 'fal.ai model page fal-ai/kling-video/v2.6/pro/text-to-video (aspect_ratio 16:9 | 9:16 | 1:1; MP4 at 1080p)',
    },
    durations: { values: [5, 10] },
    defaultDuration: 5,
    resolutions: ['1080p'],
    defaultResolution: '1080p',
    deadlineSeconds: 1200,
    price: { per: 'second', credits: 10, providerCost: 7 },
  },
  'veo-3.1': {
    model: 'veo-3.1',
    kind: 'video',
    provider: 'fal',
    providerModelId: 'fal-ai/veo3.1',
    falRequest: 'veo',
    // fal's input types (the pinned @fal-ai/client): every Veo 3.1 endpoint has generate_audio; all but
    // reference-to-video have seed and negative_prompt.
    controls: ['seed', 'negative_prompt', 'audio'],
    referenceControls: ['audio'],
    secondaryModelIds: {
      imageToVideo: 'fal-ai/veo3.1/image-to-video',
      firstLastFrame: 'fal-ai/veo3.1/first-last-frame-to-video',
      reference: 'fal-ai/veo3.1/reference-to-video',
    },
    // fal.ai/models/fal-ai/veo3.1/llms.txt: duration "4s" | "6s" | "8s", aspect_ratio 16:9 | 9:16,
    // resolution 720p | 1080p | 4k (4k is billed at a higher rate and not offered here). Reference
    // images go to fal-ai/veo3.1/reference-to-video, whose schema has duration "8s" only, and Veo takes
    // at most 3 reference images (Google's Gemini API Veo 3.1 documentation: "up to three").
    // Google's Gemini API route (providers/google/adapter.ts) is declared but not offered: Google
    // shut veo-3.1-generate-preview down on 2026-10-22 (providers/google/descriptor.ts says why).
    otherRoutes:
      "fal (fal-ai/veo3.1/*) only. Google's Gemini API route (veo-3.1-generate-preview through models.predictLongRunning) is declared but not offered: Google shut that model down on 2026-10-22 and documents no Veo model on the Gemini API since (GET /v1/models disabled_routes). Vertex AI serves Veo 3.1 GA (veo-3.1-generate-001, OAuth service-account auth); no adapter.",
    source:
      'fal.ai model page fal-ai/veo3.1 (duration 4s | 6s | 8s at 720p and 1080p, aspect_ratio 16:9 | 9:16); fal-ai/veo3.1/reference-to-video (1-3 image_urls, duration 8s)',
    takes: {
      maxReferenceImages: 3,
      referenceDurations: [8],
    },
    aspectRatios: ['16:9', '9:16'],
    defaultAspectRatio: '16:9',
    produces: {
      formats: ['mp4'],
      aspectRatios: ['16:9', '9:16'],
      resolutions: ['720p', '1080p'],
      source: 'fal.ai model page fal-ai/veo3.1 (aspect_ratio 16:9 | 9:16 and resolution 720p | 1080p of the MP4 answered as asked)',
    },
    durations: { values: [4, 6, 8] },
    defaultDuration: 8,
    resolutions: ['720p', '1080p'],
    defaultResolution: '720p',
    deadlineSeconds: 1200,
    // sora-2-pro calls the same endpoint with the same inputs, at this same price.
    price: { per: 'second', credits: 20, providerCost: 14 },
  },
  'veo-3.1-lite': {
    model: 'veo-3.1-lite',
    kind: 'video',
    provider: 'fal',
    providerModelId: 'fal-ai/veo3.1/lite',
    falRequest: 'veo',
    // fal's input types (the pinned @fal-ai/client): every Veo 3.1 endpoint has generate_audio; all but
    // reference-to-video have seed and negative_prompt.
    controls: ['seed', 'negative_prompt', 'audio'],
    secondaryModelIds: {
      imageToVideo: 'fal-ai/veo3.1/lite/image-to-video',
      firstLastFrame: 'fal-ai/veo3.1/lite/first-last-frame-to-video',
    },
    // fal.ai/models/fal-ai/veo3.1/lite/llms.txt and the pinned @fal-ai/client (its input is Veo 3.1's own
    // type): aspect_ratio 16:9 | 9:16, duration "4s" | "6s" | "8s", resolution 720p | 1080p, generate_audio.
    // fal serves Lite with image-to-video and first-last-frame-to-video but no reference-to-video: one
    // reference image is used as the first frame, more would be dropped, so they are refused.
    otherRoutes:
      "fal (fal-ai/veo3.1/lite/*) only. Google's Gemini API documents no live Veo model since 2026-10-22 (providers/google/descriptor.ts); Vertex AI has no adapter here. No alternate.",
    source:
      'fal.ai/models/fal-ai/veo3.1/lite/llms.txt (aspect_ratio 16:9 | 9:16, duration 4s | 6s | 8s, resolution 720p | 1080p; $0.05 per second at 720p and $0.08 at 1080p with audio), and @fal-ai/client EndpointTypeMap fal-ai/veo3.1/lite, /image-to-video, /first-last-frame-to-video',
    takes: {
      maxReferenceImages: 1,
    },
    aspectRatios: ['16:9', '9:16'],
    defaultAspectRatio: '16:9',
    produces: {
      formats: ['mp4'],
      aspectRatios: ['16:9', '9:16'],
      resolutions: ['720p', '1080p'],
      source: 'fal.ai model page fal-ai/veo3.1/lite (aspect_ratio 16:9 | 9:16 and resolution 720p | 1080p of the MP4 answered as asked)',
    },
    durations: { values: [4, 6, 8] },
    defaultDuration: 8,
    resolutions: ['720p', '1080p'],
    defaultResolution: '720p',
    deadlineSeconds: 1200,
    // One price for both resolutions, so the provider cost is 1080p's ($0.08 per second with audio, which
    // is always sent), the higher of fal's two rates.
    price: { per: 'second', credits: 4, providerCost: 3 },
  },
  'seedance-1.5': {
    model: 'seedance-1.5',
    kind: 'video',
    provider: 'fal',
    providerModelId: 'fal-ai/bytedance/seedance/v1.5/pro/text-to-video',
    falRequest: 'seedance',
    // fal's input types of Seedance 1.5 Pro (text and image to video): seed and generate_audio.
    controls: ['seed', 'audio'],
    secondaryModelIds: { imageToVideo: 'fal-ai/bytedance/seedance/v1.5/pro/image-to-video' },
    // fal.ai/models/fal-ai/bytedance/seedance/v1.5/pro/text-to-video/llms.txt: duration "4" … "12",
    // resolution 480p | 720p | 1080p, aspect_ratio 21:9 | 16:9 | 4:3 | 1:1 | 3:4 | 9:16 | auto.
    // BytePlus ModelArk is the second route (providers/byteplus/adapter.ts, providers/byteplus/contract.ts):
    // text-to-video at 480p or 720p, 4–12 s, the six ratios, as top-level ratio/duration/resolution.
    otherRoutes:
      "fal (fal-ai/bytedance/seedance/v1.5/pro/*) and BytePlus ModelArk (async tasks at POST /api/v3/contents/generations/tasks, ByteDance's byteplus-python-sdk-v2 and docs.byteplus.com ModelArk 1520757): two live routes for text-to-video jobs at 480p or 720p; with failover on such a job moves from one to the other. Jobs with a start/end frame or reference images, or at 1080p, stay on fal (the Ark image roles were not confirmed from BytePlus's text, and resellers disagree on 1080p). The Ark model id seedance-1-5-pro-251215 is from third-party docs: ARK_SEEDANCE_MODEL overrides it.",
    source: 'fal.ai model page fal-ai/bytedance/seedance/v1.5/pro/text-to-video (duration 4-12, resolution 480p | 720p | 1080p, aspect_ratio 21:9 … 9:16)',
    takes: {
      // One reference image is the first frame (image-to-video); there is no multi-reference endpoint.
      maxReferenceImages: 1,
    },
    aspectRatios: ['16:9', '9:16', '1:1', '4:3', '3:4', '21:9'],
    defaultAspectRatio: '16:9',
    produces: {
      formats: ['mp4'],
      aspectRatios: ['16:9', '9:16', '1:1', '4:3', '3:4', '21:9'],
      resolutions: ['480p', '720p', '1080p'],
      source: 'fal.ai model page fal-ai/bytedance/seedance/v1.5/pro/text-to-video (aspect_ratio and resolution of the MP4 answered as asked)',
    },
    durations: { min: 4, max: 12 },
    defaultDuration: 5,
    resolutions: ['480p', '720p', '1080p'],
    defaultResolution: '720p',
    deadlineSeconds: 1200,
    price: { per: 'second', credits: 8, providerCost: 5 },
  },
  'grok-video': {
    model: 'grok-video',
    kind: 'video',
    // Grok Imagine Video is hosted on fal (xai/grok-imagine-video/*), so fal is the primary route;
    // xAI's own API is the alternate when only XAI_API_KEY is configured.
    provider: 'fal',
    providerModelId: 'xai/grok-imagine-video/text-to-video',
    falRequest: 'grok',
    secondaryModelIds: { imageToVideo: 'xai/grok-imagine-video/image-to-video' },
    otherRoutes:
      "fal (xai/grok-imagine-video/*) and xAI's own API (docs.x.ai video generation): two live routes; with failover on a job moves from one to the other.",
    source:
      'fal.ai model page xai/grok-imagine-video/text-to-video (duration 1-15, resolution 480p | 720p, aspect_ratio 16:9 | 9:16 | 1:1 | 4:3 | 3:2 | 2:3 | 3:4)',
    takes: {
      // Neither grok endpoint (fal's image-to-video, xAI's `image`) takes a last frame.
      endFrame: false,
      // One reference image is the first frame (image-to-video); there is no multi-reference endpoint.
      maxReferenceImages: 1,
    },
    aspectRatios: ['16:9', '9:16', '1:1', '4:3', '3:4', '3:2', '2:3'],
    defaultAspectRatio: '16:9',
    produces: {
      formats: ['mp4'],
      aspectRatios: ['16:9', '9:16', '1:1', '4:3', '3:4', '3:2', '2:3'],
      resolutions: ['480p', '720p'],
      source: 'fal.ai model page xai/grok-imagine-video/text-to-video (aspect_ratio and resolution 480p | 720p of the MP4 answered as asked)',
    },
    durations: { min: 1, max: 15 },
    defaultDuration: 6,
    resolutions: ['480p', '720p'],
    defaultResolution: '720p',
    deadlineSeconds: 1200,
    price: { per: 'second', credits: 6, providerCost: 4 },
  },
} as const satisfies Record<string, ModelEntry>;

/** Every video model's catalog entry, this file's and the transcribed ones: the kinds' models list (kinds/models.ts) reads it. */
export const entries = { ...videoEntries, ...transcribedVideoEntries };

/** The video models in document order (the create body's `model` enum), from both files. */
export const videoModels = [
  'sora-2-pro',
  'sora-2',
  'kling-3.0',
  'kling-3.0-turbo',
  'kling-o3-4k',
  'kling-2.6',
  'veo-3.1',
  'veo-3.1-lite',
  'seedance-1.5',
  'seedance-2.0',
  'seedance-2.0-fast',
  'grok-video',
  'grok-video-1.5',
] as const satisfies readonly (keyof typeof entries)[];
// …and every video model of both files is in the list.
const everyVideoListed: [Exclude<keyof typeof entries, (typeof videoModels)[number]>] extends [never] ? true : never = true;
void everyVideoListed;
