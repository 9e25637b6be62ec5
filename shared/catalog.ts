// The routing catalog: every public model name mapped to the provider adapter and the provider's own
// model id, with the inputs it allows (aspect ratios, durations, resolutions), defaults, a deadline
// and a price in credits. It is the one source for request validation, pricing and routing.
// Values follow each provider's documentation; the `source` of each entry says where.
import type { JobKind, LiveProviderName, ProviderName } from './job-model.js';

export interface ModelRoute {
  /** Public model name of our API. */
  model: string;
  kind: JobKind;
  /** Adapter that serves the model when it is live. */
  provider: LiveProviderName;
  /** The provider's own model id or endpoint id. */
  providerModelId: string;
  /** How the fal adapter shapes this model's request (its documented input schema), when fal serves it. */
  falRequest?: FalRequestShape;
  /** For multi-step pipelines (talking actor): further provider ids used. */
  secondaryModelIds?: Record<string, string>;
  /** Where these values were read. */
  source: string;
  /**
   * Other live routes for the same model, in order: used when the primary provider's key is absent,
   * and with failover on, the routes a running job moves to when its provider fails in a way another
   * provider can fix (grok-video: fal first, then xAI's own API). See shared/routing.ts.
   */
  alternates?: readonly AlternateRoute[];
  /**
   * Where else the same model is served, from the providers' own documentation, and why it has no
   * alternate here (no adapter written yet, or no second provider at all). README "Provider failover".
   */
  otherRoutes?: string;
  /** Providers a pipeline needs besides its own (talking actor: ElevenLabs speech, then fal lipsync). */
  alsoNeeds?: readonly LiveProviderName[];
  aspectRatios: readonly string[];
  defaultAspectRatio: string;
  /** Allowed durations in seconds: a list of discrete values, or an inclusive range of integers. */
  durations?: { values: readonly number[] } | { min: number; max: number };
  defaultDuration?: number;
  resolutions?: readonly string[];
  defaultResolution?: string;
  /** Provider time budget before the job fails, in seconds. */
  deadlineSeconds: number;
  price: Price;
  /** Most reference images the live route can use (extra ones would be dropped silently, so they are refused). */
  maxReferenceImages?: number;
  /** How the live provider serves what is asked, where it differs (stated in the model catalog and README). */
  servedAs?: Readonly<Record<string, string>>;
  /** Longest speech one live request can lipsync, in seconds (talking actor). */
  maxSpeechSeconds?: number;
  /**
   * Prompt length in characters (Unicode code points, as the provider counts them) that the provider's
   * published input schema allows, where it is narrower than the create schema's 1–4000.
   */
  promptChars?: { min?: number; max?: number };
  /** Durations the provider's reference-image endpoint allows, where narrower than `durations`. */
  referenceDurations?: readonly number[];
  /** False where the live route has no end-frame input (an end frame would be dropped, so it is refused). */
  endFrame?: boolean;
}

export type { LiveProviderName } from './job-model.js';

/** The fal request builders (activities/providers/fal.ts), one per documented input schema family. */
export const falRequestShapes = ['nano-banana', 'seedream', 'veo', 'kling', 'seedance', 'grok', 'wan-animate-replace'] as const;
export type FalRequestShape = (typeof falRequestShapes)[number];

export interface AlternateRoute {
  provider: LiveProviderName;
  providerModelId: string;
  source: string;
  /**
   * What this route can take, where narrower than the model's: a job asking for more never starts
   * on it and never fails over to it (shared/routing.ts resolveJobRoute). Unset: everything the model takes.
   */
  accepts?: AlternateAccepts;
}

export interface AlternateAccepts {
  durations?: readonly number[];
  resolutions?: readonly string[];
  aspectRatios?: readonly string[];
  /** False: text only (no start frame, end frame or reference images). */
  imageInputs?: boolean;
}

/**
 * `providerCost`: what the provider charges for a submitted request, in credits per the same unit
 * (per job: plus the price's per-hundred-characters part, the speech made first). A customer's
 * cancel after the submit does not refund it unless the provider honors the cancel (README "Cancel").
 */
export type Price =
  | { per: 'image'; credits: number; providerCost: number }
  | { per: 'second'; credits: number; providerCost: number }
  | { per: 'job'; credits: number; perHundredChars?: number; providerCost: number };

const imageRatios = ['1:1', '9:16', '16:9'] as const;

