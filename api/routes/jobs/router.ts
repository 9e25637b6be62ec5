// The four job kinds' endpoints — create, status, URL and cancel — declared once per kind over the
// kind specs (kinds.ts), so every kind shares the same create path:
//   validate → references (404), per-model rules, route and webhook (400) → one statement, so one
//   transaction (project 403, conditional debit 402, job row with its route + ledger charge) → start
//   the workflow after commit (a failed start is retried by the reconciler).
import type { Request, RequestHandler, Response } from 'express';
import type { AppDeps } from '../../deps.js';
import { authOf, confirmKey, keyCreateCheck, type Auth } from '../../auth.js';
import { z } from 'zod';
import { Endpoints } from '../../endpoint.js';
import { completeIdempotencyInTx, hasIdempotencyClaim, IDEMPOTENCY_NOTE, idempotent } from '../../idempotency.js';
import { dryRun, dryRunQuery, dryRunResultSchema } from '../../dry-run.js';
import { parseOr400 } from '../../validate.js';
import { ApiError } from '../../errors.js';
import type { ApiMetrics } from '../../metrics.js';
import type { Database, Queryable } from '../../../db/index.js';
import type { Job, JobKind } from '../../../db/schema.js';
import { newId } from '../../../shared/ids.js';
import { annotateSpan } from '../../../shared/tracing.js';
import * as jobsRepo from '../../../db/repos/jobs.js';
import { jobForStatusRead } from '../../../db/repos/queue.js';
import { BudgetExceededError, cancelChargeOf, chargeJob, startJob, isTerminal, JobRequestRefusedError, type JobService } from '../../../jobs/index.js';
import { routeCancel } from '../../../shared/routing.js';
import { outputsGoneReason } from '../../../shared/retention.js';
import { typedParams } from '../../../shared/job-params.js';
import { createLiveProgress, type LiveProgress } from '../../../workflows/client.js';
import { kinds, presentJob, type KindSpec } from './kinds.js';
import { statusQuery, urlResultSchema, type Progress } from './schemas.js';
import { requestedWebhook } from '../../webhooks.js';
import { modelLifecycleCheck } from '../../model-lifecycle.js';
import { modelLifecycle } from '../../../shared/model-lifecycle.js';
import { routeFor } from '../../../shared/catalog.js';
import { highPriorityAllowed } from '../../../db/repos/workspace-priority.js';
import type { JobPriority } from '../../../shared/job-model.js';
import { createReuseKey, quoteReuse } from '../../reuse.js';

/** How long one live `progress` query answer serves every `?live=true` read of the job. */
const LIVE_PROGRESS_CACHE_MS = 1_000;
/** Past this many workspaces remembered as clear of cancel churn, the memory starts over. */
const CHURN_CLEAR_MAX = 10_000;

/** What the job handlers use: the gateway's deps, the job lifecycle and the process-wide live progress cache. */
interface JobServices {
  deps: AppDeps & { metrics: ApiMetrics };
  jobs: JobService;
  liveProgress: LiveProgress;
  /** Workspaces whose cancel churn was far below its limit, until when (refuseCancelChurn). */
  churnClear: Map<string, number>;
}

/** The job `:id` of the request's kind in the key's workspace; 404 for an unknown id or another workspace's job. */
export async function loadJobOfKey(db: Database, req: Request, res: Response, kind: JobKind): Promise<Job> {
  const { workspaceId } = authOf(res);
  const job = await jobsRepo.getJobInWorkspace(db, workspaceId, String(req.params.id), kind);
  if (!job) throw new ApiError(404, 'not_found', `${kind.replace('_', '-')} job ${String(req.params.id)} not found`);
  return job;
}

/** An unknown model is invalid_model, told apart from every other malformed field; the models it suggests are the ones a create can still use. */
import { createRefusal } from './refusals.js';

export { createRefusal };

export function checkModel(spec: KindSpec, raw: unknown, now: Date = new Date()): void {
  const rawModel = (raw as Record<string, unknown>).model;
  if (typeof rawModel === 'string' && !spec.models.includes(rawModel)) {
    const usable = spec.models.filter((m) => modelLifecycle(routeFor(m)!, now).state !== 'retired');
    throw new ApiError(400, 'invalid_model', `model ${rawModel} is not supported here; use one of ${usable.join(', ')}`);
  }
}

