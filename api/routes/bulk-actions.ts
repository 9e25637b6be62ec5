// Bulk actions (extension; docs/api/bulk-actions.md): POST /v1/bulk-actions applies one cancel, retry
// or delete to many jobs of the key's workspace, chosen by the job lists' filters or by ids, and
// answers a handle at once; GET /v1/bulk-actions/{id} its progress (its jobs counted by outcome),
// GET /v1/bulk-actions the workspace's actions newest first. The jobs are taken at create (a
// snapshot, at most BULK_ACTION_MAX_JOBS), recorded with the action and its one audit event in one
// transaction; a durable workflow (workflows/bulk-action-run.ts) then applies the action to them at
// most BULK_ACTION_PER_SECOND a second by each job's own rules (jobs/bulk-actions.ts). A failed
// start after commit is the reconciler's to retry (worker/bulk-action-reconciler.ts).
import type { Request, Response } from 'express';
import { z } from 'zod';
import type { AppDeps } from '../deps.js';
import { authOf, type Auth } from '../auth.js';
import { Endpoints } from '../endpoint.js';
import { ApiError, invalidRequest } from '../errors.js';
import { completeIdempotencyInTx, hasIdempotencyClaim, IDEMPOTENCY_NOTE, idempotent } from '../idempotency.js';
import { DEFAULT_PAGE_LIMIT, pageLimitQuery } from '../validate.js';
import type { Database, Queryable } from '../../db/index.js';
import { jobStatuses } from '../../db/schema.js';
import { bulkActionNames, bulkJobStates, type BulkAction } from '../../db/bulk-action-schema.js';
import * as repo from '../../db/repos/bulk-actions.js';
import type { JobListFilters } from '../../db/repos/job-lists.js';
import { recordAuditEvent } from '../../db/repos/audit.js';
import { keyActor } from '../../shared/audit.js';
import { newId } from '../../shared/ids.js';
import { jobKinds } from '../../kinds/index.js';
import { jobPriorities } from '../../shared/job-model.js';
import { METADATA_KEY_PATTERN, METADATA_MAX_KEYS, METADATA_VALUE_MAX, TAG_PATTERN, TAGS_MAX, metadataLabel, tagLabel } from '../../shared/labels.js';
import { BULK_ACTION_MAX_JOBS, BULK_ACTION_PER_SECOND, bulkEligibleStatuses } from '../../shared/bulk-actions.js';
import { startBulkActionWorkflow } from '../../workflows/bulk-action-client.js';

const TAG = 'Bulk actions';
/** Bounds of created_after / created_before: ms since the epoch up to year 9999 (as the job lists). */
const MAX_MILLIS = 253_402_300_799_999;
const millis = (what: string) => z.number().int().min(0).max(MAX_MILLIS).describe(`only jobs created ${what} this moment (ms since the Unix epoch, exclusive)`);

/** The job lists' filters (GET /v1/jobs), as a JSON object. */
const filterSchema = z
  .object({
    project_id: z.string().min(1).max(100).optional().describe('only jobs of this project'),
    kind: z.enum(jobKinds).optional().describe('only jobs of this kind'),
    status: z
      .enum(jobStatuses)
      .optional()
      .describe("only jobs in this status (within the action's: cancel pending/generating, retry failed, delete completed/failed)"),
    model: z.string().min(1).max(100).optional().describe('only jobs of this model'),
    priority: z.enum(jobPriorities).optional().describe('only jobs of this priority'),
    created_after: millis('after').optional(),
    created_before: millis('before').optional(),
    tag: z
      .union([z.string().regex(TAG_PATTERN, 'is not a tag'), z.array(z.string().regex(TAG_PATTERN, 'is not a tag')).min(1).max(TAGS_MAX)])
      .optional()
      .describe('only jobs carrying this tag (an array: every one of them)'),
    metadata: z
      .record(z.string().regex(METADATA_KEY_PATTERN, 'a metadata key is 1–40 characters of letters, digits, _ - .'), z.string().min(1).max(METADATA_VALUE_MAX))
      .refine((m) => Object.keys(m).length <= METADATA_MAX_KEYS, `at most ${METADATA_MAX_KEYS} keys`)
      .optional()
      .describe('only jobs whose metadata has all these values'),
  })
  .strict();

const actionField = z
  .enum(bulkActionNames)
  .describe('cancel (jobs in flight), retry (failed jobs, never canceled ones) or delete (the outputs of finished jobs)');
const filterField = filterSchema.describe("the jobs the job lists' filters match now ({} matches every job of the workspace)");
const idsField = z.array(z.string().min(1).max(200)).min(1).max(BULK_ACTION_MAX_JOBS).describe("these jobs of the key's workspace (404 naming any other)");
const EXACTLY_ONE = 'give exactly one of filter or ids';

