// OpenAI Images: the body of POST /v1/images/generations. Source: openai-node
// (github.com/openai/openai-node) src/resources/images.ts, `ImageGenerateParamsNonStreaming`, and the
// API reference (developers.openai.com/api/reference/resources/images/methods/generate). A subset of
// the SDK type's fields, which contracts/sdk.ts checks against the pinned `openai` package at compile
// time; a strict schema makes the fake refuse any other.
//
// Error answers are `{ error: { message, type, param, code } }`. Two matter here: 400
// `moderation_blocked` (the safety system refused the prompt: final) and 429 `insufficient_quota`
// (the account is out of credit: final, unlike a rate-limit 429 which is retried).
import { z } from 'zod';

export const openaiImageSizes = ['auto', '1024x1024', '1536x1024', '1024x1536', '256x256', '512x512', '1792x1024', '1024x1792'] as const;

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
  size: z.enum(openaiImageSizes).nullish(),
  // The non-streaming call (ImageGenerateParamsNonStreaming): this service reads one JSON answer.
  stream: z.literal(false).nullish(),
  style: z.enum(['vivid', 'natural']).nullish(),
  user: z.string().optional(),
});

export type OpenAIImageGenerateParams = z.input<typeof openaiImageGenerateParams>;

export interface OpenAIImagesResponse {
  created: number;
  data?: { b64_json?: string; url?: string; revised_prompt?: string }[];
  usage?: unknown;
}

export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}
