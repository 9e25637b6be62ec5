// The batch endpoints, declared through the same Endpoints table as the job endpoints (validation,
// rate classes, Idempotency-Key, the OpenAPI document and the contract fuzzing cover them). A
// create is validated whole (checks.ts), written with every item `waiting` and NOTHING charged,
// then its parent workflow is started after commit (a failed start is retried by the reconciler,
// worker/batch-reconciler.ts). Each item is charged when its job starts (activities/batches.ts),
// at priority low, through the one job create (jobs/create-job.ts).
import type { Request, Response } from 'express';
import { z } from 'zod';
import type { AppDeps } from '../../deps.js';
import { authOf, type Auth } from '../../auth.js';
import { keyCreateListCheck } from '../../key-create-checks.js';
import { Endpoints } from '../../endpoint.js';
import { ApiError } from '../../errors.js';
import { completeIdempotencyInTx, hasIdempotencyClaim, IDEMPOTENCY_NOTE, idempotent } from '../../idempotency.js';
import { DEFAULT_PAGE_LIMIT, pageLimitQuery, parseOr400 } from '../../validate.js';
import { requestedWebhook } from '../../webhooks.js';
import type { Database, Queryable } from '../../../db/index.js';
import type { Batch } from '../../../db/batch-schema.js';
import * as repo from '../../../db/repos/batches.js';
import { creditsOf } from '../../../db/repos/job-ledger.js';
import { workspaceShareWeight } from '../../../db/repos/fair-share.js';
import type { JobService } from '../../../jobs/index.js';
import { newId } from '../../../shared/ids.js';
import { batchCreateBody, batchQuoteSchema, batchRecordSchema, batchStatuses, manifestRowSchema } from '../../../shared/batches.js';
import { startBatchWorkflow } from '../../../workflows/batch-client.js';
import { checkItems, parseBatchCreate, type ParsedBatch } from './checks.js';
import { manifestAnswer, presentBatch } from './present.js';

const TAG = 'Batches';

interface BatchServices {
  deps: AppDeps;
  jobs: JobService;
}

/** The batch `:id` of the key's workspace; 404 for an unknown id or another workspace's. */
async function loadBatchOfKey(db: Database, req: Request, res: Response): Promise<Batch> {
  const b = await repo.getBatchInWorkspace(db, authOf(res).workspaceId, String(req.params.id));
  if (!b) throw new ApiError(404, 'not_found', `batch ${String(req.params.id)} not found`);
  return b;
}

/** The create's checks: project (403), webhook and every item (400/404), in the given transaction. */
async function checkCreate({ deps, jobs }: BatchServices, body: ParsedBatch, q: Queryable, workspaceId: string) {
  await jobs.requireProject(q, workspaceId, body.project_id).catch(() => {
    throw new ApiError(403, 'forbidden', `project ${body.project_id} is not in this workspace`);
  });
  if (body.webhook_url !== undefined) await requestedWebhook(q, workspaceId, { webhook_url: body.webhook_url }, deps.config);
  return checkItems(jobs, body, q, workspaceId, deps.config.PIPELINE_MAX_STEPS);
}

/** Starts the batch's parent workflow after commit; a failed start is the reconciler's to retry. */
async function startRun(deps: AppDeps, b: Batch): Promise<void> {
  const fairnessWeight = await workspaceShareWeight(deps.db, b.workspace_id);
  await startBatchWorkflow(
    deps.temporal,
    { id: b.id, workspaceId: b.workspace_id, projectId: b.project_id, items: b.item_count, fairnessWeight },
    deps.config,
  ).catch((err: unknown) => deps.logger.warn({ batchId: b.id, err: (err as Error).message }, 'batch workflow start failed; left for the reconciler'));
}

const CURSOR = /^batches\.([0-9]{1,16})\.([A-Za-z0-9_-]{1,200})$/;

const dryRunQuery = z.object({
  dry_run: z
    .enum(['true', 'false'])
    .optional()
    .describe('true: validate the whole batch and answer its quote (each item priced at priority low) without creating or charging anything'),
});

const listQuery = z.object({
  limit: pageLimitQuery(),
  cursor: z.string().regex(CURSOR, 'not a cursor returned by this endpoint').optional().describe('the next_cursor of the previous page'),
  status: z.enum(batchStatuses).optional(),
});

export const batchEndpoints = new Endpoints<BatchServices>();

