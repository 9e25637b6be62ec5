// BytePlus ModelArk ("Ark") requests and answers for Seedream 4.5 (images) and Seedance 1.5 pro
// (videos). Read 2026-11-25; what each source does and does not establish:
//  - ByteDance's own Python SDK, byteplus-python-sdk-v2 3.0.63 (pip download --no-deps), package
//    byteplussdkarkruntime:
//    · _constants.py: BASE_URL "https://ark.ap-southeast.bytepluses.com/api/v3"; _client.py: the key
//      is read from ARK_API_KEY and sent as `Authorization: Bearer {api_key}`; DEFAULT_TIMEOUT 600 s.
//    · resources/images/images.py: Images.generate posts "/images/generations" with the body fields
//      model, prompt, image (str | list[str]), response_format, size, seed, guidance_scale, watermark,
//      optimize_prompt(_options), sequential_image_generation (its docstring: auto | disabled, "disabled":
//      the model generates only a single image; + _options.max_images), tools,
//      output_format, layer_decomposition, stream; types/images/images.py: ImagesResponse { model,
//      data: [{ url, b64_json, size, output_format? }], error { message, code }, usage, created_at }.
//    · resources/content_generation/tasks.py: Tasks.create posts "/contents/generations/tasks" with
//      model, content, callback_url, return_last_frame, service_tier, execution_expires_after,
//      generate_audio, draft, camera_fixed, watermark, seed, resolution, ratio, duration (int), frames,
//      … as top-level fields → ContentGenerationTaskID { id }; Tasks.get is GET
//      "/contents/generations/tasks/{task_id}" → ContentGenerationTask { id, model, status ("running,
//      failed, queued, succeeded, cancelled"), error { message, code }, content { video_url,
//      last_frame_url }, duration, ratio, resolution, … }; Tasks.delete is DELETE on the same path.
//      types/content_generation/create_task_content_param.py: content items { type: "text", text } and
//      { type: "image_url", image_url: { url }, role } (role is a free string in the SDK).
//    · _base_client.py _make_status_error: an HTTP error body's `error` object (or the body itself)
//      carries code, message, param, type; 429 and >= 500 (and 408, 409) are what the SDK retries.
//  - BytePlus's own pages (docs.byteplus.com, ModelArk): 1520757 "Video Generation API" (POST
//    https://ark.ap-southeast.bytepluses.com/api/v3/contents/generations/tasks; `model` is a Model ID
//    or an Endpoint ID; content items text / image_url; parameters may also be appended to the text as
//    `--flag value`; this route sends the SDK's top-level fields instead, never text flags);
//    1299023 "Common error codes" (400 InvalidParameter, MissingParameter, SensitiveContentDetected*,
//    Input*/Output*SensitiveContentDetected; 401 AuthenticationError; 403 AccountOverdueError,
//    AccessDenied; 404 InvalidEndpoint.NotFound; 429 TooManyRequests (RateLimitExceeded.*)); 1330310
//    "Model list" (Seedance 1.5 and Seedream served in ap-southeast-1; the rows with the model ids were
//    not in what could be read).
//  - BytePlus's own ark-cli (github.com/byteplus-sdk/ark-cli, v1.0.19, read 2026-12-02:
//    skills/arkcli-models/references/arkcli-models-scenario-table.md and skills/arkcli-gen/references/
//    arkcli-gen.md): the complete model ids of Seedance 2.0 and 2.0 fast, dreamina-seedance-2-0-260128
//    and dreamina-seedance-2-0-fast-260128 ("--model must be in the complete <name>-<primary_version>
//    form"), sent to the same task API with top-level ratio, resolution, duration and generate_audio.
//  - NOT from BytePlus's text (third-party docs and resellers agree; they are no authority):
//    · Seedance 2.0's 4–15 s (fal's pages state the same for the model: kinds/video/models-transcribed.ts);
//    · the model ids seedream-4-5-251128 and seedance-1-5-pro-251215: both are configurable
//      (ARK_SEEDREAM_MODEL, ARK_SEEDANCE_MODEL, e.g. an ep-… Endpoint ID) for that reason;
//    · Seedream 4.5's size rule "WxH with a total of 2560×1440 (3686400) to 4096×4096 pixels" (the
//      same bound fal states for the model; fal's route sends the same three sizes);
//    · Seedance 1.5 pro's ratio set 16:9 | 4:3 | 1:1 | 3:4 | 9:16 | 21:9 (| adaptive), duration 4–12 s;
//    · the `role` values of image items (first_frame / last_frame / reference_image: the SDK requires
//      a role but does not list its values, and BytePlus's page read shows only a role-less first
//      frame for another model), so this route is text-to-video only: video jobs with image inputs
//      never fail over to it (catalog `accepts`);
//    · resolutions: resellers disagree on 1080p for 1.5 pro (one says "1080p is not yet supported"),
//      so this route takes 480p and 720p only;
//    · DELETE cancels a `queued` task (it becomes `cancelled`) and refuses a `running` one;
//    · the host of generated video URLs (BytePlus object storage under bytepluses.com; see outputs.ts).
//  - Quota: the 429 codes named in what could be read are rate limits (retried); a 429 or 403 whose code
//    names a quota or an overdue account (QuotaExceeded, AccountOverdueError) is our account's (the
//    exact quota code was not in what could be read: matched by name).
import { z } from 'zod';