// Exactly one of filter and ids: two shapes, so the document states it (oneOf) as the check does.
const bodySchema = z
  .union([
    z.object({ action: actionField, filter: filterField, ids: z.never().optional() }).strict(),
    z.object({ action: actionField, ids: idsField, filter: z.never().optional() }).strict(),
  ])
  .describe(`an action over the jobs named by filter or by ids (${EXACTLY_ONE})`);

type Body = z.infer<typeof bodySchema>;
type Filter = z.infer<typeof filterSchema>;

const countsSchema = z.object(Object.fromEntries(bulkJobStates.map((s) => [s, z.number().int()])) as Record<(typeof bulkJobStates)[number], z.ZodNumber>);

const recordSchema = z.object({
  id: z.string(),
  action: z.enum(bulkActionNames),
  status: z.enum(['running', 'completed']).describe('running until the action was applied to every job it took'),
  filter: filterSchema.nullable().describe('the filter given (null: ids were given)'),
  job_count: z.number().int().describe(`the jobs the action took at create (at most ${BULK_ACTION_MAX_JOBS})`),
  counts: countsSchema.describe(
    "its jobs by outcome: pending (not reached yet), done, skipped (the job's rules refused it: finished already, not failed, in flight…), failed",
  ),
  created_at: z.number().int(),
  completed_at: z.number().int().nullable(),
});

async function present(q: Queryable, a: BulkAction): Promise<z.infer<typeof recordSchema>> {
  const selector = a.selector as { filter?: Filter };
  return {
    id: a.id,
    action: a.action,
    status: a.status,
    filter: selector.filter ?? null,
    job_count: a.job_count,
    counts: await repo.countsOf(q, a.id),
    created_at: a.created_at.getTime(),
    completed_at: a.completed_at?.getTime() ?? null,
  };
}

/** The filter as the job lists' repository takes it, narrowed to the statuses the action takes; null when none can match. */
function listFilters(action: Body['action'], f: Filter): JobListFilters | null {
  const eligible = bulkEligibleStatuses[action];
  if (f.status !== undefined && !eligible.includes(f.status)) return null;
  const tags = f.tag === undefined ? [] : Array.isArray(f.tag) ? f.tag : [f.tag];
  const labels = [...new Set([...tags.map(tagLabel), ...Object.entries(f.metadata ?? {}).map(([k, v]) => metadataLabel(k, v))])];
  return {
    kind: f.kind,
    projectId: f.project_id,
    statuses: f.status !== undefined ? [f.status] : eligible,
    model: f.model,
    priority: f.priority,
    createdAfter: f.created_after,
    createdBefore: f.created_before,
    labels: labels.length ? labels : undefined,
  };
}

/** The jobs the request takes: 400 too_many_jobs past the maximum, 404 naming ids not of the workspace. */
async function selectJobs(q: Queryable, workspaceId: string, body: Body): Promise<string[]> {
  if (body.ids) {
    const ids = [...new Set(body.ids)];
    const found = await repo.jobIdsInWorkspace(q, workspaceId, ids);
    const missing = ids.filter((id) => !found.has(id));
    if (missing.length)
      throw new ApiError(404, 'not_found', `job${missing.length === 1 ? '' : 's'} ${missing.slice(0, 5).join(', ')}${missing.length > 5 ? '…' : ''} not found`);
    return ids;
  }
  const filters = listFilters(body.action, body.filter!);
  if (!filters) return [];
  const ids = await repo.matchingJobIds(q, workspaceId, filters, BULK_ACTION_MAX_JOBS + 1);
  if (ids.length > BULK_ACTION_MAX_JOBS) {
    throw new ApiError(
      400,
      'too_many_jobs',
      `the filter matches more than ${BULK_ACTION_MAX_JOBS} jobs the ${body.action} takes; narrow it (e.g. created_before) and send several actions`,
    );
  }
  return ids;
}

async function loadOfKey(db: Database, req: Request, res: Response): Promise<BulkAction> {
  const a = await repo.getBulkActionInWorkspace(db, authOf(res).workspaceId, String(req.params.id));
  if (!a) throw new ApiError(404, 'not_found', `bulk action ${String(req.params.id)} not found`);
  return a;
}

const CURSOR = /^bulk_actions\.([0-9]{1,16})\.([A-Za-z0-9_-]{1,200})$/;
const listQuery = z.object({
  limit: pageLimitQuery(),
  cursor: z.string().regex(CURSOR, 'not a cursor returned by this endpoint').optional().describe('the next_cursor of the previous page'),
});

export const bulkActionEndpoints = new Endpoints<AppDeps>();