export const catalog = {
  // ---- images
  'nano-banana-2': {
    model: 'nano-banana-2',
    kind: 'image',
    provider: 'fal',
    providerModelId: 'fal-ai/nano-banana-2',
    falRequest: 'nano-banana',
    secondaryModelIds: { edit: 'fal-ai/nano-banana-2/edit' },
    // fal.ai/models/fal-ai/nano-banana-2 (queue API): prompt, num_images, aspect_ratio (auto, 21:9 … 9:16),
    // resolution 0.5K | 1K | 2K | 4K, output_format jpeg | png | webp; /edit adds image_urls.
    otherRoutes: "Google's Gemini API names Nano Banana 2 gemini-3.1-flash-image (GA 2026-05-28; the -preview id shut down 2026-06-25), per ai.google.dev/gemini-api/docs/changelog and /deprecations. Its changelog entry of 2026-10-06 deprecates gemini-3.1-flash-image in favour of gemini-nano-banana-2.1 (Nano Banana 2.1, a newer model, not this one) without a shutdown date; third-party gateway notes (LiteLLM) give a shutdown on 2026-10-29 that no Google page read confirms or denies. Whether the Gemini API still serves gemini-3.1-flash-image is unconfirmed, so no alternate.",
    source: 'fal.ai model page fal-ai/nano-banana-2 (prompt, num_images, aspect_ratio, output_format; /edit: image_urls)',
    // fal's input schema for fal-ai/nano-banana-2 and /edit: prompt minLength 3.
    promptChars: { min: 3 },
    aspectRatios: imageRatios,
    defaultAspectRatio: '1:1',
    deadlineSeconds: 300,
    price: { per: 'image', credits: 4, providerCost: 3 },
  },
  'gpt-image-1.5': {
    model: 'gpt-image-1.5',
    kind: 'image',
    provider: 'openai',
    providerModelId: 'gpt-image-1.5',
    // developers.openai.com/api/reference/resources/images/methods/generate: gpt-image-1.5 is listed as live;
    // sizes 1024x1024 | 1536x1024 | 1024x1536 | auto, n 1–10, GPT image models always answer b64_json.
    // Azure OpenAI in Microsoft Foundry serves it too (activities/providers/azure.ts, contracts/azure.ts):
    // the second route, on a deployment of gpt-image-1.5, with the same three sizes and n. Its 4,000-character
    // prompt bound is the create schema's own, so it takes every job this model takes.
    alternates: [
      {
        provider: 'azure',
        providerModelId: 'gpt-image-1.5',
        source: "Microsoft's Azure OpenAI REST reference (MicrosoftDocs/azure-ai-docs includes/api-versions/latest-inference-preview.md: POST {endpoint}/openai/deployments/{deployment-id}/images/generations?api-version=2025-04-01-preview, api-key header) and how-to dall-e.md (gpt-image-1 series sizes 1024x1024 | 1024x1536 | 1536x1024, n 1–10, b64_json, contentFilter errors); the openai SDK's AzureOpenAI client (azure.js) builds the same URL and header; the deployment is AZURE_OPENAI_IMAGE_DEPLOYMENT",
      },
    ],
    otherRoutes: "OpenAI's Images API (POST /v1/images/generations) and Azure OpenAI in Microsoft Foundry (a gpt-image-1.5 deployment, POST /openai/deployments/{deployment}/images/generations, listed among Azure's image generation models in Microsoft's docs): two live routes; with failover on a job moves from one to the other.",
    source: 'OpenAI Images API, POST /v1/images/generations (size 1024x1024 | 1536x1024 | 1024x1536, n, b64_json)',
    aspectRatios: imageRatios,
    // gpt-image has no 16:9 size: the nearest documented ones are 3:2 and 2:3, and they are served as is.
    servedAs: { '16:9': '3:2, 1536×1024 (gpt-image has no 16:9 size)', '9:16': '2:3, 1024×1536 (gpt-image has no 9:16 size)' },
    defaultAspectRatio: '1:1',
    deadlineSeconds: 300,
    price: { per: 'image', credits: 6, providerCost: 4 },
  },
  'seedream-4.5': {
    model: 'seedream-4.5',
    kind: 'image',
    provider: 'fal',
    providerModelId: 'fal-ai/bytedance/seedream/v4.5/text-to-image',
    falRequest: 'seedream',
    secondaryModelIds: { edit: 'fal-ai/bytedance/seedream/v4.5/edit' },
    // fal.ai/docs/model-api-reference/image-generation-api/bytedance-seedream-v4.5: image_size is a preset or
    // { width, height } with width and height 1920–4096 or a total of 2560×1440 to 4096×4096 pixels; the
    // presets (square_hd = 1024×1024 …) are below that minimum, so explicit sizes are sent
    // (seedreamImageSize: 2048×2048, 2560×1440, 1440×2560). num_images 1–6.
    // BytePlus ModelArk is the second route (activities/providers/byteplus.ts, contracts/byteplus.ts):
    // the same three sizes as `size` "WxH", reference images as `image`, one call per image.
    alternates: [
      {
        provider: 'byteplus',
        providerModelId: 'seedream-4-5-251128',
        source: "byteplus-python-sdk-v2 3.0.63 byteplussdkarkruntime (Images.generate: POST /api/v3/images/generations, model, prompt, image, size, sequential_image_generation, response_format b64_json, watermark); model id and the 2560×1440 … 4096×4096 pixel rule from third-party docs only (ARK_SEEDREAM_MODEL overrides the id): contracts/byteplus.ts",
        accepts: { aspectRatios: ['1:1', '16:9', '9:16'] },
      },
    ],
    otherRoutes: "fal (fal-ai/bytedance/seedream/v4.5/*) and BytePlus ModelArk (POST /api/v3/images/generations, ByteDance's byteplus-python-sdk-v2 and docs.byteplus.com ModelArk): two live routes; with failover on a job moves from one to the other. The Ark model id seedream-4-5-251128 is from third-party docs (BytePlus's model list rows could not be read): ARK_SEEDREAM_MODEL overrides it.",
    source: 'fal.ai model page fal-ai/bytedance/seedream/v4.5/text-to-image (image_size {width,height} ≥ 2560×1440 pixels, num_images 1-6; /edit: image_urls)',
    aspectRatios: imageRatios,
    servedAs: { '1:1': '2048×2048', '16:9': '2560×1440', '9:16': '1440×2560' },
    defaultAspectRatio: '1:1',
    deadlineSeconds: 300,
    price: { per: 'image', credits: 4, providerCost: 3 },
  },

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
    secondaryModelIds: {
      imageToVideo: 'fal-ai/veo3.1/image-to-video',
      firstLastFrame: 'fal-ai/veo3.1/first-last-frame-to-video',
      reference: 'fal-ai/veo3.1/reference-to-video',
    },
    // fal's Veo 3.1 schema puts no rule between resolution and duration: 4s, 6s and 8s at 720p and 1080p
    // (4k is billed higher and not offered). Reference images (1-3) go to reference-to-video, 8s only.
    // Google's Gemini API serves the same Veo 3.1 as veo-3.1's second route does, with the same reach.
    alternates: [
      {
        provider: 'google',
        providerModelId: 'veo-3.1-generate-preview',
        source: "ai.google.dev/gemini-api/docs/video (Veo 3.1: 8-second videos, 16:9 | 9:16, first and/or last frame, up to three reference images); the REST wire read from Google's SDK @google/genai 2.32.0 and tested against it: contracts/google.ts",
        accepts: { durations: [8], resolutions: ['720p', '1080p'], aspectRatios: ['16:9', '9:16'] },
      },
    ],
    otherRoutes: "Served as Veo 3.1: fal (fal-ai/veo3.1/*) and Google's Gemini API (veo-3.1-generate-preview through models.predictLongRunning, as veo-3.1's second route): two live routes for 8 s jobs (text, first frame, first and last frame, reference images); 4 s and 6 s jobs stay on fal.",
    source: 'OpenAI Videos API retired 2026-09-24 (sora-2-pro shut down); routed to fal.ai fal-ai/veo3.1 (duration 4s | 6s | 8s at 720p and 1080p, aspect_ratio 16:9 | 9:16; reference-to-video: 1-3 image_urls, 8s only)',
    servedAs: { model: 'Veo 3.1 on fal (fal-ai/veo3.1): OpenAI shut sora-2-pro down on 2026-09-24' },
    maxReferenceImages: 3,
    referenceDurations: [8],
    aspectRatios: ['16:9', '9:16'],
    defaultAspectRatio: '16:9',
    durations: { values: [4, 6, 8] },
    defaultDuration: 8,
    resolutions: ['720p', '1080p'],
    defaultResolution: '1080p',
    deadlineSeconds: 1800,
    price: { per: 'second', credits: 30, providerCost: 20 },
  },
  'sora-2': {
    model: 'sora-2',
    kind: 'video',
    provider: 'fal',
    providerModelId: 'fal-ai/veo3.1/fast',
    falRequest: 'veo',
    secondaryModelIds: {
      imageToVideo: 'fal-ai/veo3.1/fast/image-to-video',
      firstLastFrame: 'fal-ai/veo3.1/fast/first-last-frame-to-video',
    },
    // Veo 3.1 Fast on fal has no reference-to-video endpoint: one reference image is used as the first
    // frame (image-to-video); more would be dropped, so they are refused. Durations as Veo 3.1.
    // Google's Gemini API is the second route for 8 s text-to-video: Google's pages read name the
    // image features for Veo 3.1 without saying which Veo 3.1 Fast has, so jobs with images stay on fal.
    alternates: [
      {
        provider: 'google',
        providerModelId: 'veo-3.1-fast-generate-preview',
        source: "Google's Veo 3.1 model page (cloud.google.com/vertex-ai/generative-ai/docs/models/veo/3-1-generate: model id veo-3.1-fast-generate-preview, 16:9 | 9:16, 720p | 1080p); ai.google.dev/gemini-api/docs/video (8-second videos on the Gemini API); the REST wire read from Google's SDK @google/genai 2.32.0: contracts/google.ts",
        accepts: { durations: [8], resolutions: ['720p', '1080p'], aspectRatios: ['16:9', '9:16'], imageInputs: false },
      },
    ],
    otherRoutes: "Served as Veo 3.1 Fast: fal (fal-ai/veo3.1/fast/*) and Google's Gemini API (veo-3.1-fast-generate-preview through models.predictLongRunning): two live routes for 8 s text-to-video jobs; jobs with image inputs or of 4 s / 6 s stay on fal.",
    source: 'OpenAI Videos API retired 2026-09-24 (sora-2 shut down); routed to fal.ai fal-ai/veo3.1/fast (duration 4s | 6s | 8s at 720p and 1080p, aspect_ratio 16:9 | 9:16; no reference-to-video)',
    servedAs: { model: 'Veo 3.1 Fast on fal (fal-ai/veo3.1/fast): OpenAI shut sora-2 down on 2026-09-24' },
    maxReferenceImages: 1,
    aspectRatios: ['16:9', '9:16'],
    defaultAspectRatio: '16:9',
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
    secondaryModelIds: { imageToVideo: 'fal-ai/kling-video/v3/pro/image-to-video' },
    // fal.ai/docs/model-api-reference/video-generation-api/kling-video-v3-pro: duration "3" … "15",
    // aspect_ratio 16:9 | 9:16 | 1:1, generate_audio; image-to-video takes start_image_url / end_image_url.
    otherRoutes: "Kuaishou serves Kling models on its own API (app.klingai.com/global/dev), but its reference is not reachable from this build's sources: only third-party summaries, which disagree on the host and on authentication (a JWT signed with an access/secret key pair at api.klingai.com, or a bearer key at an api-singapore host after a 2026 revision). No adapter is written from those. No alternate.",
    source: 'fal.ai model page fal-ai/kling-video/v3/pro/text-to-video (duration 3-15, aspect_ratio 16:9 | 9:16 | 1:1, generate_audio; prompt at most 2500 characters)',
    // One reference image is the first frame (image-to-video); there is no multi-reference endpoint.
    maxReferenceImages: 1,
    promptChars: { max: 2500 },
    aspectRatios: ['16:9', '9:16', '1:1'],
    defaultAspectRatio: '16:9',
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
    secondaryModelIds: { imageToVideo: 'fal-ai/kling-video/v2.6/pro/image-to-video' },
    otherRoutes: "Kuaishou serves Kling models on its own API (app.klingai.com/global/dev), but its reference is not reachable from this build's sources: only third-party summaries, which disagree on the host and on authentication (a JWT signed with an access/secret key pair at api.klingai.com, or a bearer key at an api-singapore host after a 2026 revision). No adapter is written from those. No alternate.",
    source: 'fal.ai model page fal-ai/kling-video/v2.6/pro/text-to-video (duration "5" | "10", aspect_ratio 16:9 | 9:16 | 1:1, generate_audio; prompt at most 2500 characters)',
    // One reference image is the first frame (image-to-video); there is no multi-reference endpoint.
    maxReferenceImages: 1,
    promptChars: { max: 2500 },
    aspectRatios: ['16:9', '9:16', '1:1'],
    defaultAspectRatio: '16:9',
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
    secondaryModelIds: {
      imageToVideo: 'fal-ai/veo3.1/image-to-video',
      firstLastFrame: 'fal-ai/veo3.1/first-last-frame-to-video',
      reference: 'fal-ai/veo3.1/reference-to-video',
    },
    // fal.ai/models/fal-ai/veo3.1/llms.txt: duration "4s" | "6s" | "8s", aspect_ratio 16:9 | 9:16,
    // resolution 720p | 1080p | 4k (4k is billed at a higher rate and not offered here). Reference
    // images go to fal-ai/veo3.1/reference-to-video, whose schema has duration "8s" only, and Veo takes
    // at most 3 reference images (Google's Gemini API Veo 3.1 documentation: "up to three").
    // Google's Gemini API is the second route (activities/providers/google.ts, contracts/google.ts):
    // 8 s jobs, text-to-video, first frame, first and last frame or 1-3 reference images (sent inline
    // as base64, the only image form the Gemini API takes); 4 s and 6 s are documented for Vertex, not
    // for the Gemini API, so they stay on fal.
    alternates: [
      {
        provider: 'google',
        providerModelId: 'veo-3.1-generate-preview',
        source: "ai.google.dev/gemini-api/docs/video (8-second videos, 16:9 | 9:16, 720p | 1080p | 4k; 4k not offered); the REST wire (predictLongRunning with x-goog-api-key, the body, operation polling, generateVideoResponse.generatedSamples[].video.uri) read from Google's SDK @google/genai 2.32.0 and tested against it: contracts/google.ts",
        accepts: { durations: [8], resolutions: ['720p', '1080p'], aspectRatios: ['16:9', '9:16'] },
      },
    ],
    otherRoutes: "fal (fal-ai/veo3.1/*) and Google's Gemini API (ai.google.dev/gemini-api/docs/video: veo-3.1-generate-preview through models.predictLongRunning, then operations polling; wire read from Google's SDK @google/genai): two live routes for 8 s jobs (text, first frame, first and last frame, reference images); with failover on such a job moves from one to the other. 4 s and 6 s jobs stay on fal (Google documents them for Vertex, not for the Gemini API). Vertex AI serves it too; no adapter.",
    source: 'fal.ai model page fal-ai/veo3.1 (duration 4s | 6s | 8s at 720p and 1080p, aspect_ratio 16:9 | 9:16); fal-ai/veo3.1/reference-to-video (1-3 image_urls, duration 8s)',
    maxReferenceImages: 3,
    referenceDurations: [8],
    aspectRatios: ['16:9', '9:16'],
    defaultAspectRatio: '16:9',
    durations: { values: [4, 6, 8] },
    defaultDuration: 8,
    resolutions: ['720p', '1080p'],
    defaultResolution: '720p',
    deadlineSeconds: 1200,
    price: { per: 'second', credits: 20, providerCost: 14 },
  },
  'seedance-1.5': {
    model: 'seedance-1.5',
    kind: 'video',
    provider: 'fal',
    providerModelId: 'fal-ai/bytedance/seedance/v1.5/pro/text-to-video',
    falRequest: 'seedance',
    secondaryModelIds: { imageToVideo: 'fal-ai/bytedance/seedance/v1.5/pro/image-to-video' },
    // fal.ai/models/fal-ai/bytedance/seedance/v1.5/pro/text-to-video/llms.txt: duration "4" … "12",
    // resolution 480p | 720p | 1080p, aspect_ratio 21:9 | 16:9 | 4:3 | 1:1 | 3:4 | 9:16 | auto.
    // BytePlus ModelArk is the second route (activities/providers/byteplus.ts, contracts/byteplus.ts):
    // text-to-video at 480p or 720p, 4–12 s, the six ratios, as top-level ratio/duration/resolution.
    alternates: [
      {
        provider: 'byteplus',
        providerModelId: 'seedance-1-5-pro-251215',
        source: 'byteplus-python-sdk-v2 3.0.63 byteplussdkarkruntime (Tasks.create: POST /api/v3/contents/generations/tasks, model, content[{ type: text }], ratio, duration, resolution, generate_audio, watermark → { id }; Tasks.get status queued | running | succeeded | failed | cancelled, content.video_url; Tasks.delete) and docs.byteplus.com ModelArk 1520757; model id, ratios, 4–12 s and 480p/720p from third-party docs only (1080p disputed, image roles unconfirmed): contracts/byteplus.ts',
        accepts: { durations: [4, 5, 6, 7, 8, 9, 10, 11, 12], resolutions: ['480p', '720p'], aspectRatios: ['16:9', '9:16', '1:1', '4:3', '3:4', '21:9'], imageInputs: false },
      },
    ],
    otherRoutes: "fal (fal-ai/bytedance/seedance/v1.5/pro/*) and BytePlus ModelArk (async tasks at POST /api/v3/contents/generations/tasks, ByteDance's byteplus-python-sdk-v2 and docs.byteplus.com ModelArk 1520757): two live routes for text-to-video jobs at 480p or 720p; with failover on such a job moves from one to the other. Jobs with a start/end frame or reference images, or at 1080p, stay on fal (the Ark image roles were not confirmed from BytePlus's text, and resellers disagree on 1080p). The Ark model id seedance-1-5-pro-251215 is from third-party docs: ARK_SEEDANCE_MODEL overrides it.",
    source: 'fal.ai model page fal-ai/bytedance/seedance/v1.5/pro/text-to-video (duration 4-12, resolution 480p | 720p | 1080p, aspect_ratio 21:9 … 9:16)',
    // One reference image is the first frame (image-to-video); there is no multi-reference endpoint.
    maxReferenceImages: 1,
    aspectRatios: ['16:9', '9:16', '1:1', '4:3', '3:4', '21:9'],
    defaultAspectRatio: '16:9',
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
    alternates: [
      {
        provider: 'xai',
        providerModelId: 'grok-imagine-video',
    source: 'docs.x.ai video generation: POST /v1/videos/generations → request_id, GET /v1/videos/{request_id} (status pending | done | expired | failed)',
      },
    ],
    otherRoutes: "fal (xai/grok-imagine-video/*) and xAI's own API (docs.x.ai video generation): two live routes; with failover on a job moves from one to the other.",
    source: 'fal.ai model page xai/grok-imagine-video/text-to-video (duration 1-15, resolution 480p | 720p, aspect_ratio 16:9 | 9:16 | 1:1 | 4:3 | 3:2 | 2:3 | 3:4)',
    // Neither grok endpoint (fal's image-to-video, xAI's `image`) takes a last frame.
    endFrame: false,
    // One reference image is the first frame (image-to-video); there is no multi-reference endpoint.
    maxReferenceImages: 1,
    aspectRatios: ['16:9', '9:16', '1:1', '4:3', '3:4', '3:2', '2:3'],
    defaultAspectRatio: '16:9',
    durations: { min: 1, max: 15 },
    defaultDuration: 6,
    resolutions: ['480p', '720p'],
    defaultResolution: '720p',
    deadlineSeconds: 1200,
    price: { per: 'second', credits: 6, providerCost: 4 },
  },

  // ---- replace actor (one fixed model name for the kind)
  'replace-actor': {
    model: 'replace-actor',
    kind: 'replace_actor',
    provider: 'fal',
    providerModelId: 'fal-ai/wan/v2.2-14b/animate/replace',
    falRequest: 'wan-animate-replace',
    // fal.ai/models/fal-ai/wan/v2.2-14b/animate/replace/llms.txt: video_url, image_url (resized and
    // center-cropped to the output), resolution 480p | 580p | 720p. The output follows the motion video's
    // length, so `duration` is enforced by the motion video we hand over, not by a provider field.
    // Alibaba, the maker of Wan, serves the same model on Model Studio (activities/providers/alibaba.ts,
    // contracts/alibaba.ts): the second route. It takes everything this model takes once the inputs are
    // conformed (3–30 s inside its 2–30 s, a 720p frame of 1:1, 9:16 or 16:9, an actor PNG at that frame),
    // so `accepts` only pins the resolution and aspect ratios the conformed inputs were checked for.
    alternates: [
      {
        provider: 'alibaba',
        providerModelId: 'wan2.2-animate-mix',
        source: 'alibabacloud.com/help/en/model-studio/wan-animate-mix-api (read 2026-11-25): POST /api/v1/services/aigc/image2video/video-synthesis (X-DashScope-Async: enable, Bearer key) { model: wan2.2-animate-mix, input: { image_url, video_url }, parameters: { mode: wan-std } } → output.task_id; GET /api/v1/tasks/{task_id} until SUCCEEDED → output.results.video_url; dashscope SDK 2.0.2 for the task protocol and error codes',
        accepts: { resolutions: ['720p'], aspectRatios: ['1:1', '9:16', '16:9'] },
      },
    ],
    otherRoutes: "fal (fal-ai/wan/v2.2-14b/animate/replace) and Alibaba Cloud Model Studio (alibabacloud.com/help/en/model-studio/wan-animate-mix-api: wan2.2-animate-mix, video character swap, standard mode wan-std, through DashScope's asynchronous task API): two live routes; with failover on a job moves from one to the other.",
    source: 'fal.ai model page fal-ai/wan/v2.2-14b/animate/replace (video_url, image_url, resolution 480p | 580p | 720p)',
    aspectRatios: ['1:1', '9:16', '16:9'],
    defaultAspectRatio: '9:16',
    durations: { min: 3, max: 30 },
    defaultDuration: 30,
    resolutions: ['720p'],
    defaultResolution: '720p',
    deadlineSeconds: 1800,
    price: { per: 'second', credits: 8, providerCost: 5 },
  },

  // ---- talking actor: ElevenLabs speech, then an image + audio lipsync model on fal
  'talking-actor': {
    model: 'talking-actor',
    kind: 'talking_actor',
    provider: 'elevenlabs',
    providerModelId: 'eleven_multilingual_v2',
    secondaryModelIds: { lipsync: 'fal-ai/infinitalk' },
    alsoNeeds: ['fal'],
    // elevenlabs.io/docs/api-reference/text-to-speech/convert: POST /v1/text-to-speech/{voice_id}
    // ?output_format=pcm_24000, header xi-api-key, body { text, model_id, voice_settings { stability,
    // similarity_boost, style, speed } }. fal-ai/infinitalk: image_url, audio_url, prompt, resolution 480p | 720p.
    otherRoutes: 'A two-provider pipeline (ElevenLabs speech, then fal-ai/infinitalk); no second route for either step here. No alternate.',
    source: 'ElevenLabs POST /v1/text-to-speech/{voice_id} (voice_settings stability, similarity_boost, style, speed 0.7-1.2); fal.ai fal-ai/infinitalk (image_url, audio_url, prompt, resolution)',
    aspectRatios: ['9:16', '16:9', '1:1'],
    defaultAspectRatio: '9:16',
    resolutions: ['720p'],
    defaultResolution: '720p',
    deadlineSeconds: 1800,
    price: { per: 'job', credits: 20, perHundredChars: 2, providerCost: 14 },
    // InfiniteTalk renders num_frames 41–721 at 25 fps: at most 28.8 s of speech per request. Longer
    // scripts are refused at create time on the live route (talkingActorScriptLimit), so what is charged
    // is what is delivered; the local renderer has no such cap.
    maxSpeechSeconds: 28.8,
  },
} as const satisfies Record<string, ModelRoute>;

