// The four job kinds' endpoints — create, status, URL and cancel — served by one generic router
// over a table of kind specs, so every kind shares the same create path:
//   validate → one transaction (project 403, references 404, conditional debit 402, job row +
//   ledger charge) → start the workflow after commit (a failed start is retried by the reconciler).
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import type { AppDeps } from '../app.js';
import { authOf, type Auth } from '../auth.js';
import { jsonBody } from '../body.js';
import { completeIdempotencyInTx, IDEMPOTENCY_NOTE, idempotent } from '../idempotency.js';
import { dryRun, dryRunQuery, dryRunResultSchema } from '../dry-run.js';
import { ApiError } from '../errors.js';
import type { ApiMetrics } from '../metrics.js';
import type { Operation } from '../operations.js';
import { NOT_BLANK_PATTERN, parseOr400 } from '../validate.js';
import type { Database, Tx } from '../../db/index.js';
import type { Job, JobKind } from '../../db/schema.js';
import { newId } from '../../db/ids.js';
import * as jobsRepo from '../../db/repos/jobs.js';
import { failJobAndRemoveMedia } from '../../activities/job-media.js';
import { outputsGoneReason } from '../../activities/retention.js';
import {
  allowedDurations,
  durationAllowed,
  requestRefusal,
  imageModels,
  priceFor,
  replaceActorModel,
  routeFor,
  talkingActorModel,
  videoModels,
  type ModelRoute,
} from '../../activities/providers/catalog.js';
import { providerFor } from '../../activities/providers/routing.js';
import { cancelJobWorkflow, createLiveProgress, jobToStart, startJobWorkflow } from '../../workflows/client.js';

// ------------------------------------------------------------------ schemas

const id = z.string().min(1).max(100);
const prompt = z.string().trim().min(1, 'must not be empty').max(4000, 'must be at most 4000 characters').meta({ pattern: NOT_BLANK_PATTERN });
const aspectRatio3 = z.enum(['1:1', '9:16', '16:9']);
const httpsUrl = z
  .string()
  .max(2048)
  .refine((v) => URL.canParse(v) && new URL(v).protocol === 'https:', 'must be an https URL');

export const imageCreateSchema = z.strictObject({
  project_id: id,
  prompt,
  model: z.enum(imageModels),
  aspect_ratio: aspectRatio3,
  count: z.number().int('must be an integer').min(1).max(4),
});

/**
 * The per-model rules that `prepare` and `requestRefusal` enforce from the catalog, as JSON Schema
 * for the published document: one branch per model (aspect ratios, durations, resolutions,
 * reference images, no reference images beside a start frame).
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
      },
      dependentSchemas: { start_frame_file_id: { properties: { reference_file_ids: { maxItems: 0 } } } },
    };
  });
}

export const videoCreateSchema = z
  .strictObject({
    project_id: id,
    prompt,
    model: z.enum(videoModels),
    aspect_ratio: z.string().optional(),
    duration: z.number().positive().optional(),
    resolution: z.string().optional(),
    reference_file_ids: z.array(id).max(4).optional(),
    start_frame_file_id: id.optional(),
    end_frame_file_id: id.optional(),
  })
  .meta({ oneOf: videoModelRules() });

export const replaceActorCreateSchema = z
  .strictObject({
    project_id: id,
    image_url: httpsUrl.optional(),
    video_url: httpsUrl.optional(),
    image_file_id: id.optional(),
    video_file_id: id.optional(),
    prompt: z.string().trim().max(4000, 'must be at most 4000 characters').optional(),
    /** Optional: the kind has one fixed model name. */
    model: z.literal(replaceActorModel).optional(),
    duration: z.number().min(3).max(30).default(30),
    aspect_ratio: aspectRatio3.default('9:16'),
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
  });

const unit = z.number().min(0).max(1);
export const talkingActorCreateSchema = z.strictObject({
  project_id: id,
  actor_id: id,
  script: z.string().trim().min(1, 'must not be empty').max(5000, 'must be at most 5000 characters').meta({ pattern: NOT_BLANK_PATTERN }),
  voice_id: id.optional(),
  /** Optional: the kind has one fixed pipeline name. */
  model: z.literal(talkingActorModel).optional(),
  voice_options: z
    .strictObject({ speed: z.number().min(0.7).max(1.2).optional(), stability: unit.optional(), similarity: unit.optional(), style: unit.optional() })
    .optional(),
  aspect_ratio: aspectRatio3.default('9:16'),
});

