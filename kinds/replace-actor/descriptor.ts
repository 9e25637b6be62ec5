// The replace-actor kind: the person in a video replaced by the one in an image (uploads or https
// URLs), one video per job; its record is the video record.
import { z } from 'zod';
import { replaceActorModel } from './models.js';
import { aspectRatio3, creationResult, defineKind, httpsUrlField, idField, webhookFieldRules, webhookRequestFields } from '../define.js';
import { videoRecord } from '../video/descriptor.js';

export const replaceActorKind = defineKind({
  kind: 'replace_actor',
  base: '/v1/replace-actors/generations',
  createPath: '/v1/replace-actors/generations',
  list: 'replace-actors',
  idPrefix: 'rpl',
  tag: 'Replace actors',
  models: [replaceActorModel],
  controls: [],
  outputs: { formats: ['mp4'], many: false },
  body: z
    .strictObject({
      project_id: idField,
      image_url: httpsUrlField.optional(),
      video_url: httpsUrlField.optional(),
      image_file_id: idField.optional(),
      video_file_id: idField.optional(),
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
    }),
  // Both files, or both URLs (the body's rule): the job's two inputs, image then video.
  inputs: {
    image_file_id: { from: 'upload', type: 'image', role: 'image' },
    video_file_id: { from: 'upload', type: 'video', role: 'video' },
    image_url: { from: 'url', type: 'image', role: 'image' },
    video_url: { from: 'url', type: 'video', role: 'video' },
  },
  params: z.object({
    prompt: z.string(),
    aspect_ratio: z.string(),
    duration: z.number(),
    resolution: z.string().optional(),
    image_file_id: z.string().optional(),
    video_file_id: z.string().optional(),
    image_url: z.string().optional(),
    video_url: z.string().optional(),
  }),
  toParams: (b, c) => ({
    prompt: b.prompt ?? '',
    aspect_ratio: b.aspect_ratio,
    duration: b.duration,
    resolution: c.route.defaultResolution,
    image_file_id: b.image_file_id,
    video_file_id: b.video_file_id,
    image_url: b.image_url,
    video_url: b.video_url,
  }),
  record: videoRecord,
  createResult: creationResult,
  createdFields: () => ({}),
  // Rows written before the gateway stored a prompt for replace-actor jobs hold none, and no
  // migration backfilled it (params is jsonb): those rows show an empty prompt.
  present: (p, job) => ({ prompt: p.prompt ?? '', model: job.model, aspect_ratio: p.aspect_ratio, duration: p.duration, resolution: p.resolution! }),
  request(p, ctx) {
    if (ctx.inputs.length !== 2) ctx.unavailable('a replace-actor job needs an image and a video (files or URLs)');
    return { prompt: p.prompt, aspectRatio: p.aspect_ratio, duration: p.duration, resolution: p.resolution };
  },
});
