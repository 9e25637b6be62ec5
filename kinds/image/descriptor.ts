// The image kind: text to image, one to four images per job.
import { z } from 'zod';
import { catalogControls, routeFor } from '../../shared/catalog.js';
import { imageModels } from './models.js';
import { controlRecordFields, controlRequestFields, controlsOf, refusedControlRules, type GenerationControl } from '../../shared/generation-controls.js';
import {
  imageOutputFormats,
  imageTargetOf,
  outputFormatOf,
  outputFormatRecordFields,
  outputFormatRequestFields,
  outputQualityRefusal,
  outputQualityRule,
} from '../../shared/output-format.js';
import { aspectRatio3, defineKind, idField, jobRecordSchema, promptField, webhookFieldRules, webhookRequestFields } from '../define.js';

/** The generation controls an image create takes (a route that does not take one refuses it). */
const controls = ['seed'] as const satisfies readonly GenerationControl[];

const record = jobRecordSchema({
  prompt: z.string(),
  model: z.string(),
  aspect_ratio: z.string(),
  count: z.number().int(),
  seed: controlRecordFields.seed,
  ...outputFormatRecordFields,
});

export const imageKind = defineKind({
  kind: 'image',
  base: '/v1/images',
  createPath: '/v1/images/generate',
  list: 'images',
  idPrefix: 'img',
  tag: 'Images',
  models: imageModels,
  controls,
  outputs: { formats: imageOutputFormats, many: true },
  body: z
    .strictObject({
      project_id: idField,
      prompt: promptField,
      model: z.enum(imageModels),
      aspect_ratio: aspectRatio3,
      count: z.number().int('must be an integer').min(1).max(4),
      seed: controlRequestFields.seed,
      ...outputFormatRequestFields,
      ...webhookRequestFields,
    })
    .superRefine((b, ctx) => {
      const refused = outputQualityRefusal(b);
      if (refused) ctx.addIssue({ code: 'custom', path: ['output_quality'], message: refused });
    })
    // For the document: per model, the controls none of its routes takes (a seed for gpt-image).
    .meta({
      oneOf: imageModels.map((model) => ({
        title: model,
        properties: { model: { const: model }, ...refusedControlRules(controls, catalogControls(routeFor(model)!)) },
      })),
      ...webhookFieldRules,
      dependentSchemas: outputQualityRule,
    }),
  params: z.object({
    prompt: z.string(),
    aspect_ratio: z.string(),
    count: z.number().int(),
    seed: z.number().int().optional(),
    output_format: z.enum(['jpeg', 'webp']).optional(),
    output_quality: z.number().int().optional(),
  }),
  toParams: (b) => ({ prompt: b.prompt, aspect_ratio: b.aspect_ratio, count: b.count, ...controlsOf(b), ...outputFormatOf(b) }),
  record,
  createResult: record,
  present: (p, job) => ({ prompt: p.prompt, model: job.model, aspect_ratio: p.aspect_ratio, count: p.count, ...controlsOf(p), ...outputFormatOf(p) }),
  request: (p) => ({
    prompt: p.prompt,
    aspectRatio: p.aspect_ratio,
    count: p.count,
    ...(p.seed !== undefined ? { seed: p.seed } : {}),
    ...(p.output_format !== undefined ? { imageTarget: imageTargetOf(p) } : {}),
  }),
});