batchEndpoints.add({
  method: 'post',
  path: '/v1/batches',
  summary: 'Create a batch (extension)',
  description:
    'Many job creates submitted as one: each item is a create body of a job kind (without project_id, priority and webhook fields) with your `custom_id`, unique in the batch, ' +
    "or (kind pipeline) a pipeline's steps, run as POST /v1/pipelines runs them, each step at priority low. " +
    'Validated whole (every item as its create endpoint validates it; a refusal names the item by index and custom_id); nothing is charged at create: ' +
    "each item runs at priority low and is charged that price when its job starts, refunded as any job is. Items start at a bounded rate (BATCH_START_PER_SECOND, default 50 a second); another workspace's jobs never wait behind a batch. " +
    'When every item ended, the batch completes: one batch.completed to webhook_url, and its manifest (GET /v1/batches/{id}/manifest). ' +
    `?dry_run=true answers the quote instead. At most BATCH_MAX_ITEMS items (default 1000).${IDEMPOTENCY_NOTE}`,
  tags: [TAG],
  scope: 'generate',
  rateClass: 'generate',
  body: batchCreateBody,
  // Parsed in the handler (parseBatchCreate): its refusals name the item, and its limit is the deployment's.
  parseBody: (raw) => raw as z.output<typeof batchCreateBody>,
  query: dryRunQuery,
  response: z.union([batchRecordSchema, batchQuoteSchema]),
  creates: '/v1/batches/:id',
  errors: [400, 401, 403, 404, 409, 422, 429, 500],
  before: (services) => [
    // Each item's kind and model against the key's allowed_kinds / allowed_models (dry runs included).
    keyCreateListCheck('items'),
    (req, res, next) => {
      if (!req.url.includes('?') || parseOr400(dryRunQuery, req.query).dry_run !== 'true') return next();
      const { workspaceId } = authOf(res);
      Promise.resolve()
        .then(() => parseBatchCreate(req.body, services.deps.config.BATCH_MAX_ITEMS))
        .then((body) =>
          services.deps.db
            .transaction()
            .setAccessMode('read only')
            .execute(async (tx) => {
              const items = await checkCreate(services, body, tx, workspaceId);
              const price = items.reduce((n, i) => n + i.price, 0);
              const available = (await creditsOf(tx, workspaceId)) ?? 0;
              return { price, items: items.map((i) => ({ custom_id: i.customId, price: i.price })), available, sufficient: available >= price };
            }),
        )
        .then((data) => res.status(200).json({ data }), next);
    },
    idempotent(services.deps, { body: 'json' }),
  ],
  async handler({ req, res, services }) {
    const { deps } = services;
    const { workspaceId, apiKeyId } = authOf(res);
    const body = parseBatchCreate(req.body, deps.config.BATCH_MAX_ITEMS);
    const items = await checkCreate(services, body, deps.db, workspaceId);
    const id = newId('bat');
    const batch = await deps.db.transaction().execute(async (tx) => {
      const row = await repo.insertBatch(tx, { id, workspaceId, projectId: body.project_id, apiKeyId, webhookUrl: body.webhook_url ?? null, items });
      if (hasIdempotencyClaim(res)) await completeIdempotencyInTx(tx, res, 200, { data: await presentBatch(tx, row) });
      return row;
    });
    // Committed, nothing charged: a start that fails is retried by the reconciler.
    await startRun(deps, batch);
    res.status(200).json({ data: await presentBatch(deps.db, batch) });
  },
});

batchEndpoints.add({
  method: 'get',
  path: '/v1/batches',
  summary: "List the workspace's batches (extension)",
  description: 'Newest first.',
  tags: [TAG],
  scope: 'read',
  rateClass: 'poll',
  query: listQuery,
  response: z.array(batchRecordSchema),
  responseExtra: { next_cursor: z.string().nullable().describe('pass as `cursor` to get the next page; null on the last page') },
  errors: [400, 401, 429, 500],
  async handler({ res, query, services: { deps } }) {
    const m = query.cursor ? CURSOR.exec(query.cursor) : null;
    const page = await repo.listBatchesPage(deps.db, authOf(res).workspaceId, {
      limit: query.limit ?? DEFAULT_PAGE_LIMIT,
      after: m ? { createdAtMicros: m[1]!, id: m[2]! } : null,
      status: query.status,
    });
    const data = await Promise.all(page.rows.map((b) => presentBatch(deps.db, b)));
    res.json({ data, next_cursor: page.next ? `batches.${page.next.createdAtMicros}.${page.next.id}` : null });
  },
});