const jobError = z.object({ code: z.string(), message: z.string() }).nullable();
const progressSchema = z.object({
  phase: z.string(),
  attempt: z.number().int(),
  percent: z.number().nullable(),
  queue_position: z.number().int().nullable(),
});
type Progress = z.infer<typeof progressSchema>;
export const statusQuery = z.strictObject({
  live: z
    .enum(['true', 'false'])
    .optional()
    .describe("true: ask the job's workflow for its progress now (shared per job, cached a second) instead of the stored progress"),
});
/** How long one live `progress` query answer serves every `?live=true` read of the job. */
const LIVE_PROGRESS_CACHE_MS = 1_000;
const status = z.enum(['pending', 'generating', 'completed', 'failed']);
/** Present only when the local renderer (no provider key set) serves the job: its media is a stand-in. */
/** Set once the job's outputs were deleted (DELETE /v1/{kind}/{id}): the record stays, its URL answers 410. */
const outputsRemovedAt = z.number().int().optional().describe('when the outputs were deleted (ms since the Unix epoch); absent while they are kept');
const servedBy = z.literal('local').optional().describe('"local" when the local renderer served this job (its media is a placeholder, not a real model output); absent otherwise');

export const imageJobSchema = z.object({
  id: z.string(),
  project_id: z.string(),
  prompt: z.string(),
  model: z.string(),
  aspect_ratio: z.string(),
  count: z.number().int(),
  status,
  error: jobError,
  created_at: z.number().int(),
  updated_at: z.number().int(),
  progress: progressSchema.optional(),
  provider: servedBy,
  outputs_removed_at: outputsRemovedAt,
});
export const videoJobSchema = z.object({
  id: z.string(),
  project_id: z.string(),
  prompt: z.string(),
  model: z.string(),
  aspect_ratio: z.string(),
  duration: z.number(),
  resolution: z.string(),
  status,
  error: jobError,
  created_at: z.number().int(),
  updated_at: z.number().int(),
  progress: progressSchema.optional(),
  provider: servedBy,
  outputs_removed_at: outputsRemovedAt,
});
export const talkingActorJobSchema = z.object({
  id: z.string(),
  project_id: z.string(),
  actor_id: z.string(),
  voice_id: z.string(),
  script: z.string(),
  status,
  error: jobError,
  created_at: z.number().int(),
  updated_at: z.number().int(),
  progress: progressSchema.optional(),
  provider: servedBy,
  outputs_removed_at: outputsRemovedAt,
});
const creationResult = z.object({ id: z.string(), status: z.literal('pending') });
const talkingCreationResult = creationResult.extend({ voice_id: z.string() });
export const urlResultSchema = z.object({ id: z.string(), url: z.string(), urls: z.array(z.string()).optional() });

// ------------------------------------------------------------------ kind specs

interface Prepared {
  model: string;
  route: ModelRoute;
  params: Record<string, unknown>;
}

interface KindSpec {
  kind: JobKind;
  /** Base of status/URL/cancel paths. */
  base: string;
  createPath: string;
  tag: string;
  models: readonly string[];
  body: z.ZodType;
  record: z.ZodType;
  createResult: z.ZodType;
  /** Validates what the schema cannot (per-model rules, references) inside the create transaction. */
  prepare(body: any, tx: Tx, workspaceId: string): Promise<Prepared>;
  present(job: Job): Record<string, unknown>;
  created(job: Job): Record<string, unknown>;
}

const ms = (d: Date) => d.getTime();
const common = (job: Job) => ({
  status: job.status,
  error: job.error ?? null,
  created_at: ms(job.created_at),
  updated_at: ms(job.updated_at),
  ...((job.params as { provider?: string }).provider === 'local' ? { provider: 'local' as const } : {}),
  ...(job.outputs_removed_at ? { outputs_removed_at: ms(job.outputs_removed_at) } : {}),
});