export type ModelName = keyof typeof catalog;

export const imageModels = ['nano-banana-2', 'gpt-image-1.5', 'seedream-4.5'] as const;
export const videoModels = ['sora-2-pro', 'sora-2', 'kling-3.0', 'kling-2.6', 'veo-3.1', 'seedance-1.5', 'grok-video'] as const;
export const replaceActorModel = 'replace-actor';
export const talkingActorModel = 'talking-actor';

export function routeFor(model: string): ModelRoute | undefined {
  return Object.hasOwn(catalog, model) ? (catalog as Record<string, ModelRoute>)[model] : undefined;
}

export function allowedDurations(route: ModelRoute): string {
  const d = route.durations;
  if (!d) return 'none';
  return 'values' in d ? d.values.join(', ') : `${d.min} to ${d.max}`;
}

export function durationAllowed(route: ModelRoute, seconds: number): boolean {
  const d = route.durations;
  if (!d) return false;
  return 'values' in d ? d.values.includes(seconds) : Number.isInteger(seconds) && seconds >= d.min && seconds <= d.max;
}

/**
 * Speech rate used to bound a script before it is spoken: characters per second at speed 1. ElevenLabs
 * voices speak about 14–17 characters a second; the slow end keeps the estimate on the safe side.
 */
export const speechCharsPerSecond = 14;

