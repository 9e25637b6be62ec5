// xAI video generation request and answers, as the provider publishes them. Source: xAI's REST API
// reference (docs.x.ai, "Video Generation" and "Deferred Requests", read 2026-11). xAI publishes no
// TypeScript SDK on npm (its SDK is Python, over gRPC), so there is no provider type to check this
// transcription against at compile time. Only the fields listed here exist; a strict schema makes the
// fake refuse any other, and the adapter's body is checked against the same type with `satisfies`.
//
// Answers of GET /v1/videos/{request_id}: 202 while pending (xAI's OpenAPI: `202: content?: never`;
// its SDK: "pending requests answer 202, with or without a JSON body"), 200 with `status: "done"` and
// `video`, or 200 with `status: "failed"` and `error: { code, message }`; `progress` (0–100) may be
// present on any of them. `expired` is answered once a result is no longer kept.
import { z } from 'zod';

export const xaiVideoAspectRatios = ['16:9', '9:16', '1:1', '4:3', '3:4', '3:2', '2:3'] as const;
export const xaiVideoResolutions = ['480p', '720p'] as const;

export const xaiVideoGenerationRequest = z.strictObject({
  model: z.string().optional(),
  prompt: z.string().min(1).max(4096),
  /** Seconds, 1–15 (default 8 in the reference; we always send one). */
  duration: z.number().int().min(1).max(15).optional(),
  aspect_ratio: z.enum(xaiVideoAspectRatios).optional(),
  resolution: z.enum(xaiVideoResolutions).optional(),
  /** Image-to-video: the first frame. */
  image: z.strictObject({ url: z.string().min(1), type: z.literal('image_url').optional() }).optional(),
  /** Reference-to-video (not used here); cannot be combined with `image`. */
  reference_images: z.array(z.strictObject({ url: z.string().min(1) })).optional(),
  user: z.string().optional(),
});

export type XaiVideoGenerationRequest = z.input<typeof xaiVideoGenerationRequest>;

export interface XaiDeferredVideoResponse {
  status: 'pending' | 'done' | 'failed' | 'expired';
  progress?: number;
  model?: string;
  video?: { url: string; duration?: number; respect_moderation?: boolean };
  error?: { code: string; message: string };
}