/** Refuses a create whose kind or model the key's rules exclude (a kind with one model may leave it out). */
function keyCreateRule(spec: KindSpec): RequestHandler {
  return (req, res, next) => {
    const model: unknown = (req.body as Record<string, unknown> | undefined)?.model ?? (spec.models.length === 1 ? spec.models[0] : undefined);
    try {
      keyCreateCheck(res, spec.kind, model);
    } catch (err) {
      return next(err);
    }
    next();
  };
}

/** The create's body validated as the create endpoint does (for dry runs, which answer before it). */
function parseCreateBody(spec: KindSpec, raw: unknown): unknown {
  checkModel(spec, raw);
  return parseOr400(spec.body, raw);
}

/** 403 unless the project is the workspace's (the job service's rule). */
async function requireProject(jobs: JobService, db: Queryable, workspaceId: string, projectId: string): Promise<void> {
  await jobs.requireProject(db, workspaceId, projectId).catch((err: unknown) => {
    throw createRefusal(err, projectId);
  });
}

/**
 * Everything a create checks before its quote — references (404), per-model rules (400) and the
 * priority (403) — as the API answers them. A request refused here, by the quote or by its webhook
 * (400) is refused as 403 first when its project is not the workspace's (the project is otherwise
 * checked by the create's own statement), so that check still comes first, as the design orders them.
 */
async function prepareCreate({ jobs }: JobServices, spec: KindSpec, body: unknown, db: Queryable, workspaceId: string) {
  const projectId = (body as { project_id: string }).project_id;
  const priority = (body as { priority?: JobPriority }).priority ?? 'normal';
  try {
    const prepared = await spec.prepare(body, db, workspaceId);
    if (priority === 'high' && !(await highPriorityAllowed(db, workspaceId))) {
      throw new ApiError(403, 'priority_not_allowed', 'priority: high is not enabled for this workspace; use normal or low, or ask the operator to allow it');
    }
    return { prepared, priority };
  } catch (err) {
    throw await refusedBeforeCharge(jobs, db, workspaceId, projectId, err);
  }
}

/** A refusal before the charge: 403 first for another workspace's project, else the refusal as the API answers it. */
async function refusedBeforeCharge(jobs: JobService, db: Queryable, workspaceId: string, projectId: string, err: unknown): Promise<unknown> {
  if (err instanceof ApiError || err instanceof JobRequestRefusedError) await requireProject(jobs, db, workspaceId, projectId);
  return createRefusal(err, projectId);
}

/** A dry run's quote (jobs.quote with the balance: the project checked first and the balance read); the route is decided by it. */
async function quoteDryRun(services: JobServices, spec: KindSpec, body: unknown, db: Queryable, workspaceId: string) {
  const { jobs, deps } = services;
  const projectId = (body as { project_id: string }).project_id;
  const { prepared, priority } = await prepareCreate(services, spec, body, db, workspaceId);
  try {
    const quote = await jobs.quote(db, { workspaceId, projectId, ...prepared, priority }, { balance: true });
    await requestedWebhook(db, workspaceId, body as Parameters<typeof requestedWebhook>[2], deps.config);
    const reuseKey = await createReuseKey({ db, storage: deps.storage }, spec, body as Record<string, unknown>, prepared, workspaceId);
    const reuse =
      reuseKey === null
        ? undefined
        : await quoteReuse(db, workspaceId, reuseKey, deps.config.REUSE_PRICE_CREDITS, quote.price, deps.config.OUTPUT_RETENTION_DAYS);
    return { ...quote, ...(reuse !== undefined ? { reuse } : {}) };
  } catch (err) {
    throw await refusedBeforeCharge(jobs, db, workspaceId, projectId, err);
  }
}

/**
 * A workspace whose cancels after a submit were at most half the limit is not counted again on this
 * replica for this long (its creates skip the count), unless one of its jobs is canceled here: to go
 * past the limit unseen it would have to cancel more than half of it on other replicas within it.
 */
const CHURN_CLEAR_MS = 1_000;

