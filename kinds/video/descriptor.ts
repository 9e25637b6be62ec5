// The video kind: text (or a start frame, an end frame, reference images) to video, per-model rules
// from the catalog.
import { z } from 'zod';
import { catalogControls, routeFor } from '../../shared/catalog.js';
import { videoModels } from './models.js';
import { videoControls, videoInputRules, videoInputSchema } from './rules.js';
import { controlRecordFields, controlRequestFields, controlsOf, refusedControlRules } from '../../shared/generation-controls.js';
import { defineKind, idField, jobRecordSchema, promptField, webhookFieldRules, webhookRequestFields } from '../define.js';

/**
 * The per-model rules of a video create, as JSON Schema for the published document: one branch per
 * model, its aspect ratios, durations and resolutions (the gateway's `prepare` checks them, the
 * kind's `routeChecks`), the controls no route of it takes, and its input rules (./rules.ts, the
 * quote's refusals stated beside their schema).
 */
function videoModelRules(): Record<string, unknown>[] {
  return videoModels.map((model) => {
    const route = routeFor(model)!;
    const d = route.durations;
    const duration = !d ? false : 'values' in d ? { enum: [...d.values] } : { type: 'integer', minimum: d.min, maximum: d.max };
    const inputs = videoInputSchema(route);
    return {
      title: model,
      properties: {
        model: { const: model },
        aspect_ratio: { enum: [...route.aspectRatios] },
        duration,
        resolution: { enum: [...(route.resolutions ?? [])] },
        ...inputs.properties,
        ...refusedControlRules(videoControls, catalogControls(route)),
      },
      ...(inputs.dependentSchemas ? { dependentSchemas: inputs.dependentSchemas } : {}),
      ...(inputs.anyOf ? { anyOf: inputs.anyOf } : {}),
      ...(inputs.allOf ? { allOf: inputs.allOf } : {}),
    };
  });
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
  controls: videoControls,
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
  requestRules: videoInputRules,
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
