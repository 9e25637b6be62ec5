// The four job kinds as the gateway serves them: paths, create body, what the create transaction
// checks and stores (`prepare`: per-model rules and references → the kind's typed params), and
// `presentJob` (shared/job-record.ts, which the worker's webhook payloads use too).
import type { z } from 'zod';
import { ApiError } from '../../errors.js';
import type { Queryable } from '../../../db/index.js';
import type { Job } from '../../../db/schema.js';
import { uploadUnavailable } from '../../../db/repos/uploads.js';
import type { JobKind } from '../../../shared/job-model.js';
import { typedParams, type JobParamsOf } from '../../../shared/job-params.js';
import { presentJob } from '../../../shared/job-record.js';
import { allowedDurations, durationAllowed, imageModels, replaceActorModel, routeFor, talkingActorModel, videoModels, type ModelRoute } from '../../../shared/catalog.js';
import {
  creationResult,
  imageCreateSchema,
  imageJobSchema,
  replaceActorCreateSchema,
  talkingActorCreateSchema,
  talkingActorJobSchema,
  talkingCreationResult,
  videoCreateSchema,
  videoJobSchema,
} from './schemas.js';

/** What a create request resolves to inside its transaction, before the route and price are added. */
export interface Prepared<K extends JobKind> {
  model: string;
  route: ModelRoute;
  params: JobParamsOf<K>;
}

export interface KindSpec<K extends JobKind = JobKind, B extends z.ZodType = z.ZodType> {
  kind: K;
  /** Base of status/URL/cancel paths. */
  base: string;
  createPath: string;
  tag: string;
  /** Prefix of the kind's job ids. */
  idPrefix: string;
  models: readonly string[];
  body: B;
  record: z.ZodType;
  createResult: z.ZodType;
  /** Validates what the schema cannot (per-model rules, references) before the create charges. */
  prepare(body: z.infer<B>, db: Queryable, workspaceId: string): Promise<Prepared<K>>;
  /** The create answer. */
  created(job: Job): Record<string, unknown>;
}

const defineKind = <K extends JobKind, B extends z.ZodType>(spec: KindSpec<K, B>): KindSpec<K, B> => spec;

function requireRoute(model: string): ModelRoute {
  const route = routeFor(model);
  if (!route) throw new ApiError(400, 'invalid_model', `model ${model} is not supported`);
  return route;
}

async function requireUpload(db: Queryable, workspaceId: string, uploadId: string, field: string, fileType: 'image' | 'video'): Promise<void> {
  const up = await db
    .selectFrom('file_uploads')
    .select(['file_type', 'status', 'expires_at'])
    .where('id', '=', uploadId)
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirst();
  if (!up) throw new ApiError(404, 'not_found', `${field}: file upload ${uploadId} not found`);
  const unavailable = uploadUnavailable(up);
  if (unavailable === 'expired') throw new ApiError(400, 'upload_unavailable', `${field}: file upload ${uploadId} expired at ${up.expires_at?.toISOString()}; upload the file again`);
  if (unavailable === 'deleted') throw new ApiError(400, 'upload_unavailable', `${field}: file upload ${uploadId} was deleted; upload the file again`);
  if (unavailable) throw new ApiError(400, 'invalid_request', `${field}: file upload ${uploadId} is not completed`);
  if (up.file_type !== fileType) throw new ApiError(400, 'invalid_request', `${field}: file upload ${uploadId} is a ${up.file_type}, a ${fileType} is required`);
}

export const imageKind = defineKind({
  kind: 'image',
  base: '/v1/images',
  createPath: '/v1/images/generate',
  tag: 'Images',
  idPrefix: 'img',
  models: imageModels,
  body: imageCreateSchema,
  record: imageJobSchema,
  createResult: imageJobSchema,
  async prepare(b) {
    const route = requireRoute(b.model);
    return { model: b.model, route, params: { prompt: b.prompt, aspect_ratio: b.aspect_ratio, count: b.count } };
  },
  created: (job) => presentJob(job, { progress: false }),
});

