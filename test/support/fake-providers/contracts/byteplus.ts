// The fake BytePlus ModelArk ("Ark") server's own request contract, transcribed apart from the
// adapter's (providers/byteplus/contract.ts) so that the two cannot share a mistake: a field
// the adapter misspells, or a value it sends that Ark does not take, is refused here.
//
// Fields and JSON types: ByteDance's Python SDK byteplus-python-sdk-v2 3.0.63 (PyPI wheel,
// byteplussdkarkruntime), read for this file:
//  - resources/images/images.py, Images.generate: the body of POST /images/generations is model (str,
//    required), prompt (str, required), image (str | list[str]), response_format (str), size (str), seed
//    (int), guidance_scale (float), watermark (bool), optimize_prompt (bool), optimize_prompt_options,
//    sequential_image_generation (str; its docstring: "auto" | "disabled"),
//    sequential_image_generation_options ({ max_images: int }, types/images/images.py), tools (list),
//    output_format (str), layer_decomposition (bool), stream (bool).
//  - resources/content_generation/tasks.py, Tasks.create: the body of POST /contents/generations/tasks
//    is model (str, required), content (list, required), safety_identifier, callback_url (str),
//    return_last_frame (bool), service_tier (str), execution_expires_after (int), priority (int),
//    generate_audio, draft, camera_fixed, watermark (bool), seed (int), resolution, ratio (str), duration
//    (int), frames (int), output_format, omni_reference_task_type (str).
//  - types/content_generation/create_task_content_param.py: a content item is { type: "text", text },
//    { type: "image_url" | "audio_url" | "video_url", <type>: { url }, role: str } or
//    { type: "draft_task", draft_task: { id } }.
// Values the SDK leaves as plain strings, from what could be read (third-party API references of the
// same endpoint, no authority; the adapter's contract read other pages): response_format url | b64_json;
// ratio 16:9 | 4:3 | 1:1 | 3:4 | 9:16 | 21:9 | adaptive; resolution 480p | 720p | 1080p; duration 2–12 s
// (docs.acedata.cloud and doc.starrise.tech Seedance references); Seedream 4.5's size "WxH" of 2560×1440
// to 4096×4096 pixels in total (fal's Seedream 4.5 input schema states the same bound for the model).
// Seedance 2.0 (the ids dreamina-seedance-2-0-260128 and dreamina-seedance-2-0-fast-260128, from BytePlus's
// own ark-cli, github.com/byteplus-sdk/ark-cli skills/arkcli-models/references/arkcli-models-scenario-table.md)
// takes 4–15 s (or -1, the model's choice), as third-party Ark references and fal's pages for the model state.
import { z } from 'zod';

const url = z.string().min(1);

export const arkFakeImageRequest = z.strictObject({
  model: z.string().min(1),
  prompt: z.string().min(1),
  image: z.union([url, z.array(url).min(1)]).optional(),
  response_format: z.enum(['url', 'b64_json']).optional(),
  size: z
    .string()
    .regex(/^\d+x\d+$/)
    .refine((s) => {
      const [w, h] = s.split('x').map(Number) as [number, number];
      return w * h >= 2560 * 1440 && w * h <= 4096 * 4096;
    }, 'size must be WxH with 2560x1440 to 4096x4096 pixels in total')
    .optional(),
  seed: z.number().int().optional(),
  guidance_scale: z.number().optional(),
  watermark: z.boolean().optional(),
  optimize_prompt: z.boolean().optional(),
  optimize_prompt_options: z.record(z.string(), z.unknown()).optional(),
  sequential_image_generation: z.enum(['auto', 'disabled']).optional(),
  sequential_image_generation_options: z.strictObject({ max_images: z.number().int().optional() }).optional(),
  tools: z.array(z.unknown()).optional(),
  output_format: z.string().optional(),
  layer_decomposition: z.boolean().optional(),
  stream: z.boolean().optional(),
});

const mediaItem = <T extends 'image_url' | 'audio_url' | 'video_url'>(type: T) =>
  z.strictObject({ type: z.literal(type), [type]: z.strictObject({ url }), role: z.string().optional() } as {
    type: z.ZodLiteral<T>;
    role: z.ZodOptional<z.ZodString>;
  } & Record<T, z.ZodObject<{ url: typeof url }>>);

export const arkFakeContentItem = z.union([
  z.strictObject({ type: z.literal('text'), text: z.string().min(1) }),
  mediaItem('image_url'),
  mediaItem('audio_url'),
  mediaItem('video_url'),
  z.strictObject({ type: z.literal('draft_task'), draft_task: z.strictObject({ id: z.string().min(1) }) }),
]);

export const arkFakeVideoTaskRequest = z.strictObject({
  model: z.string().min(1),
  content: z.array(arkFakeContentItem).min(1),
  safety_identifier: z.string().optional(),
  callback_url: z.string().optional(),
  return_last_frame: z.boolean().optional(),
  service_tier: z.string().optional(),
  execution_expires_after: z.number().int().optional(),
  priority: z.number().int().optional(),
  generate_audio: z.boolean().optional(),
  draft: z.boolean().optional(),
  camera_fixed: z.boolean().optional(),
  watermark: z.boolean().optional(),
  seed: z.number().int().optional(),
  resolution: z.enum(['480p', '720p', '1080p']).optional(),
  ratio: z.enum(['16:9', '4:3', '1:1', '3:4', '9:16', '21:9', 'adaptive']).optional(),
  // 2–12 s, or 4–15 s (or -1) for Seedance 2.0: arkFakeDurationRefusal checks the range per model.
  duration: z.number().int().optional(),
  frames: z.number().int().optional(),
  output_format: z.string().optional(),
  omni_reference_task_type: z.string().optional(),
});

/** Model ids the fake serves: Seedream 4.5 and Seedance 1.5 pro (third-party Seedance references list seedance-1-5-pro-251215), or an Endpoint ID "ep-…" (docs.byteplus.com ModelArk 1520757: `model` is a Model ID or an Endpoint ID). */
export const arkFakeModelIds = ['seedream-4-5-251128', 'seedance-1-5-pro-251215', 'dreamina-seedance-2-0-260128', 'dreamina-seedance-2-0-fast-260128'];

/** Why a task's duration is out of its model's range, or undefined. */
export function arkFakeDurationRefusal(model: string, duration: number | undefined): string | undefined {
  if (duration === undefined) return undefined;
  const seedance2 = model.startsWith('dreamina-seedance-2-0');
  if (seedance2 && duration === -1) return undefined;
  const [min, max] = seedance2 ? [4, 15] : [2, 12];
  return duration >= min && duration <= max ? undefined : `duration must be between ${min} and ${max} seconds for ${model}`;
}
export const arkFakeEndpointId = /^ep-[0-9A-Za-z-]+$/;
