// The four job kinds as the gateway serves them: each kind's descriptor (shared/kinds: paths, create
// body, records, presentation) and what only the gateway does, inside the create transaction
// (`prepare`: per-model rules and references → the kind's typed params).
import type { z } from 'zod';
import { ApiError } from '../../errors.js';
import type { Queryable } from '../../../db/index.js';
import type { Job } from '../../../db/schema.js';
import { uploadUnavailable } from '../../../db/repos/uploads.js';
import type { JobParamsOf } from '../../../shared/job-params.js';
import { createdAnswer, presentJob } from '../../../shared/job-record.js';
import { allowedDurations, durationAllowed, replaceActorModel, routeFor, talkingActorModel, type ModelRoute } from '../../../shared/catalog.js';
import { kindDescriptors, type JobKind, type KindDescriptor, type KindOf } from '../../../shared/kinds/index.js';

/** What a create request resolves to inside its transaction, before the route and price are added. */
export interface Prepared<K extends JobKind> {
  model: string;
  route: ModelRoute;
  params: JobParamsOf<K>;
}

/** A kind's descriptor and the gateway's part of its create. */
export interface KindSpec<K extends JobKind = JobKind> extends KindDescriptor<K> {
  /** Validates what the schema cannot (per-model rules, references) before the create charges. */
  prepare(body: unknown, db: Queryable, workspaceId: string): Promise<Prepared<K>>;
  /** The create answer. */
  created(job: Job): Record<string, unknown>;
}

/** A kind's `prepare`, typed by its descriptor's create body. */
type Prepare<K extends JobKind> = (body: z.output<KindOf<K>['body']>, db: Queryable, workspaceId: string) => Promise<Prepared<K>>;

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
  if (unavailable === 'expired')
    throw new ApiError(400, 'upload_unavailable', `${field}: file upload ${uploadId} expired at ${up.expires_at?.toISOString()}; upload the file again`);
  if (unavailable === 'deleted') throw new ApiError(400, 'upload_unavailable', `${field}: file upload ${uploadId} was deleted; upload the file again`);
  if (unavailable) throw new ApiError(400, 'invalid_request', `${field}: file upload ${uploadId} is not completed`);
  if (up.file_type !== fileType)
    throw new ApiError(400, 'invalid_request', `${field}: file upload ${uploadId} is a ${up.file_type}, a ${fileType} is required`);
}

/** Per kind, what its create checks and stores: a new kind without one does not compile. */
const prepares: { [K in JobKind]: Prepare<K> } = {
  async image(b) {
    const route = requireRoute(b.model);
    return { model: b.model, route, params: { prompt: b.prompt, aspect_ratio: b.aspect_ratio, count: b.count } };
  },

  async video(b, db, workspaceId) {
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

  async replace_actor(b, db, workspaceId) {
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

  async talking_actor(b, db) {
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
};

/** Every kind, in document order (shared/kinds). */
export const kinds: readonly KindSpec[] = kindDescriptors.map((d) => ({
  ...(d as KindDescriptor),
  kind: d.kind,
  prepare: prepares[d.kind] as KindSpec['prepare'],
  created: createdAnswer,
}));

export function kindSpec(kind: JobKind): KindSpec {
  return kinds.find((k) => k.kind === kind)!;
}

export { presentJob };