batchEndpoints.add({
  method: 'get',
  path: '/v1/batches/:id',
  summary: 'Get a batch (extension)',
  description: 'Its status, its items counted by status, its price and the credits its jobs cost so far.',
  tags: [TAG],
  scope: 'read',
  rateClass: 'poll',
  response: batchRecordSchema,
  errors: [401, 404, 429, 500],
  async handler({ req, res, services: { deps } }) {
    res.json({ data: await presentBatch(deps.db, await loadBatchOfKey(deps.db, req, res)) });
  },
});

batchEndpoints.add({
  method: 'post',
  path: '/v1/batches/:id/cancel',
  summary: 'Cancel a batch (extension)',
  description:
    'Items not started yet are canceled and never charged; items already started run to their end under the job rules (cancel one with its own cancel endpoint). ' +
    'The batch ends canceled once its started items ended (one batch.completed, status canceled). A batch already completed or canceled answers 409 not_cancelable.',
  tags: [TAG],
  scope: 'generate',
  rateClass: 'generate',
  response: batchRecordSchema,
  errors: [401, 404, 409, 429, 500],
  async handler({ req, res, services: { deps } }) {
    const b = await loadBatchOfKey(deps.db, req, res);
    await deps.db.transaction().execute(async (tx) => {
      const locked = await repo.lockBatch(tx, b.id);
      if (locked.status !== 'running' || locked.cancel_requested_at) {
        throw new ApiError(409, 'not_cancelable', `batch ${b.id} is already ${locked.cancel_requested_at ? 'canceled' : locked.status} and cannot be canceled`);
      }
      await repo.cancelWaitingItems(tx, b.id);
    });
    res.json({ data: await presentBatch(deps.db, (await repo.getBatch(deps.db, b.id))!) });
  },
});

batchEndpoints.add({
  method: 'post',
  path: '/v1/batches/:id/retry',
  summary: 'Retry the failed items of a batch (extension)',
  description:
    'Every failed item (its job failed, or its charge was refused; never one canceled) runs again as a new job, charged its price when it starts; completed items are never run or paid again. ' +
    "A failed pipeline item's pipeline is resumed from its failed step: its completed steps are never run or paid again. " +
    'The batch runs again and sends one more batch.completed when every item ended. A canceled batch, or one without failed items, answers 409 not_resumable.',
  tags: [TAG],
  scope: 'generate',
  rateClass: 'generate',
  response: batchRecordSchema,
  errors: [401, 404, 409, 429, 500],
  async handler({ req, res, services: { deps } }) {
    const b = await loadBatchOfKey(deps.db, req, res);
    await deps.db.transaction().execute(async (tx) => {
      const locked = await repo.lockBatch(tx, b.id);
      if (locked.cancel_requested_at) throw new ApiError(409, 'not_resumable', `batch ${b.id} was canceled; its items are not retried`);
      if ((await repo.retryFailedItems(tx, b.id)) === 0) throw new ApiError(409, 'not_resumable', `batch ${b.id} has no failed items to retry`);
    });
    const fresh = (await repo.getBatch(deps.db, b.id))!;
    await startRun(deps, fresh);
    res.json({ data: await presentBatch(deps.db, fresh) });
  },
});

batchEndpoints.add({
  method: 'get',
  path: '/v1/batches/:id/manifest',
  summary: "A batch's manifest (extension)",
  description:
    'One row per item in order: custom_id, job_id, status, output_urls (signed, each valid for the storage URL lifetime), credits (net, every attempt), error, pipeline_id ' +
    "(a pipeline item's pipeline: its output_urls are its last step's, its credits every step's). " +
    'Answered once every item ended (else 409 not_ready). `Accept: application/jsonl` answers JSON Lines (one row a line); `Accept: text/csv` CSV (RFC 4180, a header row; output_urls joined by spaces).',
  tags: [TAG],
  scope: 'read',
  rateClass: 'poll',
  response: z.array(manifestRowSchema),
  csv: 'a header row (custom_id, job_id, status, output_urls, credits, error_code, pipeline_id), then one line per item',
  errors: [401, 404, 409, 429, 500],
  async handler({ req, res, services: { deps } }) {
    const b = await loadBatchOfKey(deps.db, req, res);
    if (b.status === 'running')
      throw new ApiError(409, 'not_ready', `batch ${b.id} is still running: its manifest is written when every item ended`, { status: b.status });
    await manifestAnswer(req, res, deps, b);
  },
});

/** The batch endpoints over the process's job service (built by createApp). */
export function createBatchesRouter(deps: AppDeps & { jobs: JobService }, auth: Auth) {
  return batchEndpoints.router({ deps, jobs: deps.jobs }, auth);
}
