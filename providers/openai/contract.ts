// OpenAI Images: the body of POST /v1/images/generations. Source: openai-node
// (github.com/openai/openai-node) src/resources/images.ts, `ImageGenerateParamsNonStreaming`, and the
// API reference (developers.openai.com/api/reference/resources/images/methods/generate). A subset of
// the SDK type's fields, which activities/providers/sdk-types.ts checks against the pinned `openai` package at compile
// time; a strict schema makes the fake refuse any other.
//
// Error answers are `{ error: { message, type, param, code } }`. Two matter here: 400
// `moderation_blocked` (the safety system refused the prompt: final) and 429 `insufficient_quota`
// (the account is out of credit: final, unlike a rate-limit 429 which is retried).
import { z } from 'zod';

const openaiImageSizes = ['auto', '1024x1024', '1536x1024', '1024x1536', '256x256', '512x512', '1792x1024', '1024x1792'] as const;

/**
 * gpt-image-2's arbitrary sizes, "WIDTHxHEIGHT" (openai-node resources/images.d.ts, `size` of
 * ImageGenerateParams, read 2026-11-27): width and height divisible by 16, an aspect ratio between 1:3
 * and 3:1, at most 3840x2160 (above 2560x1440 is "experimental"), and within "the model's current pixel
 * and edge limits". The SDK names no numbers for those limits; the ones here (longest edge 3840, 655,360
 * to 8,294,400 pixels, the latter being 3840×2160) are the ones OpenAI-compatible hosts transcribe from
 * OpenAI's image generation guide (no OpenAI page itself was reachable from this build's sources).
 */
const gptImage2Limits = { multipleOf: 16, maxEdge: 3840, maxRatio: 3, minPixels: 655_360, maxPixels: 8_294_400 } as const;

/** Why OpenAI refuses `size` for gpt-image-2, or undefined when it is a size the model takes. */
export function gptImage2SizeProblem(size: string): string | undefined {
  const m = /^(\d+)x(\d+)$/.exec(size);
  if (!m) return `size must be WIDTHxHEIGHT, got ${size}`;
  const [w, h] = [Number(m[1]), Number(m[2])];
  const l = gptImage2Limits;
  if (w % l.multipleOf || h % l.multipleOf) return `width and height must be multiples of ${l.multipleOf}`;
  if (Math.max(w, h) > l.maxEdge) return `the longest edge is at most ${l.maxEdge}`;
  if (Math.max(w, h) / Math.min(w, h) > l.maxRatio) return `the aspect ratio must be between 1:${l.maxRatio} and ${l.maxRatio}:1`;
  if (w * h < l.minPixels || w * h > l.maxPixels) return `the size must hold ${l.minPixels} to ${l.maxPixels} pixels`;
  return undefined;
}

export const openaiImageGenerateParams = z.strictObject({
  prompt: z.string().min(1).max(32000),
  background: z.enum(['transparent', 'opaque', 'auto']).nullish(),
  model: z.string().nullish(),
  moderation: z.enum(['low', 'auto']).nullish(),
  n: z.number().int().min(1).max(10).nullish(),
  output_compression: z.number().int().min(0).max(100).nullish(),
  output_format: z.enum(['png', 'jpeg', 'webp']).nullish(),
  partial_images: z.number().int().min(0).max(3).nullish(),
  quality: z.enum(['standard', 'hd', 'low', 'medium', 'high', 'auto']).nullish(),
  response_format: z.enum(['url', 'b64_json']).nullish(),
  // A named size, or WIDTHxHEIGHT for the models with arbitrary sizes (gptImage2SizeProblem says which ones fit).
  size: z.union([z.enum(openaiImageSizes), z.string().regex(/^\d+x\d+$/)]).nullish(),
  // The non-streaming call (ImageGenerateParamsNonStreaming): this service reads one JSON answer.
  stream: z.literal(false).nullish(),
  style: z.enum(['vivid', 'natural']).nullish(),
  user: z.string().optional(),
});

export type OpenAIImageGenerateParams = z.input<typeof openaiImageGenerateParams>;