/**
 * 429 cancel_churn_limited while the workspace's cancels after a submit within the window are past
 * CANCEL_CHURN_LIMIT: each such cancel may cost the operator the provider's price, so a workspace
 * looping create→cancel is stopped until the oldest counted cancel leaves the window.
 */
async function refuseCancelChurn({ deps, jobs, churnClear }: JobServices, res: Response, workspaceId: string): Promise<void> {
  const limit = deps.config.CANCEL_CHURN_LIMIT;
  if (limit === 0) return;
  const now = performance.now();
  if ((churnClear.get(workspaceId) ?? 0) > now) return;
  const churn = await jobs.cancelChurn(deps.db, workspaceId, limit, deps.config.CANCEL_CHURN_WINDOW_MS);
  if (churn.counted <= limit / 2) {
    if (churnClear.size >= CHURN_CLEAR_MAX) churnClear.clear();
    churnClear.set(workspaceId, now + CHURN_CLEAR_MS);
  }
  if (!churn.over) return;
  deps.metrics.cancelChurnRefused();
  res.setHeader('Retry-After', String(Math.max(1, Math.ceil(churn.retryAfterMs / 1000))));
  throw new ApiError(
    429,
    'cancel_churn_limited',
    `this workspace canceled more than ${limit} jobs after their submit to a provider within ${deps.config.CANCEL_CHURN_WINDOW_MS} ms; new jobs are refused for ${churn.retryAfterMs} ms`,
    { retry_after_ms: churn.retryAfterMs },
  );
}

/** Whether a job was canceled after its submit, and whether its provider honors cancels (for the metric). */
function cancelStage(job: Job): { provider: string; afterSubmit: boolean; honored: boolean } {
  const provider = typedParams(job).params.provider;
  return { provider, afterSubmit: cancelChargeOf(job).afterSubmit, honored: provider !== 'local' && routeCancel(routeFor(job.model), provider) !== 'never' };
}

/** A dry run's `deadline_at`: when the job would be canceled if created now. */
function deadlineAtOf(body: unknown): number | null {
  const seconds = (body as { deadline_seconds?: number }).deadline_seconds;
  return seconds === undefined ? null : Date.now() + seconds * 1000;
}