export const videoKind = defineKind({
  kind: 'video',
  base: '/v1/videos',
  createPath: '/v1/videos/generate',
  tag: 'Videos',
  idPrefix: 'vid',
  models: videoModels,
  body: videoCreateSchema,
  record: videoJobSchema,
  createResult: videoJobSchema,
  async prepare(b, db, workspaceId) {
    const route = requireRoute(b.model);
    const aspect = b.aspect_ratio ?? route.defaultAspectRatio;
    if (!route.aspectRatios.includes(aspect)) {
      throw new ApiError(400, 'invalid_request', `aspect_ratio: ${b.model} supports ${route.aspectRatios.join(', ')}`);
    }
    const duration = b.duration ?? route.defaultDuration!;
    if (!durationAllowed(route, duration)) {
      throw new ApiError(400, 'invalid_request', `duration: ${b.model} supports ${allowedDurations(route)} seconds`);
    }
    const resolution = b.resolution ?? route.defaultResolution!;
    if (!route.resolutions?.includes(resolution)) {
      throw new ApiError(400, 'invalid_request', `resolution: ${b.model} supports ${route.resolutions?.join(', ')}`);
    }
    if (b.start_frame_file_id) await requireUpload(db, workspaceId, b.start_frame_file_id, 'start_frame_file_id', 'image');
    if (b.end_frame_file_id) await requireUpload(db, workspaceId, b.end_frame_file_id, 'end_frame_file_id', 'image');
    for (const [i, ref] of (b.reference_file_ids ?? []).entries()) await requireUpload(db, workspaceId, ref, `reference_file_ids.${i}`, 'image');
    return {
      model: b.model,
      route,
      params: {
        prompt: b.prompt,
        aspect_ratio: aspect,
        duration,
        resolution,
        reference_file_ids: b.reference_file_ids,
        start_frame_file_id: b.start_frame_file_id,
        end_frame_file_id: b.end_frame_file_id,
      },
    };
  },
  created: (job) => presentJob(job, { progress: false }),
});

export const replaceActorKind = defineKind({
  kind: 'replace_actor',
  base: '/v1/replace-actors/generations',
  createPath: '/v1/replace-actors/generations',
  tag: 'Replace actors',
  idPrefix: 'rpl',
  models: [replaceActorModel],
  body: replaceActorCreateSchema,
  record: videoJobSchema,
  createResult: creationResult,
  async prepare(b, db, workspaceId) {
    const route = requireRoute(replaceActorModel);
    if (b.image_file_id) await requireUpload(db, workspaceId, b.image_file_id, 'image_file_id', 'image');
    if (b.video_file_id) await requireUpload(db, workspaceId, b.video_file_id, 'video_file_id', 'video');
    return {
      model: replaceActorModel,
      route,
      params: {
        prompt: b.prompt ?? '',
        aspect_ratio: b.aspect_ratio,
        duration: b.duration,
        resolution: route.defaultResolution,
        image_file_id: b.image_file_id,
        video_file_id: b.video_file_id,
        image_url: b.image_url,
        video_url: b.video_url,
      },
    };
  },
  created: (job) => ({ id: job.id, status: 'pending' }),
});

export const talkingActorKind = defineKind({
  kind: 'talking_actor',
  base: '/v1/talking-actors',
  createPath: '/v1/talking-actors/generate',
  tag: 'Talking actors',
  idPrefix: 'tlk',
  models: [talkingActorModel],
  body: talkingActorCreateSchema,
  record: talkingActorJobSchema,
  createResult: talkingCreationResult,
  async prepare(b, db) {
    const route = requireRoute(talkingActorModel);
    const actor = await db.selectFrom('actors').select(['id', 'default_voice_id']).where('id', '=', b.actor_id).executeTakeFirst();
    if (!actor) throw new ApiError(404, 'not_found', `actor ${b.actor_id} not found`);
    const voiceId = b.voice_id ?? actor.default_voice_id;
    if (!voiceId) {
      throw new ApiError(400, 'invalid_request', `voice_id: actor ${b.actor_id} has no default voice, so voice_id is required`);
    }
    const voice = await db.selectFrom('voices').select('id').where('id', '=', voiceId).executeTakeFirst();
    if (!voice) throw new ApiError(404, 'not_found', `voice ${voiceId} not found`);
    return {
      model: talkingActorModel,
      route,
      params: { actor_id: b.actor_id, voice_id: voiceId, script: b.script, voice_options: b.voice_options, aspect_ratio: b.aspect_ratio },
    };
  },
  created(job) {
    const t = typedParams(job);
    return { id: job.id, status: 'pending', voice_id: t.kind === 'talking_actor' ? t.params.voice_id : undefined };
  },
});

/** Every kind, in document order. */
export const kinds: readonly KindSpec[] = [imageKind, videoKind, replaceActorKind, talkingActorKind];

export function kindSpec(kind: JobKind): KindSpec {
  return kinds.find((k) => k.kind === kind)!;
}

export { presentJob };
