// The job kinds as the gateway serves them: each kind's descriptor (kinds/<kind>/descriptor.ts: paths, create
// body, records, presentation) and what only the gateway does, inside the create transaction: one
// `prepare` for every kind, driven by the descriptor (its route checks, its upload inputs, its
// params), plus a database lookup for the kinds whose references need one (`lookups`).
import type { z } from 'zod';
import { ApiError } from '../../errors.js';
import type { Queryable } from '../../../db/index.js';
import type { Job } from '../../../db/schema.js';
import { uploadUnavailable } from '../../../db/repos/uploads.js';
import type { JobParamsOf } from '../../../shared/job-params.js';
import { createdAnswer, presentJob } from '../../../shared/job-record.js';
import { allowedDurations, durationAllowed, routeFor, type ModelRoute } from '../../../shared/catalog.js';
import { kindDescriptors, type Checked, type JobKind, type KindDescriptor, type KindOf, type RouteCheck } from '../../../kinds/index.js';

/** What a create request resolves to inside its transaction, before the route and price are added. */
interface Prepared<K extends JobKind> {
  model: string;
  route: ModelRoute;
  params: JobParamsOf<K>;
}

/** A kind's descriptor and the gateway's part of its create. */
export interface KindSpec<K extends JobKind = JobKind> extends KindDescriptor<K> {
  /**
   * Validates what the schema cannot (per-model rules, references) before the create charges.
   * `pending`: upload id values that stand for a pipeline step's output not made yet (checked by
   * the pipeline's own rules instead of as uploads).
   */
  prepare(body: unknown, db: Queryable, workspaceId: string, pending?: ReadonlySet<string>): Promise<Prepared<K>>;
  /** The create answer. */
  created(job: Job): Record<string, unknown>;
}

/** What only a database lookup can check of a kind's create body (its references): resolved values for its `toParams`. */
type Lookup<K extends JobKind> = (body: z.output<KindOf<K>['body']>, db: Queryable, workspaceId: string) => Promise<Record<string, string>>;

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

/** Per route-checked field: the body's value or the route's default, refused unless the route allows it. */
const routeChecks: { [F in RouteCheck]: (model: string, route: ModelRoute, value: unknown) => NonNullable<Checked[F]> } = {
  aspect_ratio(model, route, value) {
    const aspect = (value as string | undefined) ?? route.defaultAspectRatio;
    if (!route.aspectRatios.includes(aspect)) throw new ApiError(400, 'invalid_request', `aspect_ratio: ${model} supports ${route.aspectRatios.join(', ')}`);
    return aspect;
  },
  duration(model, route, value) {
    const duration = (value as number | undefined) ?? route.defaultDuration!;
    if (!durationAllowed(route, duration)) throw new ApiError(400, 'invalid_request', `duration: ${model} supports ${allowedDurations(route)} seconds`);
    return duration;
  },
  resolution(model, route, value) {
    const resolution = (value as string | undefined) ?? route.defaultResolution!;
    if (!route.resolutions?.includes(resolution)) throw new ApiError(400, 'invalid_request', `resolution: ${model} supports ${route.resolutions?.join(', ')}`);
    return resolution;
  },
};

/** The kinds whose create needs a database lookup beyond the catalog and its uploads (optional for a new kind). */
const lookups: { [K in JobKind]?: Lookup<K> } = {
  async talking_actor(b, db) {
    const actor = await db.selectFrom('actors').select(['id', 'default_voice_id']).where('id', '=', b.actor_id).executeTakeFirst();
    if (!actor) throw new ApiError(404, 'not_found', `actor ${b.actor_id} not found`);
    const voiceId = b.voice_id ?? actor.default_voice_id;
    if (!voiceId) {
      throw new ApiError(400, 'invalid_request', `voice_id: actor ${b.actor_id} has no default voice, so voice_id is required`);
    }
    const voice = await db.selectFrom('voices').select('id').where('id', '=', voiceId).executeTakeFirst();
    if (!voice) throw new ApiError(404, 'not_found', `voice ${voiceId} not found`);
    return { voice_id: voiceId };
  },
};

/**
 * Every kind's create checks, from its descriptor: the model's route (the body's model, or the
 * kind's one model), its `routeChecks` with their defaults, its upload inputs (in the workspace,
 * available, of their file type), then its lookup, if any.
 */
async function prepare(
  d: KindDescriptor,
  body: Record<string, unknown>,
  db: Queryable,
  workspaceId: string,
  pending: ReadonlySet<string> = new Set(),
): Promise<Prepared<JobKind>> {
  const model = (body.model as string | undefined) ?? d.models[0]!;
  const route = requireRoute(model);
  const checked: { -readonly [F in keyof Checked]: Checked[F] } = { route, refs: {} };
  for (const field of d.routeChecks ?? []) Object.assign(checked, { [field]: routeChecks[field](model, route, body[field]) });
  for (const [key, input] of Object.entries(d.inputs ?? {})) {
    const value = body[key];
    if (input.from !== 'upload' || !value) continue;
    if (Array.isArray(value)) {
      for (const [i, id] of (value as string[]).entries()) if (!pending.has(id)) await requireUpload(db, workspaceId, id, `${key}.${i}`, input.type);
    } else if (!pending.has(value as string)) {
      await requireUpload(db, workspaceId, value as string, key, input.type);
    }
  }
  const lookup = lookups[d.kind as JobKind] as Lookup<JobKind> | undefined;
  if (lookup) checked.refs = await lookup(body as never, db, workspaceId);
  return { model, route, params: d.toParams(body, checked) as JobParamsOf<JobKind> };
}

/** Every kind, in document order (kinds/). */
export const kinds: readonly KindSpec[] = kindDescriptors.map((d) => ({
  ...(d as KindDescriptor),
  kind: d.kind,
  prepare: (body, db, workspaceId, pending) => prepare(d as KindDescriptor, body as Record<string, unknown>, db, workspaceId, pending),
  created: createdAnswer,
}));

export function kindSpec(kind: JobKind): KindSpec {
  return kinds.find((k) => k.kind === kind)!;
}

export { presentJob };