function addKind(endpoints: Endpoints<JobServices>, spec: KindSpec): void {
  const name = spec.kind.replace('_', '-');
  endpoints.add({
    method: 'post',
    path: spec.createPath,
    summary: `Create a ${name} job`,
    description: `?dry_run=true answers the price instead (nothing is created or charged).${IDEMPOTENCY_NOTE}`,
    tags: [spec.tag],
    scope: 'generate',
    rateClass: 'generate',
    body: spec.body,
    query: dryRunQuery,
    // With ?dry_run=true the answer is the price quote instead of the created job.
    response: z.union([spec.createResult, dryRunResultSchema]),
    creates: `${spec.base}/:id`,
    errors: [400, 401, 402, 403, 404, 409, 410, 422, 429, 500],
    responseHeaders: ['Deprecation', 'Sunset', 'X-Mediagen-Warning'],
    // A deprecated model's answers (dry runs too) carry its headers; a retired one is refused (410).
    // Dry runs answer next (after the generation rate class); Idempotency-Key claims, replays or refuses.
    before: (services) => [
      // The key's allowed_kinds / allowed_models (403 key_scope_denied), dry runs included.
      keyCreateRule(spec),
      modelLifecycleCheck(spec.models, services.deps.clock),
      dryRun(services.deps.db, async (raw, tx, workspaceId, apiKeyId) => {
        const body = parseCreateBody(spec, raw);
        const quote = await quoteDryRun(services, spec, body, tx, workspaceId);
        const projectId = (body as { project_id: string }).project_id;
        const budget = await services.jobs.budgetCheck(tx, { workspaceId, apiKeyId, projectId, price: quote.price });
        return {
          price: quote.price,
          available: quote.available!,
          sufficient: quote.sufficient!,
          within_budget: budget?.withinBudget ?? null,
          budget_remaining: budget?.remaining ?? null,
          non_refundable_after_submit: quote.nonRefundable,
          deadline_at: deadlineAtOf(body),
          ...('reuse' in quote ? { reuse: quote.reuse } : {}),
        };
      }),
      idempotent(services.deps, { body: 'json' }),
    ],
    // An unknown model is invalid_model, told apart from every other malformed field.
    precheck(req) {
      checkModel(spec, req.body);
    },
    async handler({ res, body, services }) {
      const { deps, jobs } = services;
      const { workspaceId, apiKeyId } = authOf(res);
      const projectId = (body as { project_id: string }).project_id;
      await refuseCancelChurn(services, res, workspaceId);
      const jobId = newId(spec.idPrefix);
      const create = async (db: Queryable) => {
        const { prepared, priority } = await prepareCreate(services, spec, body, db, workspaceId);
        const reuseKey = await createReuseKey({ db, storage: deps.storage }, spec, body as Record<string, unknown>, prepared, workspaceId).catch(
          async (err: unknown) => {
            throw await refusedBeforeCharge(jobs, db, workspaceId, projectId, err);
          },
        );
        // The route is decided by the quote, once, and stored with the job: the workflow, the
        // activities and the adapters read it back instead of working it out again.
        const request = { id: jobId, kind: spec.kind, workspaceId, projectId, apiKeyId, ...prepared, priority };
        const { job } = await chargeJob(
          jobs,
          db,
          {
            ...request,
            deadlineSeconds: (body as { deadline_seconds?: number }).deadline_seconds ?? null,
            metadata: (body as { metadata?: Record<string, string> }).metadata,
            tags: (body as { tags?: string[] }).tags,
            reuseKey,
          },
          {
            webhook: () => requestedWebhook(db, workspaceId, body as Parameters<typeof requestedWebhook>[2], deps.config),
            refusedBeforeCharge: (err) => refusedBeforeCharge(jobs, db, workspaceId, projectId, err),
            refusedAtCharge(err) {
              if (err instanceof BudgetExceededError) deps.metrics.budgetRefused(err.budget.scope, err.budget.period);
              return createRefusal(err, projectId);
            },
          },
        );
        return job;
      };
      // The job and its charge are one statement. With an Idempotency-Key, the key's answer commits
      // in the same transaction (or nothing does).
      const job = hasIdempotencyClaim(res)
        ? await deps.db.transaction().execute(async (tx) => {
            const created = await create(tx);
            await completeIdempotencyInTx(tx, res, 200, { data: spec.created(created) });
            return created;
          })
        : await create(deps.db);
      annotateSpan({ 'mediagen.job_id': job.id, 'mediagen.workspace_id': workspaceId, 'mediagen.job_kind': spec.kind, 'mediagen.model': job.model });
      deps.metrics.jobCreated(spec.kind, job.model);
      deps.metrics.credits('charged', job.price);
      // The job and its charge are committed: a start that fails is retried by the reconciler.
      // `workflow_started` is not written here: the workflow's first step sets it, and a job still
      // unmarked after a few seconds is started again by the reconciler (refused as a duplicate).
      await startJob(jobs, job);
      res.status(200).json({ data: spec.created(job) });
    },
  });

  // The hottest path of the API: one statement, a primary-key read (and, for a job not yet
  // submitted, a count over the waiting-jobs index inside it). The row holds the workflow's progress as its activities wrote it;
  // `?live=true` asks the workflow itself (shared and cached per job).
  endpoints.add({
    method: 'get',
    path: `${spec.base}/:id`,
    summary: `Get a ${name} job`,
    tags: [spec.tag],
    scope: 'read',
    rateClass: 'poll',
    // Its one statement reads the key's revocation with the job (jobForStatusRead).
    keyCheck: 'statement',
    query: statusQuery,
    response: spec.record,
    errors: [400, 401, 404, 429, 500],
    async handler({ req, res, query, services }) {
      const { workspaceId, apiKeyId } = authOf(res);
      const id = String(req.params.id);
      const job = await jobForStatusRead(services.deps.db, { workspaceId, id, kind: spec.kind, liveKeyId: apiKeyId });
      if (!job) {
        // Nothing read: a revoked key is refused (401) before an unknown job is answered (404).
        await confirmKey(res);
        throw new ApiError(404, 'not_found', `${spec.kind.replace('_', '-')} job ${id} not found`);
      }
      const data = presentJob(job);
      if (data.progress && query.live === 'true' && job.workflow_started) {
        const p = await services.liveProgress.get(job.id);
        if (p) data.progress = { phase: p.phase, attempt: p.attempt, percent: p.percent, queue_position: p.queuePosition } satisfies Progress;
      }
      // Still waiting in our queues: its place in its workspace's share (an indexed count in the same
      // statement); the provider's own position once submitted.
      if (data.progress && job.submitted_at === null) data.progress.queue_position = job.queue_position;
      res.json({ data });
    },
  });

  endpoints.add({
    method: 'get',
    path: `${spec.base}/:id/url`,
    summary: `Get the final media URL of a ${name} job`,
    tags: [spec.tag],
    scope: 'read',
    rateClass: 'poll',
    response: urlResultSchema,
    errors: [401, 404, 409, 410, 429, 500],
    async handler({ req, res, services: { deps } }) {
      const job = await loadJobOfKey(deps.db, req, res, spec.kind);
      if (job.status === 'failed') {
        const message = job.error?.message ?? 'the generation failed';
        throw new ApiError(409, 'generation_failed', message, { status: 'failed' });
      }
      const gone = job.status === 'completed' ? outputsGoneReason(job, deps.config.OUTPUT_RETENTION_DAYS) : null;
      if (gone) throw new ApiError(410, 'gone', `job ${job.id}: ${gone}`);
      if (job.status !== 'completed' || !job.outputs?.length) {
        throw new ApiError(409, 'not_ready', `job ${job.id} is not ready yet (status ${job.status})`, { status: job.status });
      }
      const urls = await Promise.all(job.outputs.map((o) => deps.storage.url(o.key)));
      const data: { id: string; url: string | undefined; urls?: string[] } = { id: job.id, url: urls[0] };
      if (spec.outputs.many && urls.length > 1) data.urls = urls;
      res.json({ data });
    },
  });

  endpoints.add({
    method: 'post',
    path: `${spec.base}/:id/cancel`,
    summary: `Cancel a ${name} job (extension)`,
    description:
      "Ends the job as failed with error code canceled and refunds its price: in full before the job was submitted to a provider, or when the provider confirms the cancel; otherwise all but the model's provider cost (GET /v1/models cancel_policy). The job record's `cancel` says what was refunded. Canceling many jobs after their submit gets new creates refused for a while (429 cancel_churn_limited).",
    tags: [spec.tag],
    scope: 'generate',
    rateClass: 'generate',
    response: spec.record,
    errors: [401, 404, 409, 429, 500],
    async handler({ req, res, services: { deps, jobs, churnClear } }) {
      const job = await loadJobOfKey(deps.db, req, res, spec.kind);
      // The workspace's next create counts its cancels again.
      churnClear.delete(job.workspace_id);
      if (isTerminal(job.status)) {
        throw new ApiError(409, 'not_cancelable', `job ${job.id} is already ${job.status} and cannot be canceled`, { status: job.status });
      }
      // A gRPC deadline bounds the Temporal calls (and the client's retries) while Temporal is down: 503.
      const { job: fresh, refunded } = await jobs.cancel(job);
      if (refunded > 0) deps.metrics.credits('refunded', refunded);
      if (fresh.status === 'completed') {
        throw new ApiError(409, 'not_cancelable', `job ${job.id} is already completed and cannot be canceled`, { status: fresh.status });
      }
      const stage = cancelStage(fresh.provider_ref ? fresh : job);
      deps.metrics.jobCanceled(stage.provider, stage.afterSubmit, stage.honored);
      res.json({ data: presentJob(fresh, { progress: false }) });
    },
  });
}

/** Every job endpoint, each declared once (routing, validation and the OpenAPI document). */
export const jobEndpoints = new Endpoints<JobServices>();
for (const spec of kinds) addKind(jobEndpoints, spec);

/** The job endpoints over the process's job service (built by createApp). */
export function createJobsRouter(deps: AppDeps & { metrics: ApiMetrics; jobs: JobService }, auth: Auth) {
  const liveProgress = createLiveProgress(deps.temporal, { timeoutMs: deps.config.PROGRESS_QUERY_TIMEOUT_MS, cacheMs: LIVE_PROGRESS_CACHE_MS });
  return jobEndpoints.router({ deps, jobs: deps.jobs, liveProgress, churnClear: new Map() }, auth);
}
