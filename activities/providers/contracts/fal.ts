// fal model inputs: the request body of every fal endpoint this service calls. Source: fal's
// per-endpoint OpenAPI schemas, which generate fal-js's endpoint types (github.com/fal-ai/fal-js
// libs/client/src/types/{image,video}/types.gen.ts and zod.gen.ts, @fal-ai/client 1.x, commit
// 53241327) and fal's model pages (fal.ai/models/<endpoint>/llms.txt, "Input Schema"), read 2026-11.
// Only the fields each endpoint documents are listed: a strict schema makes the fake refuse an unknown
// field the way fal's validation does (422 `detail: [{ loc, msg, type }]`), and the adapter builds each
// body with `satisfies FalInput<endpoint>`, so a wrong field fails the build.
//
// Queue protocol (fal.ai/docs, Queue API; fal-js src/queue.ts): POST {queue}/{endpoint} → 200
// { request_id, status_url, response_url, cancel_url }; GET …/status → 202 while IN_QUEUE or
// IN_PROGRESS, 200 when COMPLETED (with `error` / `error_type` when the run failed); GET result → the
// output, or the run's error (4xx/5xx; a 5xx after COMPLETED is final: fal already retried its
// runner). Header `X-Fal-Object-Lifecycle-Preference: {"expiration_duration_seconds": N}` sets how
// long output files are kept on fal's CDN.
import { z } from 'zod';

const url = z.url({ protocol: /^https?$/ });
const urls = z.array(url).min(1);
const seed = z.number().int().optional();

export const nanoBananaAspectRatios = ['auto', '21:9', '16:9', '3:2', '4:3', '5:4', '1:1', '4:5', '3:4', '2:3', '9:16'] as const;
const nanoBanana = {
  prompt: z.string().min(1),
  num_images: z.number().int().min(1).max(4).optional(),
  seed,
  aspect_ratio: z.enum(nanoBananaAspectRatios).optional(),
  output_format: z.enum(['jpeg', 'png', 'webp']).optional(),
  sync_mode: z.boolean().optional(),
  resolution: z.enum(['0.5K', '1K', '2K', '4K']).optional(),
  limit_generations: z.boolean().optional(),
  enable_web_search: z.boolean().optional(),
};

/** Seedream 4.5: width and height 1920–4096, or a total pixel count from 2560×1440 to 4096×4096. */
export const seedreamMinPixels = 2560 * 1440;
export const seedreamMaxPixels = 4096 * 4096;
const seedreamSize = z.union([
  z.enum(['square_hd', 'square', 'portrait_4_3', 'portrait_16_9', 'landscape_4_3', 'landscape_16_9', 'auto_2K', 'auto_4K']),
  z
    .strictObject({ width: z.number().int(), height: z.number().int() })
    .refine(
      ({ width, height }) => (width >= 1920 && width <= 4096 && height >= 1920 && height <= 4096) || (width * height >= seedreamMinPixels && width * height <= seedreamMaxPixels),
      'width and height must be between 1920 and 4096, or the total pixel count between 2560*1440 and 4096*4096',
    ),
]);
const seedream = {
  prompt: z.string().min(1),
  image_size: seedreamSize.optional(),
  num_images: z.number().int().min(1).max(6).optional(),
  max_images: z.number().int().min(1).max(6).optional(),
  seed,
  sync_mode: z.boolean().optional(),
  enable_safety_checker: z.boolean().optional(),
};

const klingCommon = {
  negative_prompt: z.string().optional(),
  cfg_scale: z.number().min(0).max(1).optional(),
  generate_audio: z.boolean().optional(),
};
const klingV3Durations = z.enum(['3', '4', '5', '6', '7', '8', '9', '10', '11', '12', '13', '14', '15']);
const klingRatios = z.enum(['16:9', '9:16', '1:1']);

const veoDuration = z.enum(['4s', '6s', '8s']);
const veoResolution = z.enum(['720p', '1080p', '4k']);
const veoCommon = {
  prompt: z.string().min(1),
  duration: veoDuration.optional(),
  negative_prompt: z.string().optional(),
  resolution: veoResolution.optional(),
  generate_audio: z.boolean().optional(),
  seed,
  auto_fix: z.boolean().optional(),
};
const veoText = z.strictObject({ ...veoCommon, aspect_ratio: z.enum(['16:9', '9:16']).optional(), enhance_prompt: z.boolean().optional() });
const veoImage = z.strictObject({ ...veoCommon, image_url: url, aspect_ratio: z.enum(['auto', '16:9', '9:16']).optional() });
const veoFirstLast = z.strictObject({ ...veoCommon, first_frame_url: url, last_frame_url: url, aspect_ratio: z.enum(['auto', '16:9', '9:16']).optional() });
const veoReference = z.strictObject({ ...veoCommon, image_urls: urls, aspect_ratio: z.enum(['16:9', '9:16']).optional() });

const seedanceCommon = {
  prompt: z.string().min(1),
  aspect_ratio: z.enum(['21:9', '16:9', '4:3', '1:1', '3:4', '9:16', 'auto']).optional(),
  resolution: z.enum(['480p', '720p', '1080p']).optional(),
  duration: z.enum(['4', '5', '6', '7', '8', '9', '10', '11', '12']).optional(),
  camera_fixed: z.boolean().optional(),
  seed,
  enable_safety_checker: z.boolean().optional(),
  generate_audio: z.boolean().optional(),
};