bulkActionEndpoints.add({
  method: 'post',
  path: '/v1/bulk-actions',
  summary: 'Cancel, retry or delete many jobs (extension)',
  description:
    "Takes the jobs of the key's workspace that `filter` (the job lists' filters) matches now, or the `ids` given, and answers a handle at once; the action is then applied to each job by that job's own rules: " +
    "cancel as POST /v1/{kind}/{id}/cancel (refunded by the cancel rules), retry as a new job with the failed job's request (charged its price; a canceled job is not retried), delete as DELETE /v1/{kind}/{id} (a finished job's outputs). " +
    `A job the rules refuse is counted as skipped. At most ${BULK_ACTION_MAX_JOBS} jobs per action (a filter matching more: 400 too_many_jobs), applied at most ${BULK_ACTION_PER_SECOND} a second; ` +
    `the action survives any process restart. One audit event (bulk_action.created) per action.${IDEMPOTENCY_NOTE}`,
  tags: [TAG],
  scope: 'generate',
  rateClass: 'generate',
  body: bodySchema,
  response: recordSchema,
  creates: '/v1/bulk-actions/:id',
  errors: [400, 401, 403, 404, 409, 422, 429, 500],
  before: (deps) => [idempotent(deps, { body: 'json' })],
  precheck(req) {
    const raw = req.body as { ids?: unknown; filter?: unknown } | undefined;
    // Told plainly: the union's own refusal would only say that neither shape matched.
    if (raw && typeof raw === 'object' && (raw.filter === undefined) === (raw.ids === undefined)) throw invalidRequest(`body: ${EXACTLY_ONE}`);
    if (Array.isArray(raw?.ids) && raw.ids.length > BULK_ACTION_MAX_JOBS) throw invalidRequest(`ids: at most ${BULK_ACTION_MAX_JOBS} jobs per action`);
  },
  async handler({ res, body, services: deps }) {
    const { workspaceId, apiKeyId } = authOf(res);
    const id = newId('bulk');
    const { row, data } = await deps.db.transaction().execute(async (tx) => {
      const jobIds = await selectJobs(tx, workspaceId, body);
      const selector = body.filter ? { filter: body.filter } : { ids: body.ids };
      const row = await repo.insertBulkAction(tx, { id, workspaceId, apiKeyId, action: body.action, selector, jobIds });
      await recordAuditEvent(tx, {
        workspaceId,
        action: 'bulk_action.created',
        actor: keyActor(apiKeyId),
        targetType: 'bulk_action',
        targetId: id,
        details: { action: body.action, job_count: jobIds.length, ...(body.filter ? { filter: body.filter } : { ids: body.ids!.length }) },
      });
      const data = await present(tx, row);
      if (hasIdempotencyClaim(res)) await completeIdempotencyInTx(tx, res, 200, { data });
      return { row, data };
    });
    // Committed: a start that fails is the reconciler's to retry.
    if (row.job_count > 0) {
      await startBulkActionWorkflow(deps.temporal, { id, workspaceId, action: row.action, jobCount: row.job_count }, deps.config).catch((err: unknown) =>
        deps.logger.warn({ bulkActionId: id, err: (err as Error).message }, 'bulk action workflow start failed; left for the reconciler'),
      );
    }
    res.status(200).json({ data });
  },
});

bulkActionEndpoints.add({
  method: 'get',
  path: '/v1/bulk-actions',
  summary: "List the workspace's bulk actions (extension)",
  description: 'Newest first.',
  tags: [TAG],
  scope: 'read',
  rateClass: 'poll',
  query: listQuery,
  response: z.array(recordSchema),
  responseExtra: { next_cursor: z.string().nullable().describe('pass as `cursor` to get the next page; null on the last page') },
  errors: [400, 401, 429, 500],
  async handler({ res, query, services: deps }) {
    const m = query.cursor ? CURSOR.exec(query.cursor) : null;
    const page = await repo.listBulkActionsPage(deps.db, authOf(res).workspaceId, {
      limit: query.limit ?? DEFAULT_PAGE_LIMIT,
      after: m ? { createdAtMicros: m[1]!, id: m[2]! } : null,
    });
    const data = await Promise.all(page.rows.map((a) => present(deps.db, a)));
    res.json({ data, next_cursor: page.next ? `bulk_actions.${page.next.createdAtMicros}.${page.next.id}` : null });
  },
});

bulkActionEndpoints.add({
  method: 'get',
  path: '/v1/bulk-actions/:id',
  summary: 'Get a bulk action (extension)',
  description: 'Its progress: its jobs counted by outcome (pending until the action reached them).',
  tags: [TAG],
  scope: 'read',
  rateClass: 'poll',
  response: recordSchema,
  errors: [401, 404, 429, 500],
  async handler({ req, res, services: deps }) {
    res.json({ data: await present(deps.db, await loadOfKey(deps.db, req, res)) });
  },
});

export const createBulkActionsRouter = (deps: AppDeps, auth: Auth) => bulkActionEndpoints.router(deps, auth);