/** The longest script (characters) a live talking-actor request can speak within the lipsync cap. */
export function talkingActorScriptLimit(route: ModelRoute, speed = 1): number | undefined {
  if (route.maxSpeechSeconds === undefined) return undefined;
  return Math.floor(route.maxSpeechSeconds * speechCharsPerSecond * speed);
}

/** The fields of a job's params that `requestRefusal` reads (any kind's params fit). */
export interface RequestShape {
  [field: string]: unknown;
  script?: string;
  voice_options?: { speed?: number } | null;
  reference_file_ids?: readonly string[] | null;
  start_frame_file_id?: string | null;
  end_frame_file_id?: string | null;
  prompt?: string | null;
  duration?: number | null;
}

/** Characters as providers count them (Python `len`: code points, not UTF-16 units). */
export function promptLength(prompt: string): number {
  let n = 0;
  for (const _ of prompt) n++;
  return n;
}

/** Why `provider`'s route of the model cannot take this request (an alternate's `accepts`), or undefined. */
export function routeRefusal(route: ModelRoute, provider: ProviderName, p: RequestShape): string | undefined {
  const accepts = provider === route.provider ? undefined : route.alternates?.find((a) => a.provider === provider)?.accepts;
  if (!accepts) return undefined;
  const via = `${route.model} on ${provider}`;
  if (accepts.imageInputs === false && (p.start_frame_file_id || p.end_frame_file_id || (p.reference_file_ids?.length ?? 0) > 0)) return `${via} takes no image inputs (text-to-video only)`;
  const duration = p.duration ?? route.defaultDuration;
  if (accepts.durations && duration != null && !accepts.durations.includes(duration)) return `duration: ${via} supports ${accepts.durations.join(', ')} seconds`;
  const resolution = (p.resolution as string | null | undefined) ?? route.defaultResolution;
  if (accepts.resolutions && resolution != null && !accepts.resolutions.includes(resolution)) return `resolution: ${via} supports ${accepts.resolutions.join(', ')}`;
  const aspect = (p.aspect_ratio as string | null | undefined) ?? route.defaultAspectRatio;
  if (accepts.aspectRatios && !accepts.aspectRatios.includes(aspect)) return `aspect_ratio: ${via} supports ${accepts.aspectRatios.join(', ')}`;
  return undefined;
}

