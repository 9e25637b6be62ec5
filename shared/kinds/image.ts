// The image kind: text to image, one to four images per job.
import { z } from 'zod';
import { imageModels } from '../catalog.js';
import { aspectRatio3, defineKind, idField, jobRecordSchema, promptField, webhookFieldRules, webhookRequestFields } from './fields.js';

const record = jobRecordSchema({ prompt: z.string(), model: z.string(), aspect_ratio: z.string(), count: z.number().int() });

export const imageKind = defineKind({
  kind: 'image',
  base: '/v1/images',
  createPath: '/v1/images/generate',
  list: 'images',
  idPrefix: 'img',
  workflowType: 'imageGeneration',
  tag: 'Images',
  models: imageModels,
  body: z
    .strictObject({
      project_id: idField,
      prompt: promptField,
      model: z.enum(imageModels),
      aspect_ratio: aspectRatio3,
      count: z.number().int('must be an integer').min(1).max(4),
      ...webhookRequestFields,
    })
    .meta(webhookFieldRules),
  params: z.object({ prompt: z.string(), aspect_ratio: z.string(), count: z.number().int() }),
  toParams: (b) => ({ prompt: b.prompt, aspect_ratio: b.aspect_ratio, count: b.count }),
  record,
  createResult: record,
  present: (p, job) => ({ prompt: p.prompt, model: job.model, aspect_ratio: p.aspect_ratio, count: p.count }),
  request: (p) => ({ prompt: p.prompt, aspectRatio: p.aspect_ratio, count: p.count }),
});
