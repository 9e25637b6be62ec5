// The video kind: text (or a start frame, an end frame, reference images) to video, per-model rules
// from the catalog.
import { z } from 'zod';
import { catalogControls, routeFor, type ModelRoute } from '../../shared/catalog.js';
import { videoModels } from './models.js';
import { controlRecordFields, controlRequestFields, controlsOf, refusedControlRules, type GenerationControl } from '../../shared/generation-controls.js';
import { defineKind, idField, jobRecordSchema, promptField, webhookFieldRules, webhookRequestFields } from '../define.js';

/** The generation controls a video create takes (a route that does not take one refuses it). */
const controls = ['seed', 'negative_prompt', 'audio'] as const satisfies readonly GenerationControl[];

/**
 * The per-model rules that the gateway's `prepare` and `requestRefusal` enforce from the catalog, as
 * JSON Schema for the published document: one branch per model (aspect ratios, durations,
 * resolutions, reference images, no reference images beside a start frame, the durations a
 * reference endpoint allows, no end frame without a first frame, a first frame where the model is image
 * to video only).
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
        ...(route.imageInputs === false ? { reference_file_ids: { maxItems: 0 }, start_frame_file_id: false, end_frame_file_id: false } : {}),
        ...refusedControlRules(controls, catalogControls(route)),
      },
      dependentSchemas: { start_frame_file_id: { properties: { reference_file_ids: { maxItems: 0 } } }, ...referenceAndEndFrameRules(route) },
      // An image-to-video-only model needs its first frame: the start frame, or one reference image.
      ...(route.startFrame === 'required'
        ? {
            anyOf: [
              { required: ['start_frame_file_id'] },
              { required: ['reference_file_ids'], properties: { reference_file_ids: { minItems: 1, maxItems: 1 } } },
            ],
          }
        : {}),
    };
  });
}

/** `requestRefusal`'s reference-duration and end-frame rules (shared/catalog.ts), as JSON Schema. */
function referenceAndEndFrameRules(route: ModelRoute): Record<string, unknown> {
  // The first frame: the start frame, or a lone reference image where there is no reference endpoint.
  const firstFrame = [
    { required: ['start_frame_file_id'] },
    ...(route.secondaryModelIds?.reference ? [] : [{ required: ['reference_file_ids'], properties: { reference_file_ids: { minItems: 1, maxItems: 1 } } }]),
  ];
  const noReferences = { properties: { reference_file_ids: { maxItems: 0 } } };
  const referenceRules = [
    ...(route.referenceDurations ? [{ anyOf: [noReferences, { properties: { duration: { enum: [...route.referenceDurations] } } }] }] : []),
    // The reference endpoint's fewer controls (veo-3.1: no seed or negative_prompt with reference images).
    ...(route.referenceControls && route.secondaryModelIds?.reference
      ? [{ anyOf: [noReferences, { properties: refusedControlRules(controls, route.referenceControls) }] }]
      : []),
  ];
  return {
    ...(referenceRules.length ? { reference_file_ids: referenceRules.length === 1 ? referenceRules[0] : { allOf: referenceRules } } : {}),
    end_frame_file_id: route.endFrame === false ? false : { anyOf: firstFrame },
  };
}

const videoFields = { prompt: z.string(), model: z.string(), aspect_ratio: z.string(), duration: z.number(), resolution: z.string() };
/** The record of replace-actor jobs: a video's, without the generation controls. */
export const videoRecord = jobRecordSchema(videoFields);
const record = jobRecordSchema({ ...videoFields, ...controlRecordFields });

export const videoKind = defineKind({
  kind: 'video',
  base: '/v1/videos',
  createPath: '/v1/videos/generate',
  list: 'videos',
  idPrefix: 'vid',
  tag: 'Videos',
  models: videoModels,
  controls,
  outputs: { formats: ['mp4'], many: false },
  body: z
    .strictObject({
      project_id: idField,
      prompt: promptField,
      model: z.enum(videoModels),
      aspect_ratio: z.string().optional(),
      duration: z.number().positive().optional(),
      resolution: z.string().optional(),
      reference_file_ids: z.array(idField).max(4).optional(),
      start_frame_file_id: idField.optional(),
      end_frame_file_id: idField.optional(),
      ...controlRequestFields,
      ...webhookRequestFields,
    })
    .meta({ oneOf: videoModelRules(), ...webhookFieldRules }),
  inputs: {
    start_frame_file_id: { from: 'upload', type: 'image', role: 'start_frame' },
    end_frame_file_id: { from: 'upload', type: 'image', role: 'end_frame' },
    reference_file_ids: { from: 'upload', type: 'image', role: 'reference' },
  },
  params: z.object({
    prompt: z.string(),
    aspect_ratio: z.string(),
    duration: z.number(),
    resolution: z.string(),
    reference_file_ids: z.array(z.string()).optional(),
    start_frame_file_id: z.string().optional(),
    end_frame_file_id: z.string().optional(),
    seed: z.number().int().optional(),
    negative_prompt: z.string().optional(),
    audio: z.boolean().optional(),
  }),
  routeChecks: ['aspect_ratio', 'duration', 'resolution'],
  toParams: (b, c) => ({
    prompt: b.prompt,
    aspect_ratio: c.aspect_ratio!,
    duration: c.duration!,
    resolution: c.resolution!,
    reference_file_ids: b.reference_file_ids,
    start_frame_file_id: b.start_frame_file_id,
    end_frame_file_id: b.end_frame_file_id,
    ...controlsOf(b),
  }),
  record,
  createResult: record,
  present: (p, job) => ({
    prompt: p.prompt,
    model: job.model,
    aspect_ratio: p.aspect_ratio,
    duration: p.duration,
    resolution: p.resolution,
    ...controlsOf(p),
  }),
  request: (p) => ({
    prompt: p.prompt,
    aspectRatio: p.aspect_ratio,
    duration: p.duration,
    resolution: p.resolution,
    ...(p.seed !== undefined ? { seed: p.seed } : {}),
    ...(p.negative_prompt !== undefined ? { negativePrompt: p.negative_prompt } : {}),
    ...(p.audio !== undefined ? { audio: p.audio } : {}),
  }),
});