/** Whether `provider`'s route of the model can take this request. */
export function routeTakes(route: ModelRoute, provider: ProviderName, p: RequestShape): boolean {
  return routeRefusal(route, provider, p) === undefined;
}

/**
 * Why a request the create schema accepts cannot be served as asked (the message of a 400), or
 * undefined. `provider` is the adapter that would serve it: caps of a live provider do not apply to
 * the local renderer.
 */
export function requestRefusal(route: ModelRoute, p: RequestShape, provider: ProviderName): string | undefined {
  const narrower = routeRefusal(route, provider, p);
  if (narrower) return narrower;
  const refs = p.reference_file_ids?.length ?? 0;
  if (route.maxReferenceImages !== undefined && refs > route.maxReferenceImages) {
    return `reference_file_ids: ${route.model} takes at most ${route.maxReferenceImages} reference image${route.maxReferenceImages === 1 ? '' : 's'}`;
  }
  if (refs > 0 && p.start_frame_file_id) {
    return `reference_file_ids: ${route.model} cannot combine reference images with start_frame_file_id; send one or the other`;
  }
  if (refs > 0 && route.referenceDurations && p.duration != null && !route.referenceDurations.includes(p.duration)) {
    return `duration: ${route.model} with reference images supports ${route.referenceDurations.join(', ')} seconds`;
  }
  if (p.end_frame_file_id && route.endFrame === false) {
    return `end_frame_file_id: ${route.model} takes no end frame`;
  }
  // The first frame is the start frame, or a lone reference image on a route without a reference
  // endpoint (fal.ts videoFrames): an end frame without one has no endpoint to go to.
  const firstFrame = !!p.start_frame_file_id || (refs === 1 && !route.secondaryModelIds?.reference);
  if (p.end_frame_file_id && !firstFrame) {
    return `end_frame_file_id: ${route.model} needs start_frame_file_id (the first frame) with an end frame`;
  }
  // A provider's prompt bounds are its own: the local renderer takes any prompt the create schema does.
  if (provider !== 'local' && typeof p.prompt === 'string' && route.promptChars) {
    const { min, max } = route.promptChars;
    const n = promptLength(p.prompt);
    if (min !== undefined && n < min) return `prompt: ${route.model} needs at least ${min} characters; this prompt has ${n}`;
    if (max !== undefined && n > max) return `prompt: ${route.model} takes at most ${max} characters; this prompt has ${n}`;
  }
  if (provider !== 'local' && p.script !== undefined) {
    const speed = p.voice_options?.speed ?? 1;
    const limit = talkingActorScriptLimit(route, speed);
    if (limit !== undefined && p.script.length > limit) {
      return `script: at most ${limit} characters at speed ${speed} here (${route.model} lipsyncs at most ${route.maxSpeechSeconds} seconds of speech per video); this script has ${p.script.length}`;
    }
  }
  return undefined;
}