function requireRoute(model: string): ModelRoute {
  const route = routeFor(model);
  if (!route) throw new ApiError(400, 'invalid_model', `model ${model} is not supported`);
  return route;
}

async function requireUpload(tx: Tx, workspaceId: string, uploadId: string, field: string, fileType: 'image' | 'video'): Promise<void> {
  const up = await tx
    .selectFrom('file_uploads')
    .select(['file_type', 'status'])
    .where('id', '=', uploadId)
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirst();
  if (!up) throw new ApiError(404, 'not_found', `${field}: file upload ${uploadId} not found`);
  if (up.status !== 'completed') throw new ApiError(400, 'invalid_request', `${field}: file upload ${uploadId} is not completed`);
  if (up.file_type !== fileType) throw new ApiError(400, 'invalid_request', `${field}: file upload ${uploadId} is a ${up.file_type}, a ${fileType} is required`);
}

const videoLike = (job: Job) => {
  const p = job.params as Record<string, any>;
  return {
    id: job.id,
    project_id: job.project_id,
    prompt: p.prompt ?? '',
    model: job.model,
    aspect_ratio: p.aspect_ratio,
    duration: p.duration,
    resolution: p.resolution,
    ...common(job),
  };
};

const kinds: KindSpec[] = [
  {
    kind: 'image',
    base: '/v1/images',
    createPath: '/v1/images/generate',
    tag: 'Images',
    models: imageModels,
    body: imageCreateSchema,
    record: imageJobSchema,
    createResult: imageJobSchema,
    async prepare(b: z.infer<typeof imageCreateSchema>) {
      const route = requireRoute(b.model);
      return { model: b.model, route, params: { prompt: b.prompt, aspect_ratio: b.aspect_ratio, count: b.count } };
    },
    present(job) {
      const p = job.params as Record<string, any>;
      return { id: job.id, project_id: job.project_id, prompt: p.prompt, model: job.model, aspect_ratio: p.aspect_ratio, count: p.count, ...common(job) };
    },
    created(job) {
      return this.present(job);
    },
  },
  {
    kind: 'video',
    base: '/v1/videos',
    createPath: '/v1/videos/generate',
    tag: 'Videos',
    models: videoModels,
    body: videoCreateSchema,
    record: videoJobSchema,
    createResult: videoJobSchema,
    async prepare(b: z.infer<typeof videoCreateSchema>, tx, workspaceId) {
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
      if (b.start_frame_file_id) await requireUpload(tx, workspaceId, b.start_frame_file_id, 'start_frame_file_id', 'image');
      if (b.end_frame_file_id) await requireUpload(tx, workspaceId, b.end_frame_file_id, 'end_frame_file_id', 'image');
      for (const [i, ref] of (b.reference_file_ids ?? []).entries()) await requireUpload(tx, workspaceId, ref, `reference_file_ids.${i}`, 'image');
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
    present: videoLike,
    created: videoLike,
  },
  {
    kind: 'replace_actor',
    base: '/v1/replace-actors/generations',
    createPath: '/v1/replace-actors/generations',
    tag: 'Replace actors',
    models: [replaceActorModel],
    body: replaceActorCreateSchema,
    record: videoJobSchema,
    createResult: creationResult,
    async prepare(b: z.infer<typeof replaceActorCreateSchema>, tx, workspaceId) {
      const route = requireRoute(replaceActorModel);
      if (b.image_file_id) await requireUpload(tx, workspaceId, b.image_file_id, 'image_file_id', 'image');
      if (b.video_file_id) await requireUpload(tx, workspaceId, b.video_file_id, 'video_file_id', 'video');
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
    present: videoLike,
    created: (job) => ({ id: job.id, status: 'pending' }),
  },
  {
    kind: 'talking_actor',
    base: '/v1/talking-actors',
    createPath: '/v1/talking-actors/generate',
    tag: 'Talking actors',
    models: [talkingActorModel],
    body: talkingActorCreateSchema,
    record: talkingActorJobSchema,
    createResult: talkingCreationResult,
    async prepare(b: z.infer<typeof talkingActorCreateSchema>, tx) {
      const route = requireRoute(talkingActorModel);
      const actor = await tx.selectFrom('actors').select(['id', 'default_voice_id']).where('id', '=', b.actor_id).executeTakeFirst();
      if (!actor) throw new ApiError(404, 'not_found', `actor ${b.actor_id} not found`);
      const voiceId = b.voice_id ?? actor.default_voice_id;
      if (!voiceId) {
        throw new ApiError(400, 'invalid_request', `voice_id: actor ${b.actor_id} has no default voice, so voice_id is required`);
      }
      const voice = await tx.selectFrom('voices').select('id').where('id', '=', voiceId).executeTakeFirst();
      if (!voice) throw new ApiError(404, 'not_found', `voice ${voiceId} not found`);
      return {
        model: talkingActorModel,
        route,
        params: { actor_id: b.actor_id, voice_id: voiceId, script: b.script, voice_options: b.voice_options, aspect_ratio: b.aspect_ratio },
      };
    },
    present(job) {
      const p = job.params as Record<string, any>;
      return { id: job.id, project_id: job.project_id, actor_id: p.actor_id, voice_id: p.voice_id, script: p.script, ...common(job) };
    },
    created(job) {
      return { id: job.id, status: 'pending', voice_id: (job.params as Record<string, any>).voice_id };
    },
  },
];

/** Each kind's paths, tag, models and schemas, for routes that serve jobs beside these (events, lists, the model catalog). */
export const jobKinds: readonly Pick<KindSpec, 'kind' | 'base' | 'tag' | 'record' | 'createPath' | 'models' | 'body'>[] = kinds;

/** The job record GET {base}/{id} answers: the kind's fields, and the stored progress while in flight. */
export function jobRecord(kind: JobKind, job: Job): Record<string, unknown> {
  const data = kinds.find((k) => k.kind === kind)!.present(job);
  if (job.status === 'pending' || job.status === 'generating') {
    data.progress = { phase: job.phase, attempt: job.attempt, percent: job.percent, queue_position: job.queue_position } satisfies Progress;
  }
  return data;
}

/** The job `:id` of the request's kind in the key's workspace; 404 for an unknown id or another workspace's job. */
export async function loadJobOfKey(db: Database, req: Request, res: Response, kind: JobKind): Promise<Job> {
  const { workspaceId } = authOf(res);
  const job = await jobsRepo.getJobInWorkspace(db, workspaceId, String(req.params.id), kind);
  if (!job) throw new ApiError(404, 'not_found', `${kind.replace('_', '-')} job ${String(req.params.id)} not found`);
  return job;
}

const idPrefix: Record<JobKind, string> = { image: 'img', video: 'vid', replace_actor: 'rpl', talking_actor: 'tlk' };

// ------------------------------------------------------------------ operations (OpenAPI)

export const jobOperations: Operation[] = kinds.flatMap((k): Operation[] => [
  {
    method: 'post',
    path: k.createPath,
    summary: `Create a ${k.kind.replace('_', '-')} job. ?dry_run=true answers the price instead (nothing is created or charged).${IDEMPOTENCY_NOTE}`,
    tags: [k.tag],
    rateClass: 'generate',
    body: k.body,
    query: dryRunQuery,
    // With ?dry_run=true the answer is the price quote instead of the created job.
    response: z.union([k.createResult, dryRunResultSchema]),
    creates: `${k.base}/:id`,
    errors: [400, 401, 402, 403, 404, 409, 422, 429, 500],
  },
  {
    method: 'get',
    path: `${k.base}/:id`,
    summary: `Get a ${k.kind.replace('_', '-')} job`,
    tags: [k.tag],
    rateClass: 'poll',
    query: statusQuery,
    response: k.record,
    errors: [400, 401, 404, 429, 500],
  },
  {
    method: 'get',
    path: `${k.base}/:id/url`,
    summary: `Get the final media URL of a ${k.kind.replace('_', '-')} job`,
    tags: [k.tag],
    rateClass: 'poll',
    response: urlResultSchema,
    errors: [401, 404, 409, 410, 429, 500],
  },
  {
    method: 'post',
    path: `${k.base}/:id/cancel`,
    summary: `Cancel a ${k.kind.replace('_', '-')} job (extension: ends it as failed with code canceled and refunds)`,
    tags: [k.tag],
    rateClass: 'generate',
    response: k.record,
    errors: [401, 404, 409, 429, 500],
  },
]);

// ------------------------------------------------------------------ router

export function createJobsRouter(deps: AppDeps & { metrics: ApiMetrics }, auth: Auth): Router {
  const router = Router();
  const { db, config, logger } = deps;
  const liveProgress = createLiveProgress(deps.temporal, { timeoutMs: config.PROGRESS_QUERY_TIMEOUT_MS, cacheMs: LIVE_PROGRESS_CACHE_MS });

  async function startWorkflow(job: Job): Promise<void> {
    try {
      const toStart = jobToStart(job, config.TASK_QUEUE_PREFIX);
      await deps.temporal.withDeadline(Date.now() + config.WORKFLOW_START_TIMEOUT_MS, () => startJobWorkflow(deps.temporal, toStart));
      await jobsRepo.markWorkflowStarted(db, job.id);
    } catch (err) {
      // The job and its charge are committed; the reconciler starts it later.
      logger.warn({ jobId: job.id, err: (err as Error).message }, 'workflow start failed; left for the reconciler');
    }
  }

  const loadJob = (req: Request, res: Response, spec: KindSpec) => loadJobOfKey(db, req, res, spec.kind);

  /** The create's body, validated: an unknown model is invalid_model, told apart from every other malformed field. */
  function parseCreateBody(spec: KindSpec, raw: unknown): Record<string, any> {
    const rawModel = (raw as Record<string, unknown>).model;
    if (typeof rawModel === 'string' && !spec.models.includes(rawModel)) {
      throw new ApiError(400, 'invalid_model', `model ${rawModel} is not supported here; use one of ${spec.models.join(', ')}`);
    }
    return parseOr400(spec.body, raw) as Record<string, any>;
  }

  /** Everything a create checks before charging (project 403, references 404, per-model rules 400) and its price. */
  async function quoteCreate(spec: KindSpec, body: Record<string, any>, tx: Tx, workspaceId: string) {
    const project = await tx.selectFrom('projects').select('workspace_id').where('id', '=', body.project_id).executeTakeFirst();
    if (!project || project.workspace_id !== workspaceId) {
      throw new ApiError(403, 'forbidden', `project ${body.project_id} is not in this workspace`);
    }
    const prepared = await spec.prepare(body, tx, workspaceId);
    const provider = providerFor(config, prepared.model);
    if (!provider) {
      throw new ApiError(400, 'invalid_model', `model ${prepared.model} is not enabled here (its provider is not configured in this deployment)`);
    }
    const refusal = requestRefusal(prepared.route, prepared.params, provider);
    if (refusal) throw new ApiError(400, 'invalid_request', refusal);
    const price = priceFor(prepared.route, prepared.params as { count?: number; duration?: number; script?: string });
    return { prepared, provider, price };
  }

  for (const spec of kinds) {
    router.post(spec.createPath, auth.rateLimit('generate'), jsonBody, dryRun(db, async (raw, tx, ws) => (await quoteCreate(spec, parseCreateBody(spec, raw), tx, ws)).price), idempotent(deps, { body: 'json' }), async (req, res) => {
      const { workspaceId, apiKeyId } = authOf(res);
      const body = parseCreateBody(spec, req.body);
      const jobId = newId(idPrefix[spec.kind]);
      const job = await db.transaction().execute(async (tx) => {
        const { prepared, provider, price } = await quoteCreate(spec, body, tx, workspaceId);
        let created: Job;
        try {
          created = await jobsRepo.insertJobWithCharge(tx, {
            id: jobId,
            kind: spec.kind,
            workspaceId,
            projectId: body.project_id,
            apiKeyId,
            model: prepared.model,
            params: { ...prepared.params, provider, deadline_seconds: prepared.route.deadlineSeconds },
            price,
          });
        } catch (err) {
          if (err instanceof jobsRepo.InsufficientCreditsError) {
            throw new ApiError(402, 'insufficient_credits', `insufficient credits: this job requires ${err.required} credits, the workspace has ${err.available}`);
          }
          throw err;
        }
        // With an Idempotency-Key, its answer commits with the job and its charge (or not at all).
        await completeIdempotencyInTx(tx, res, 200, { data: spec.created(created) });
        return created;
      });
      deps.metrics.jobCreated(spec.kind, job.model);
      deps.metrics.credits('charged', job.price);
      await startWorkflow(job);
      res.status(200).json({ data: spec.created(job) });
    });

    // The hottest path of the API: one primary-key read. The row holds the workflow's progress as
    // its activities wrote it; `?live=true` asks the workflow itself (shared and cached per job).
    router.get(`${spec.base}/:id`, auth.rateLimit('poll'), async (req, res) => {
      // Most polls carry no query string: skip parsing one.
      const live = req.url.includes('?') && parseOr400(statusQuery, req.query).live === 'true';
      const job = await loadJob(req, res, spec);
      const data = jobRecord(spec.kind, job);
      if (data.progress && live && job.workflow_started) {
        const p = await liveProgress.get(job.id);
        if (p) data.progress = { phase: p.phase, attempt: p.attempt, percent: p.percent, queue_position: p.queuePosition } satisfies Progress;
      }
      res.json({ data });
    });

    router.get(`${spec.base}/:id/url`, auth.rateLimit('poll'), async (req, res) => {
      const job = await loadJob(req, res, spec);
      if (job.status === 'failed') {
        const message = job.error?.message ?? 'the generation failed';
        throw new ApiError(409, 'generation_failed', message, { status: 'failed' });
      }
      const gone = job.status === 'completed' ? outputsGoneReason(job, config.OUTPUT_RETENTION_DAYS) : null;
      if (gone) throw new ApiError(410, 'gone', `job ${job.id}: ${gone}`);
      if (job.status !== 'completed' || !job.outputs?.length) {
        throw new ApiError(409, 'not_ready', `job ${job.id} is not ready yet (status ${job.status})`, { status: job.status });
      }
      const urls = await Promise.all(job.outputs.map((o) => deps.storage.url(o.key)));
      const data: Record<string, unknown> = { id: job.id, url: urls[0] };
      if (spec.kind === 'image' && urls.length > 1) data.urls = urls;
      res.json({ data });
    });

    router.post(`${spec.base}/:id/cancel`, auth.rateLimit('generate'), async (req, res) => {
      const job = await loadJob(req, res, spec);
      if (job.status === 'completed' || job.status === 'failed') {
        throw new ApiError(409, 'not_cancelable', `job ${job.id} is already ${job.status} and cannot be canceled`, { status: job.status });
      }
      // Always through Temporal: the workflow is the job's one writer while it runs, and a start that
      // timed out here may still have succeeded, whatever workflow_started says.
      // A gRPC deadline bounds the calls (and the client's retries) while Temporal is down: 503.
      const outcome = await deps.temporal.withDeadline(Date.now() + config.WORKFLOW_START_TIMEOUT_MS, () => cancelJobWorkflow(deps.temporal, job.id));
      if (outcome.state === 'not_found' || outcome.state === 'closed') {
        // No workflow will settle it: none exists, or it ended without its own clean-up (terminated
        // from the Web UI). markFailed leaves a job that was failed or completed meanwhile as it is.
        const error = { code: 'canceled', message: outcome.state === 'not_found' ? 'the job was canceled' : "the job's workflow had already ended" } as const;
        const { refunded } = await failJobAndRemoveMedia(deps, job.id, error, outcome.state === 'closed' ? outcome.runId : null);
        // A job with no workflow is never started later (the reconciler starts pending jobs only).
        if (outcome.state === 'not_found') await jobsRepo.markWorkflowStarted(db, job.id);
        if (refunded > 0) deps.metrics.credits('refunded', refunded);
      }
      const fresh = (await jobsRepo.getJob(db, job.id))!;
      if (fresh.status === 'completed') {
        throw new ApiError(409, 'not_cancelable', `job ${job.id} is already completed and cannot be canceled`, { status: fresh.status });
      }
      res.json({ data: spec.present(fresh) });
    });
  }
  return router;
}
