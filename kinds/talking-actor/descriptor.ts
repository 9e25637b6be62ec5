// The talking-actor kind: an actor speaks a script in a voice (the actor's default voice unless the
// request names one), one video per job; optionally over a background video (an upload or an https
// URL), which our side composites under the presenter once the provider's clip is stored
// (activities/providers/background.ts), whatever route served it.
import { z } from 'zod';
import { talkingActorModels } from './models.js';
import { MB } from '../../shared/media/type.js';
import { uploadLimits } from '../../shared/uploads.js';
import { aspectRatio3, creationResult, defineKind, httpsUrlField, idField, jobRecordSchema, webhookFieldRules, webhookRequestFields } from '../define.js';
import { NOT_BLANK_PATTERN } from '../../shared/text-patterns.js';

const unit = z.number().min(0).max(1);
const voiceOptions = z.object({
  speed: z.number().optional(),
  stability: z.number().optional(),
  similarity: z.number().optional(),
  style: z.number().optional(),
});

export const talkingActorKind = defineKind({
  kind: 'talking_actor',
  base: '/v1/talking-actors',
  createPath: '/v1/talking-actors/generate',
  list: 'talking-actors',
  idPrefix: 'tlk',
  tag: 'Talking actors',
  models: talkingActorModels,
  controls: [],
  outputs: { formats: ['mp4'], many: false },
  body: z
    .strictObject({
      project_id: idField,
      actor_id: idField,
      script: z.string().trim().min(1, 'must not be empty').max(5000, 'must be at most 5000 characters').meta({ pattern: NOT_BLANK_PATTERN }),
      voice_id: idField.optional(),
      model: z
        .enum(talkingActorModels)
        .optional()
        .describe(
          'the pipeline: talking-actor speaks with ElevenLabs Multilingual v2, talking-actor-v3 with Eleven v3 (more expressive, takes audio tags such as [whispers] in the script); both lipsync on fal. Default talking-actor',
        ),
      voice_options: z
        .strictObject({ speed: z.number().min(0.7).max(1.2).optional(), stability: unit.optional(), similarity: unit.optional(), style: unit.optional() })
        .optional(),
      aspect_ratio: aspectRatio3.default('9:16'),
      background_video_file_id: idField
        .optional()
        .describe(
          'a completed video upload of this workspace the actor talks over: it fills the frame (scaled and center-cropped to aspect_ratio), ' +
            'looped or cut to the length of the speech, its own sound dropped (the output carries the speech only); the presenter is shown ' +
            'in the lower right corner (picture in picture, about 42% of the frame each way). The price is the same as without a background. ' +
            'Absent (and no background_video_url): the presenter fills the frame',
        ),
      background_video_url: httpsUrlField
        .optional()
        .describe(
          `the background video as a public https URL, fetched when the job starts (a video of at most ${uploadLimits.remote.video / MB} MB); not with background_video_file_id`,
        ),
      ...webhookRequestFields,
    })
    .superRefine((b, ctx) => {
      if (b.background_video_file_id !== undefined && b.background_video_url !== undefined)
        ctx.addIssue({ code: 'custom', message: 'provide background_video_file_id or background_video_url, not both' });
    })
    // The same rule, for the document.
    .meta({ not: { required: ['background_video_file_id', 'background_video_url'] }, ...webhookFieldRules }),
  // The background, when given: composited on our side after the provider's clip is stored, so no provider sees it.
  inputs: {
    background_video_file_id: { from: 'upload', type: 'video', role: 'background' },
    background_video_url: { from: 'url', type: 'video', role: 'background' },
  },
  params: z.object({
    actor_id: z.string(),
    voice_id: z.string(),
    script: z.string(),
    voice_options: voiceOptions.optional(),
    aspect_ratio: z.string(),
    background_video_file_id: z.string().optional(),
    background_video_url: z.string().optional(),
  }),
  // voice_id: the request's, or the actor's default (the gateway's hook for this kind resolves it).
  toParams: (b, c) => ({
    actor_id: b.actor_id,
    voice_id: c.refs.voice_id!,
    script: b.script,
    voice_options: b.voice_options,
    aspect_ratio: b.aspect_ratio,
    background_video_file_id: b.background_video_file_id,
    background_video_url: b.background_video_url,
  }),
  record: jobRecordSchema({ actor_id: z.string(), voice_id: z.string(), script: z.string(), model: z.string() }),
  createResult: creationResult.extend({ voice_id: z.string() }),
  createdFields: (p) => ({ voice_id: p.voice_id }),
  present: (p, job) => ({ actor_id: p.actor_id, voice_id: p.voice_id, script: p.script, model: job.model }),
  async request(p, ctx) {
    const actor = await ctx.actor(p.actor_id);
    const voice = await ctx.voice(p.voice_id);
    if (!actor || !voice) return ctx.unavailable('the actor or voice of this job no longer exists');
    return {
      script: p.script,
      aspectRatio: p.aspect_ratio,
      voiceOptions: p.voice_options ?? undefined,
      voice,
      // The background was resolved (an upload still there, a URL fetched) before anything is paid, but stays ours.
      inputs: [...ctx.inputs.filter((i) => i.role !== 'background'), { role: 'actor_image', key: actor.referenceImageKey, contentType: 'image/png' }],
    };
  },
});