/** The catalog's ids (see above: from third-party docs; ARK_SEEDREAM_MODEL / ARK_SEEDANCE_MODEL override). */
export const arkSeedreamModelId = 'seedream-4-5-251128';
export const arkSeedanceModelId = 'seedance-1-5-pro-251215';

/** Seedream 4.5 sizes for our aspect ratios, each within 2560×1440 … 4096×4096 pixels in total. */
export const arkSeedreamSizes = { '1:1': '2048x2048', '16:9': '2560x1440', '9:16': '1440x2560' } as const;
export const arkSeedreamAspectRatios = ['1:1', '16:9', '9:16'] as const satisfies readonly (keyof typeof arkSeedreamSizes)[];
const arkSeedreamMinPixels = 2560 * 1440;
const arkSeedreamMaxPixels = 4096 * 4096;

const seedreamSize = z.string().refine((s) => {
  const m = /^(\d+)x(\d+)$/.exec(s);
  if (!m) return false;
  const px = Number(m[1]) * Number(m[2]);
  return px >= arkSeedreamMinPixels && px <= arkSeedreamMaxPixels;
}, 'size must be WxH with 2560x1440 to 4096x4096 pixels in total');

/** POST {base}/api/v3/images/generations: the fields this route sends (a subset of the SDK's). */
export const arkImageGenerationRequest = z.strictObject({
  model: z.string().min(1),
  prompt: z.string().min(1),
  image: z.union([z.url(), z.array(z.url()).min(1).max(14)]).optional(),
  size: seedreamSize,
  seed: z.number().int().optional(),
  sequential_image_generation: z.enum(['auto', 'disabled']).optional(),
  response_format: z.enum(['url', 'b64_json']).optional(),
  watermark: z.boolean().optional(),
});
export type ArkImageGenerationRequest = z.input<typeof arkImageGenerationRequest>;

export const arkSeedanceRatios = ['16:9', '4:3', '1:1', '3:4', '9:16', '21:9'] as const;
/** What this route takes (see above: 1080p left out). */
export const arkSeedanceResolutions = ['480p', '720p'] as const;

/** The content items this route sends: the prompt only (image items: see above). */
const arkTaskContentItem = z.strictObject({ type: z.literal('text'), text: z.string().min(1) });

/** POST {base}/api/v3/contents/generations/tasks: the fields this route sends (a subset of the SDK's). */
export const arkVideoTaskRequest = z.strictObject({
  model: z.string().min(1),
  content: z.array(arkTaskContentItem).length(1),
  ratio: z.enum(arkSeedanceRatios).optional(),
  // 4–12 s for Seedance 1.5 pro, 4–15 s for 2.0: each route's catalog `accepts` narrows it per model.
  duration: z.number().int().min(4).max(15).optional(),
  resolution: z.enum(arkSeedanceResolutions).optional(),
  generate_audio: z.boolean().optional(),
  watermark: z.boolean().optional(),
  seed: z.number().int().optional(),
});
export type ArkVideoTaskRequest = z.input<typeof arkVideoTaskRequest>;

/** An error as Ark answers it: in an HTTP error body's `error`, or in a failed task's `error`. */
export interface ArkError {
  code?: string;
  message?: string;
  param?: string;
  type?: string;
}

export interface ArkImagesResponse {
  model?: string;
  created_at?: number;
  data?: { url?: string; b64_json?: string; size?: string }[];
  error?: ArkError;
}

type ArkTaskStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';

export interface ArkTaskCreated {
  id: string;
}

export interface ArkTask {
  id: string;
  model?: string;
  /** The SDK's statuses; resellers also report `expired` (queued past execution_expires_after). */
  status: ArkTaskStatus | 'expired' | string;
  error?: ArkError | null;
  content?: { video_url?: string; last_frame_url?: string };
  duration?: number;
  ratio?: string;
  resolution?: string;
  created_at?: number;
  updated_at?: number;
}