/** The price of a job in credits: an integer, fixed at create time. */
export function priceFor(route: ModelRoute, p: { count?: number; duration?: number; script?: string }): number {
  const price = route.price;
  switch (price.per) {
    case 'image':
      return price.credits * (p.count ?? 1);
    case 'second':
      return price.credits * Math.ceil(p.duration ?? route.defaultDuration ?? 1);
    case 'job':
      return price.credits + (price.perHundredChars ?? 0) * Math.ceil((p.script?.length ?? 0) / 100);
  }
}

/** The credits of a job's price that a cancel after its submit does not refund: never more than the price. */
export function providerCostFor(route: ModelRoute, p: { count?: number; duration?: number; script?: string }): number {
  const price = route.price;
  const units = price.per === 'image' ? (p.count ?? 1) : price.per === 'second' ? Math.ceil(p.duration ?? route.defaultDuration ?? 1) : 1;
  const speech = price.per === 'job' ? (price.perHundredChars ?? 0) * Math.ceil((p.script?.length ?? 0) / 100) : 0;
  return Math.max(0, Math.min(priceFor(route, p), price.providerCost * units + speech));
}

/** Pixel size of a frame for an aspect ratio at a resolution label (short side = the label). */
export function frameSize(aspectRatio: string, resolution = '720p'): { width: number; height: number } {
  const short = Number.parseInt(resolution, 10) || 720;
  const [w, h] = aspectRatio.split(':').map(Number) as [number, number];
  const even = (n: number) => Math.round(n / 2) * 2;
  if (w === h) return { width: short, height: short };
  return w > h ? { width: even((short * w) / h), height: short } : { width: short, height: even((short * h) / w) };
}

/** Pixel size of a generated image for an aspect ratio. */
export function imageSize(aspectRatio: string): { width: number; height: number } {
  switch (aspectRatio) {
    case '9:16':
      return { width: 576, height: 1024 };
    case '16:9':
      return { width: 1024, height: 576 };
    default:
      return { width: 1024, height: 1024 };
  }
}
