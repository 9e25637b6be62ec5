// The routing catalog: every public model name mapped to the provider adapter and the provider's own
// model id, with the inputs it allows (aspect ratios, durations, resolutions), defaults, a deadline
// and a price in credits. It is the one source for request validation, pricing and routing.
// Values follow each provider's documentation; the `source` of each entry says where.
import type { JobKind, ProviderName } from '../../workflows/definitions.js';

export interface ModelRoute {
  /** Public model name of our API. */
  model: string;
  kind: JobKind;
  /** Adapter that serves the model when it is live. */
  provider: Exclude<ProviderName, 'local'>;
  /** The provider's own model id or endpoint id. */
  providerModelId: string;
  /** For multi-step pipelines (talking actor): further provider ids used. */
  secondaryModelIds?: Record<string, string>;
  /** Where these values were read. */
  source: string;
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
}

export type Price =
  | { per: 'image'; credits: number }
  | { per: 'second'; credits: number }
  | { per: 'job'; credits: number; perHundredChars?: number };

const imageRatios = ['1:1', '9:16', '16:9'] as const;

export const catalog = {
  // ---- images
  'nano-banana-2': {
    model: 'nano-banana-2',
    kind: 'image',
    provider: 'fal',
    providerModelId: 'fal-ai/nano-banana-2',
    source: 'fal.ai model page fal-ai/nano-banana-2 (queue API, aspect_ratio, num_images)',
    aspectRatios: imageRatios,
    defaultAspectRatio: '1:1',
    deadlineSeconds: 300,
    price: { per: 'image', credits: 4 },
  },
  'gpt-image-1.5': {
    model: 'gpt-image-1.5',
    kind: 'image',
    provider: 'openai',
    providerModelId: 'gpt-image-1.5',
    source: 'OpenAI Images API, POST /v1/images/generations (size 1024x1024 | 1024x1536 | 1536x1024, n)',
    aspectRatios: imageRatios,
    defaultAspectRatio: '1:1',
    deadlineSeconds: 300,
    price: { per: 'image', credits: 6 },
  },
  'seedream-4.5': {
    model: 'seedream-4.5',
    kind: 'image',
    provider: 'fal',
    providerModelId: 'fal-ai/bytedance/seedream/v4.5/text-to-image',
    source: 'fal.ai model page fal-ai/bytedance/seedream/v4.5/text-to-image (image_size, num_images)',
    aspectRatios: imageRatios,
    defaultAspectRatio: '1:1',
    deadlineSeconds: 300,
    price: { per: 'image', credits: 4 },
  },

  // ---- videos
  'sora-2-pro': {
    model: 'sora-2-pro',
    kind: 'video',
    provider: 'openai',
    providerModelId: 'sora-2-pro',
    source: 'OpenAI Videos API, POST /v1/videos (seconds 4 | 8 | 12; size 720x1280, 1280x720, 1024x1792, 1792x1024)',
    aspectRatios: ['9:16', '16:9'],
    defaultAspectRatio: '16:9',
    durations: { values: [4, 8, 12] },
    defaultDuration: 4,
    resolutions: ['720p', '1080p'],
    defaultResolution: '720p',
    deadlineSeconds: 1800,
    price: { per: 'second', credits: 30 },
  },
  'sora-2': {
    model: 'sora-2',
    kind: 'video',
    provider: 'openai',
    providerModelId: 'sora-2',
    source: 'OpenAI Videos API, POST /v1/videos (seconds 4 | 8 | 12; size 720x1280, 1280x720)',
    aspectRatios: ['9:16', '16:9'],
    defaultAspectRatio: '16:9',
    durations: { values: [4, 8, 12] },
    defaultDuration: 4,
    resolutions: ['720p'],
    defaultResolution: '720p',
    deadlineSeconds: 1200,
    price: { per: 'second', credits: 10 },
  },
  'kling-3.0': {
    model: 'kling-3.0',
    kind: 'video',
    provider: 'fal',
    providerModelId: 'fal-ai/kling-video/v3/pro/text-to-video',
    secondaryModelIds: { imageToVideo: 'fal-ai/kling-video/v3/pro/image-to-video' },
    source: 'fal.ai model page fal-ai/kling-video/v3/pro/text-to-video (duration 3-15, aspect_ratio)',
    aspectRatios: ['16:9', '9:16', '1:1'],
    defaultAspectRatio: '16:9',
    durations: { min: 3, max: 15 },
    defaultDuration: 5,
    resolutions: ['1080p'],
    defaultResolution: '1080p',
    deadlineSeconds: 1200,
    price: { per: 'second', credits: 14 },
  },
  'kling-2.6': {
    model: 'kling-2.6',
    kind: 'video',
    provider: 'fal',
    providerModelId: 'fal-ai/kling-video/v2.6/pro/text-to-video',
    secondaryModelIds: { imageToVideo: 'fal-ai/kling-video/v2.6/pro/image-to-video' },
    source: 'fal.ai model page fal-ai/kling-video/v2.6/pro/text-to-video (duration "5" | "10", aspect_ratio)',
    aspectRatios: ['16:9', '9:16', '1:1'],
    defaultAspectRatio: '16:9',
    durations: { values: [5, 10] },
    defaultDuration: 5,
    resolutions: ['1080p'],
    defaultResolution: '1080p',
    deadlineSeconds: 1200,
    price: { per: 'second', credits: 10 },
  },
  'veo-3.1': {
    model: 'veo-3.1',
    kind: 'video',
    provider: 'fal',
    providerModelId: 'fal-ai/veo3.1',
    secondaryModelIds: {
      imageToVideo: 'fal-ai/veo3.1/image-to-video',
      firstLastFrame: 'fal-ai/veo3.1/first-last-frame-to-video',
      reference: 'fal-ai/veo3.1/reference-to-video',
    },
    source: 'fal.ai model page fal-ai/veo3.1 (duration 4s | 6s | 8s, aspect_ratio 16:9 | 9:16, resolution 720p | 1080p)',
    aspectRatios: ['16:9', '9:16'],
    defaultAspectRatio: '16:9',
    durations: { values: [4, 6, 8] },
    defaultDuration: 8,
    resolutions: ['720p', '1080p'],
    defaultResolution: '720p',
    deadlineSeconds: 1200,
    price: { per: 'second', credits: 20 },
  },
  'seedance-1.5': {
    model: 'seedance-1.5',
    kind: 'video',
    provider: 'fal',
    providerModelId: 'fal-ai/bytedance/seedance/v1.5/pro/text-to-video',
    secondaryModelIds: { imageToVideo: 'fal-ai/bytedance/seedance/v1.5/pro/image-to-video' },
    source: 'fal.ai model page fal-ai/bytedance/seedance/v1.5/pro/text-to-video (duration 4-12, resolution 480p | 720p | 1080p)',
    aspectRatios: ['16:9', '9:16', '1:1', '4:3', '3:4', '21:9'],
    defaultAspectRatio: '16:9',
    durations: { min: 4, max: 12 },
    defaultDuration: 5,
    resolutions: ['480p', '720p', '1080p'],
    defaultResolution: '720p',
    deadlineSeconds: 1200,
    price: { per: 'second', credits: 8 },
  },
  'grok-video': {
    model: 'grok-video',
    kind: 'video',
    provider: 'xai',
    providerModelId: 'grok-imagine-video',
    source: 'xAI API, POST /v1/videos/generations then GET /v1/videos/{request_id} (duration 1-15, aspect_ratio, resolution 480p | 720p)',
    aspectRatios: ['16:9', '9:16', '1:1', '4:3', '3:4', '3:2', '2:3'],
    defaultAspectRatio: '16:9',
    durations: { min: 1, max: 15 },
    defaultDuration: 6,
    resolutions: ['480p', '720p'],
    defaultResolution: '720p',
    deadlineSeconds: 1200,
    price: { per: 'second', credits: 6 },
  },

  // ---- replace actor (one fixed model name for the kind)
  'replace-actor': {
    model: 'replace-actor',
    kind: 'replace_actor',
    provider: 'fal',
    providerModelId: 'fal-ai/wan/v2.2-14b/animate/replace',
    source: 'fal.ai model page fal-ai/wan/v2.2-14b/animate/replace (video_url, image_url, resolution)',
    aspectRatios: ['1:1', '9:16', '16:9'],
    defaultAspectRatio: '9:16',
    durations: { min: 3, max: 30 },
    defaultDuration: 30,
    resolutions: ['720p'],
    defaultResolution: '720p',
    deadlineSeconds: 1800,
    price: { per: 'second', credits: 8 },
  },

  // ---- talking actor: ElevenLabs speech, then an image + audio lipsync model on fal
  'talking-actor': {
    model: 'talking-actor',
    kind: 'talking_actor',
    provider: 'elevenlabs',
    providerModelId: 'eleven_multilingual_v2',
    secondaryModelIds: { lipsync: 'fal-ai/infinitalk' },
    source: 'ElevenLabs POST /v1/text-to-speech/{voice_id} (voice_settings); fal.ai fal-ai/infinitalk (image_url, audio_url)',
    aspectRatios: ['9:16', '16:9', '1:1'],
    defaultAspectRatio: '9:16',
    resolutions: ['720p'],
    defaultResolution: '720p',
    deadlineSeconds: 1800,
    price: { per: 'job', credits: 20, perHundredChars: 2 },
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
