// The fake xAI server's own request contract for POST /v1/videos/generations, transcribed apart from
// the adapter's (providers/xai/contract.ts) so that the two cannot share a mistake.
//  - Fields, from xAI's Python SDK xai-sdk 1.21.0 (PyPI wheel): xai_sdk/proto/v6/video_pb2.pyi,
//    GenerateVideoRequest { prompt, image, model, duration (int), video, aspect_ratio, resolution,
//    reference_images, storage_options, reference_audios, generate_audio (bool), last_frame, keyframes },
//    and xai_sdk/types/video.py: VideoAspectRatio "1:1" | "16:9" | "9:16" | "4:3" | "3:4" | "3:2" |
//    "2:3", VideoResolution "480p" | "720p" | "1080p" (what a model renders may be narrower).
//  - The SDK speaks gRPC, where an image is ImageUrlContent { image_url, file_id, detail }. The REST body
//    spells it { url, type?: "image_url" } (xAI's REST reference, docs.x.ai "Video Generation", and the
//    XAIImageObject of xAI's OpenAPI document as Comfy Router republishes it, docs.comfy.org
//    comfy-router/models/xai/grok-imagine-video: `url` required, `type` "image_url"), as are
//    reference images; a video is { url }. The prompt is at most 4,096 characters and the duration
//    1–15 s (the same two pages), and `user` names the end user (the same OpenAPI copy).
import { z } from 'zod';

const imageObject = z.strictObject({ url: z.string().min(1), type: z.literal('image_url').optional() });

export const xaiFakeVideoGenerationRequest = z.strictObject({
  prompt: z.string().min(1).max(4096),
  model: z.string().min(1).optional(),
  duration: z.number().int().min(1).max(15).optional(),
  aspect_ratio: z.enum(['1:1', '16:9', '9:16', '4:3', '3:4', '3:2', '2:3']).optional(),
  resolution: z.enum(['480p', '720p', '1080p']).optional(),
  image: imageObject.optional(),
  video: z.strictObject({ url: z.string().min(1) }).optional(),
  reference_images: z.array(imageObject).min(1).optional(),
  last_frame: imageObject.optional(),
  generate_audio: z.boolean().optional(),
  user: z.string().optional(),
});
