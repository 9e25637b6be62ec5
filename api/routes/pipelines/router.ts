// The pipeline endpoints, declared through the same Endpoints table as the job endpoints (so
// validation, rate classes, Idempotency-Key, the OpenAPI document and the contract fuzzing cover
// them). A create is validated whole (checks.ts), written with every step `waiting` and NOTHING
// charged, then its parent workflow is started after commit (a failed start is retried by the
// reconciler, which starts pipelines whose workflow never ran). Each step is charged when it starts
// (activities/pipelines.ts), as the job it is.
import { z } from 'zod';
import type { AppDeps } from '../../deps.js';
import { authOf, type Auth } from '../../auth.js';
import { keyCreateListCheck } from '../../key-create-checks.js';
import { Endpoints } from '../../endpoint.js';
import { ApiError, invalidRequest } from '../../errors.js';
import { completeIdempotencyInTx, hasIdempotencyClaim, IDEMPOTENCY_NOTE, idempotent } from '../../idempotency.js';
import { DEFAULT_PAGE_LIMIT, pageLimitQuery, parseOr400 } from '../../validate.js';
import { requestedWebhook } from '../../webhooks.js';
import type { Queryable } from '../../../db/index.js';
import * as repo from '../../../db/repos/pipelines.js';
import { creditsOf } from '../../../db/repos/job-ledger.js';
import type { JobService } from '../../../jobs/index.js';
import { newId } from '../../../shared/ids.js';
import { pipelineCreateBody, pipelineQuoteSchema, pipelineRecordSchema, pipelineStatuses, type PipelineCreateBody } from '../../../shared/pipelines.js';
import { startPipelineWorkflow } from '../../../workflows/pipeline-client.js';
import { workspaceShareWeight } from '../../../db/repos/fair-share.js';
import { checkSteps, parsePipelineCreate, type CheckedStep } from './checks.js';
import { presentPipeline, presentPipelines } from './present.js';
import { addPipelineActions } from './actions.js';
import { loadPipelineOfKey, refuseOverActive, TAG, type PipelineServices } from './common.js';
import { labelFilters, labelQueryFields } from '../../label-filters.js';

/** The create's checks: project (403), webhook and every step (400/404), in the given transaction. */
async function checkCreate({ deps, jobs }: PipelineServices, body: PipelineCreateBody, q: Queryable, workspaceId: string): Promise<CheckedStep[]> {
  await jobs.requireProject(q, workspaceId, body.project_id).catch(() => {
    throw new ApiError(403, 'forbidden', `project ${body.project_id} is not in this workspace`);
  });
  if (body.webhook_url !== undefined) await requestedWebhook(q, workspaceId, { webhook_url: body.webhook_url }, deps.config);
  else if (body.webhook_events !== undefined) throw invalidRequest('webhook_events: needs webhook_url');
  return checkSteps(jobs, body, q, workspaceId, deps.config.PIPELINE_MAX_STEPS);
}

const CURSOR = /^pipelines\.([0-9]{1,16})\.([A-Za-z0-9_-]{1,200})$/;

const dryRunQuery = z.object({
  dry_run: z
    .enum(['true', 'false'])
    .optional()
    .describe('true: validate the whole pipeline and answer its quote (each step priced) without creating or charging anything'),
});

const listQuery = z.object({
  limit: pageLimitQuery(),
  cursor: z.string().regex(CURSOR, 'not a cursor returned by this endpoint').optional().describe('the next_cursor of the previous page'),
  status: z.enum(pipelineStatuses).optional(),
  ...labelQueryFields,
});

export const pipelineEndpoints = new Endpoints<PipelineServices>();

