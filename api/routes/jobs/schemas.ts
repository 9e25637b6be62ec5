// The job endpoints' schemas: one create body per kind (validation and the published document), the
// job records they answer, and the status query. Stored params are shared/job-params.ts.
import { z } from 'zod';
import { NOT_BLANK_PATTERN, PUBLIC_HTTPS_URL_PATTERN } from '../../validate.js';
import { imageModels, replaceActorModel, routeFor, talkingActorModel, videoModels, type ModelRoute } from '../../../shared/catalog.js';
import { webhookFieldRules, webhookRequestFields } from '../../webhooks.js';

const id = z.string().min(1).max(100);
const prompt = z.string().trim().min(1, 'must not be empty').max(4000, 'must be at most 4000 characters').meta({ pattern: NOT_BLANK_PATTERN });
const aspectRatio3 = z.enum(['1:1', '9:16', '16:9']);
const httpsUrl = z
  .string()
  .max(2048)
  .refine((v) => URL.canParse(v) && new URL(v).protocol === 'https:', 'must be an https URL')
  .meta({ pattern: PUBLIC_HTTPS_URL_PATTERN });

export const imageCreateSchema = z.strictObject({
  project_id: id,
  prompt,
  model: z.enum(imageModels),
  aspect_ratio: aspectRatio3,
  count: z.number().int('must be an integer').min(1).max(4),
  ...webhookRequestFields,
}).meta(webhookFieldRules);

/**
 * The per-model rules that `prepare` and `requestRefusal` enforce from the catalog, as JSON Schema
 * for the published document: one branch per model (aspect ratios, durations, resolutions,
 * reference images, no reference images beside a start frame, the durations a reference endpoint
 * allows, no end frame without a first frame).
 */
function videoModelRules(): Record<string, unknown>[] {
  return videoModels.map((model) => {
    const route = routeFor(model)!;
    const d = route.durations;
    const duration = !d ? false : 'values' in d ? { enum: [...d.values] } : { type: 'integer', minimum: d.min, maximum: d.max };
    return {
      title: model,
      properties: {
        model: { const: model },
        aspect_ratio: { enum: [...route.aspectRatios] },
        duration,
        resolution: { enum: [...(route.resolutions ?? [])] },
        ...(route.maxReferenceImages !== undefined ? { reference_file_ids: { maxItems: route.maxReferenceImages } } : {}),
      },
      dependentSchemas: { start_frame_file_id: { properties: { reference_file_ids: { maxItems: 0 } } }, ...referenceAndEndFrameRules(route) },
    };
  });
}

/** `requestRefusal`'s reference-duration and end-frame rules (shared/catalog.ts), as JSON Schema. */
function referenceAndEndFrameRules(route: ModelRoute): Record<string, unknown> {
  // The first frame: the start frame, or a lone reference image where there is no reference endpoint.
  const firstFrame = [{ required: ['start_frame_file_id'] }, ...(route.secondaryModelIds?.reference ? [] : [{ required: ['reference_file_ids'], properties: { reference_file_ids: { minItems: 1, maxItems: 1 } } }])];
  return {
    ...(route.referenceDurations ? { reference_file_ids: { anyOf: [{ properties: { reference_file_ids: { maxItems: 0 } } }, { properties: { duration: { enum: [...route.referenceDurations] } } }] } } : {}),
    end_frame_file_id: route.endFrame === false ? false : { anyOf: firstFrame },
  };
}

export const videoCreateSchema = z
  .strictObject({
    project_id: id,
    prompt,
    model: z.enum(videoModels),
    aspect_ratio: z.string().optional(),
    duration: z.number().positive().optional(),
    resolution: z.string().optional(),
    reference_file_ids: z.array(id).max(4).optional(),
    start_frame_file_id: id.optional(),
    end_frame_file_id: id.optional(),
    ...webhookRequestFields,
  })
  .meta({ oneOf: videoModelRules(), ...webhookFieldRules });

export const replaceActorCreateSchema = z
  .strictObject({
    project_id: id,
    image_url: httpsUrl.optional(),
    video_url: httpsUrl.optional(),
    image_file_id: id.optional(),
    video_file_id: id.optional(),
    prompt: z.string().trim().max(4000, 'must be at most 4000 characters').optional(),
    /** Optional: the kind has one fixed model name. */
    model: z.literal(replaceActorModel).optional(),
    duration: z.number().min(3).max(30).default(30),
    aspect_ratio: aspectRatio3.default('9:16'),
    ...webhookRequestFields,
  })
  .superRefine((b, ctx) => {
    const files = b.image_file_id !== undefined || b.video_file_id !== undefined;
    const urls = b.image_url !== undefined || b.video_url !== undefined;
    const bothFiles = b.image_file_id !== undefined && b.video_file_id !== undefined;
    const bothUrls = b.image_url !== undefined && b.video_url !== undefined;
    if ((files && urls) || !(bothFiles || bothUrls)) {
      ctx.addIssue({ code: 'custom', message: 'provide either image_file_id and video_file_id, or image_url and video_url' });
    }
  })
  // The same rule, for the document.
  .meta({
    oneOf: [
      { required: ['image_file_id', 'video_file_id'], properties: { image_url: false, video_url: false } },
      { required: ['image_url', 'video_url'], properties: { image_file_id: false, video_file_id: false } },
    ],
    ...webhookFieldRules,
  });

const unit = z.number().min(0).max(1);
export const talkingActorCreateSchema = z.strictObject({
  project_id: id,
  actor_id: id,
  script: z.string().trim().min(1, 'must not be empty').max(5000, 'must be at most 5000 characters').meta({ pattern: NOT_BLANK_PATTERN }),
  voice_id: id.optional(),
  /** Optional: the kind has one fixed pipeline name. */
  model: z.literal(talkingActorModel).optional(),
  voice_options: z
    .strictObject({ speed: z.number().min(0.7).max(1.2).optional(), stability: unit.optional(), similarity: unit.optional(), style: unit.optional() })
    .optional(),
  aspect_ratio: aspectRatio3.default('9:16'),
  ...webhookRequestFields,
}).meta(webhookFieldRules);

export const statusQuery = z.strictObject({
  live: z
    .enum(['true', 'false'])
    .optional()
    .describe("true: ask the job's workflow for its progress now (shared per job, cached a second) instead of the stored progress"),
});
export { imageJobSchema, videoJobSchema, talkingActorJobSchema, type Progress } from '../../../shared/job-record.js';
export const creationResult = z.object({ id: z.string(), status: z.literal('pending') });
export const talkingCreationResult = creationResult.extend({ voice_id: z.string() });
export const urlResultSchema = z.object({ id: z.string(), url: z.string(), urls: z.array(z.string()).optional() });

export type { ImageJobRecord, VideoJobRecord, TalkingActorJobRecord, JobRecord } from '../../../shared/job-record.js';
