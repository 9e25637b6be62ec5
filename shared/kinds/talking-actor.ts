// The talking-actor kind: an actor speaks a script in a voice (the actor's default voice unless the
// request names one), one video per job.
import { z } from 'zod';
import { talkingActorModel } from '../catalog.js';
import { aspectRatio3, creationResult, defineKind, idField, jobRecordSchema, NOT_BLANK_PATTERN, webhookFieldRules, webhookRequestFields } from './fields.js';

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
  workflowType: 'talkingActorGeneration',
  tag: 'Talking actors',
  models: [talkingActorModel],
  body: z
    .strictObject({
      project_id: idField,
      actor_id: idField,
      script: z.string().trim().min(1, 'must not be empty').max(5000, 'must be at most 5000 characters').meta({ pattern: NOT_BLANK_PATTERN }),
      voice_id: idField.optional(),
      /** Optional: the kind has one fixed pipeline name. */
      model: z.literal(talkingActorModel).optional(),
      voice_options: z
        .strictObject({ speed: z.number().min(0.7).max(1.2).optional(), stability: unit.optional(), similarity: unit.optional(), style: unit.optional() })
        .optional(),
      aspect_ratio: aspectRatio3.default('9:16'),
      ...webhookRequestFields,
    })
    .meta(webhookFieldRules),
  params: z.object({ actor_id: z.string(), voice_id: z.string(), script: z.string(), voice_options: voiceOptions.optional(), aspect_ratio: z.string() }),
  // voice_id: the request's, or the actor's default (the gateway's hook for this kind resolves it).
  toParams: (b, c) => ({ actor_id: b.actor_id, voice_id: c.refs.voice_id!, script: b.script, voice_options: b.voice_options, aspect_ratio: b.aspect_ratio }),
  record: jobRecordSchema({ actor_id: z.string(), voice_id: z.string(), script: z.string() }),
  createResult: creationResult.extend({ voice_id: z.string() }),
  createdFields: (p) => ({ voice_id: p.voice_id }),
  present: (p) => ({ actor_id: p.actor_id, voice_id: p.voice_id, script: p.script }),
  async request(p, ctx) {
    const actor = await ctx.actor(p.actor_id);
    const voice = await ctx.voice(p.voice_id);
    if (!actor || !voice) return ctx.unavailable('the actor or voice of this job no longer exists');
    return {
      script: p.script,
      aspectRatio: p.aspect_ratio,
      voiceOptions: p.voice_options ?? undefined,
      voice,
      inputs: [...ctx.inputs, { role: 'actor_image', key: actor.referenceImageKey, contentType: 'image/png' }],
    };
  },
});