const grokCommon = {
  prompt: z.string().min(1),
  duration: z.number().int().min(1).max(15).optional(),
  resolution: z.enum(['480p', '720p']).optional(),
};

/** Every fal endpoint called here, with its input schema and what its result holds. */
export const falEndpoints = {
  'fal-ai/nano-banana-2': { input: z.strictObject(nanoBanana), output: 'images' },
  'fal-ai/nano-banana-2/edit': { input: z.strictObject({ ...nanoBanana, image_urls: urls.max(14) }), output: 'images' },
  'fal-ai/bytedance/seedream/v4.5/text-to-image': { input: z.strictObject(seedream), output: 'images' },
  'fal-ai/bytedance/seedream/v4.5/edit': { input: z.strictObject({ ...seedream, image_urls: urls.max(10) }), output: 'images' },
  'fal-ai/kling-video/v3/pro/text-to-video': { input: z.strictObject({ prompt: z.string().min(1), duration: klingV3Durations.optional(), aspect_ratio: klingRatios.optional(), ...klingCommon }), output: 'video' },
  'fal-ai/kling-video/v3/pro/image-to-video': {
    input: z.strictObject({ start_image_url: url, end_image_url: url.optional(), prompt: z.string().optional(), duration: klingV3Durations.optional(), ...klingCommon }),
    output: 'video',
  },
  'fal-ai/kling-video/v2.6/pro/text-to-video': { input: z.strictObject({ prompt: z.string().min(1), duration: z.enum(['5', '10']).optional(), aspect_ratio: klingRatios.optional(), ...klingCommon }), output: 'video' },
  'fal-ai/kling-video/v2.6/pro/image-to-video': {
    input: z.strictObject({ prompt: z.string().min(1), start_image_url: url, end_image_url: url.optional(), duration: z.enum(['5', '10']).optional(), ...klingCommon }),
    output: 'video',
  },
  'fal-ai/veo3.1': { input: veoText, output: 'video' },
  'fal-ai/veo3.1/image-to-video': { input: veoImage, output: 'video' },
  'fal-ai/veo3.1/first-last-frame-to-video': { input: veoFirstLast, output: 'video' },
  'fal-ai/veo3.1/reference-to-video': { input: veoReference, output: 'video' },
  'fal-ai/veo3.1/fast': { input: veoText, output: 'video' },
  'fal-ai/veo3.1/fast/image-to-video': { input: veoImage, output: 'video' },
  'fal-ai/veo3.1/fast/first-last-frame-to-video': { input: veoFirstLast, output: 'video' },
  'fal-ai/bytedance/seedance/v1.5/pro/text-to-video': { input: z.strictObject(seedanceCommon), output: 'video' },
  'fal-ai/bytedance/seedance/v1.5/pro/image-to-video': { input: z.strictObject({ ...seedanceCommon, image_url: url, end_image_url: url.optional() }), output: 'video' },
  'xai/grok-imagine-video/text-to-video': { input: z.strictObject({ ...grokCommon, aspect_ratio: z.enum(['16:9', '9:16', '1:1', '4:3', '3:2', '2:3', '3:4']).optional() }), output: 'video' },
  'xai/grok-imagine-video/image-to-video': { input: z.strictObject({ ...grokCommon, image_url: url, aspect_ratio: z.enum(['auto', '16:9', '9:16', '1:1', '4:3', '3:2', '2:3', '3:4']).optional() }), output: 'video' },
  // Wan 2.2 Animate Replace has no `prompt`: the motion video and the character image drive it.
  'fal-ai/wan/v2.2-14b/animate/replace': {
    input: z.strictObject({
      video_url: url,
      image_url: url,
      resolution: z.enum(['480p', '580p', '720p']).optional(),
      guidance_scale: z.number().optional(),
      num_inference_steps: z.number().int().optional(),
      seed,
      shift: z.number().optional(),
      enable_safety_checker: z.boolean().optional(),
      enable_output_safety_checker: z.boolean().optional(),
      video_quality: z.enum(['low', 'medium', 'high', 'maximum']).optional(),
      video_write_mode: z.enum(['fast', 'balanced', 'small']).optional(),
      return_frames_zip: z.boolean().optional(),
      use_turbo: z.boolean().optional(),
    }),
    output: 'video',
  },
  // InfiniteTalk: num_frames 41–721 (at 25 fps, at most 28.8 s of speech per request).
  'fal-ai/infinitalk': {
    input: z.strictObject({
      image_url: url,
      audio_url: url,
      prompt: z.string().min(1),
      num_frames: z.number().int().min(41).max(721).optional(),
      resolution: z.enum(['480p', '720p']).optional(),
      seed,
      acceleration: z.enum(['none', 'regular', 'high']).optional(),
    }),
    output: 'video',
  },
} as const;

export type FalEndpointId = keyof typeof falEndpoints;
export type FalInput<E extends FalEndpointId> = z.input<(typeof falEndpoints)[E]['input']>;

export function isFalEndpointId(id: string): id is FalEndpointId {
  return Object.hasOwn(falEndpoints, id);
}

/** InfiniteTalk's frame cap and rate: the longest speech one lipsync request can carry. */
export const infinitalkMaxFrames = 721;
export const infinitalkMinFrames = 41;
export const infinitalkFps = 25;