pipelineEndpoints.add({
  method: 'post',
  path: '/v1/pipelines',
  summary: 'Create a pipeline (extension)',
  description:
    'Several generations run in order as one durable job: each step is a create body of a job kind whose upload inputs may reference an earlier step\'s output ({"from": "<step id>", "output": <index>}). ' +
    'Validated whole (every step as its create endpoint validates it, every reference: an earlier step, an existing output, the media type the field takes); nothing is charged at create: ' +
    'each step is charged its price when it starts, as the job it creates (GET /v1/pipelines/{id} names it), and refunded as any job is. ' +
    `?dry_run=true answers the quote instead. At most PIPELINE_MAX_STEPS steps (default 8) and PIPELINE_MAX_ACTIVE pipelines created here pending or running per workspace (default 10; else 429; a batch's pipeline items are not counted).${IDEMPOTENCY_NOTE}`,
  tags: [TAG],
  scope: 'generate',
  rateClass: 'generate',
  body: pipelineCreateBody,
  parseBody: parsePipelineCreate,
  query: dryRunQuery,
  response: z.union([pipelineRecordSchema, pipelineQuoteSchema]),
  creates: '/v1/pipelines/:id',
  errors: [400, 401, 403, 404, 409, 422, 429, 500],
  before: (services) => [
    // Each step's kind and model against the key's allowed_kinds / allowed_models (dry runs included).
    keyCreateListCheck('steps'),
    (req, res, next) => {
      if (!req.url.includes('?') || parseOr400(dryRunQuery, req.query).dry_run !== 'true') return next();
      const { workspaceId } = authOf(res);
      const body = parsePipelineCreate(req.body);
      services.deps.db
        .transaction()
        .setAccessMode('read only')
        .execute(async (tx) => {
          const steps = await checkCreate(services, body, tx, workspaceId);
          const price = steps.reduce((n, s) => n + s.price, 0);
          const available = (await creditsOf(tx, workspaceId)) ?? 0;
          return { price, steps: steps.map((s) => ({ id: s.stepId, price: s.price })), available, sufficient: available >= price };
        })
        .then((data) => res.status(200).json({ data }), next);
    },
    idempotent(services.deps, { body: 'json' }),
  ],
  async handler({ res, body, services }) {
    const { deps } = services;
    const { workspaceId, apiKeyId } = authOf(res);
    const steps = await checkCreate(services, body, deps.db, workspaceId);
    const id = newId('pl');
    const pipeline = await deps.db.transaction().execute(async (tx) => {
      await refuseOverActive(tx, deps, res, workspaceId);
      const row = await repo.insertPipeline(tx, {
        id,
        workspaceId,
        projectId: body.project_id,
        apiKeyId,
        price: steps.reduce((n, s) => n + s.price, 0),
        webhookUrl: body.webhook_url ?? null,
        webhookEvents: body.webhook_url !== undefined ? (body.webhook_events ?? null) : null,
        steps,
        metadata: body.metadata,
        tags: body.tags,
      });
      if (hasIdempotencyClaim(res)) await completeIdempotencyInTx(tx, res, 200, { data: await presentPipeline(tx, deps.storage, row) });
      return row;
    });
    // Committed, nothing charged: a start that fails is retried by the reconciler.
    const fairnessWeight = await workspaceShareWeight(deps.db, workspaceId);
    await startPipelineWorkflow(deps.temporal, { id, workspaceId, projectId: body.project_id, steps: steps.length, fairnessWeight }, deps.config).catch(
      (err: unknown) => deps.logger.warn({ pipelineId: id, err: (err as Error).message }, 'pipeline workflow start failed; left for the reconciler'),
    );
    res.status(200).json({ data: await presentPipeline(deps.db, deps.storage, pipeline) });
  },
});

pipelineEndpoints.add({
  method: 'get',
  path: '/v1/pipelines',
  summary: "List the workspace's pipelines (extension)",
  description: 'Newest first.',
  tags: [TAG],
  scope: 'read',
  rateClass: 'poll',
  query: listQuery,
  response: z.array(pipelineRecordSchema),
  responseExtra: { next_cursor: z.string().nullable().describe('pass as `cursor` to get the next page; null on the last page') },
  errors: [400, 401, 429, 500],
  async handler({ req, res, query, services: { deps } }) {
    const m = query.cursor ? CURSOR.exec(query.cursor) : null;
    const page = await repo.listPipelinesPage(deps.db, authOf(res).workspaceId, {
      limit: query.limit ?? DEFAULT_PAGE_LIMIT,
      after: m ? { createdAtMicros: m[1]!, id: m[2]! } : null,
      status: query.status,
      labels: labelFilters(req.query),
    });
    const data = await presentPipelines(deps.db, deps.storage, page.rows);
    res.json({ data, next_cursor: page.next ? `pipelines.${page.next.createdAtMicros}.${page.next.id}` : null });
  },
});

pipelineEndpoints.add({
  method: 'get',
  path: '/v1/pipelines/:id',
  summary: 'Get a pipeline (extension)',
  description: "Its status, and each step's status, job, progress, outputs and charges.",
  tags: [TAG],
  scope: 'read',
  rateClass: 'poll',
  response: pipelineRecordSchema,
  errors: [401, 404, 429, 500],
  async handler({ req, res, services: { deps } }) {
    const p = await loadPipelineOfKey(deps.db, req, res);
    res.json({ data: await presentPipeline(deps.db, deps.storage, p) });
  },
});

addPipelineActions(pipelineEndpoints);

/** The pipeline endpoints over the process's job service (built by createApp). */
export function createPipelinesRouter(deps: AppDeps & { jobs: JobService }, auth: Auth) {
  return pipelineEndpoints.router({ deps, jobs: deps.jobs }, auth);
}
