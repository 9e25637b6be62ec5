// Bulk actions (0135_bulk_actions): the action row and the jobs it took, a snapshot of its selector
// at create. The run (activities/bulk-actions.ts) takes the pending jobs a few at a time and marks
// each with what the job's rules answered; an action whose jobs are all marked is completed.
import { sql } from 'kysely';
import type { Queryable } from '../index.js';
import type { BulkAction, BulkActionName, BulkJobState } from '../bulk-action-schema.js';
import { bulkJobStates } from '../bulk-action-schema.js';
import { createdMicros, newestFirstPage, olderThan, type NewestFirstKey } from './newest-first.js';
import { jobsPageQuery, type JobListFilters } from './job-lists.js';

type BulkCounts = Record<BulkJobState, number>;

/** The ids of up to `limit` jobs of the workspace the filters match, newest first (the job lists' query). */
export async function matchingJobIds(q: Queryable, workspaceId: string, filters: JobListFilters, limit: number): Promise<string[]> {
  // jobsPageQuery reads limit + 1 rows: the caller learns whether more matched than it takes.
  const rows = await jobsPageQuery(q, workspaceId, { limit: limit - 1, filters }).execute();
  return rows.map((r) => r.id);
}

/** Which of `ids` are the workspace's jobs. */
export async function jobIdsInWorkspace(q: Queryable, workspaceId: string, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await q.selectFrom('jobs').select('id').where('workspace_id', '=', workspaceId).where('id', 'in', ids).execute();
  return new Set(rows.map((r) => r.id));
}

interface NewBulkAction {
  id: string;
  workspaceId: string;
  apiKeyId: string;
  action: BulkActionName;
  selector: Record<string, unknown>;
  jobIds: readonly string[];
}

/** The action and its jobs, all pending (one transaction: the caller's). */
export async function insertBulkAction(tx: Queryable, a: NewBulkAction): Promise<BulkAction> {
  const row = await tx
    .insertInto('bulk_actions')
    .values({
      id: a.id,
      workspace_id: a.workspaceId,
      api_key_id: a.apiKeyId,
      action: a.action,
      selector: JSON.stringify(a.selector),
      job_count: a.jobIds.length,
      // Nothing to do: completed at once, and never started.
      ...(a.jobIds.length === 0 ? { status: 'completed' as const, completed_at: new Date(), workflow_started: true } : {}),
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  if (a.jobIds.length > 0) {
    await tx
      .insertInto('bulk_action_jobs')
      .values(a.jobIds.map((jobId) => ({ bulk_action_id: a.id, job_id: jobId })))
      .execute();
  }
  return row;
}

export function getBulkAction(q: Queryable, id: string): Promise<BulkAction | undefined> {
  return q.selectFrom('bulk_actions').selectAll().where('id', '=', id).executeTakeFirst();
}

export function getBulkActionInWorkspace(q: Queryable, workspaceId: string, id: string): Promise<BulkAction | undefined> {
  return q.selectFrom('bulk_actions').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
}

/** Its jobs counted by state. */
export async function countsOf(q: Queryable, id: string): Promise<BulkCounts> {
  const rows = await q
    .selectFrom('bulk_action_jobs')
    .select(['status', sql<string>`count(*)::text`.as('n')])
    .where('bulk_action_id', '=', id)
    .groupBy('status')
    .execute();
  const counts = Object.fromEntries(bulkJobStates.map((s) => [s, 0])) as BulkCounts;
  for (const r of rows) counts[r.status] = Number(r.n);
  return counts;
}

/** The next `limit` jobs the run has not applied the action to yet. */
export async function pendingJobIds(q: Queryable, id: string, limit: number): Promise<string[]> {
  const rows = await q
    .selectFrom('bulk_action_jobs')
    .select('job_id')
    .where('bulk_action_id', '=', id)
    .where('status', '=', 'pending')
    .orderBy('job_id')
    .limit(limit)
    .execute();
  return rows.map((r) => r.job_id);
}

/** Marks a pending job with what the action did to it; false when it was marked already (a repeated step). */
export async function markJob(
  q: Queryable,
  id: string,
  jobId: string,
  outcome: { status: Exclude<BulkJobState, 'pending'>; reason?: string | null; resultJobId?: string | null },
): Promise<boolean> {
  const r = await q
    .updateTable('bulk_action_jobs')
    .set({ status: outcome.status, reason: outcome.reason ?? null, result_job_id: outcome.resultJobId ?? null, updated_at: sql<Date>`now()` })
    .where('bulk_action_id', '=', id)
    .where('job_id', '=', jobId)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** The run's first step marks the action: the reconciler leaves it alone from then on. */
export async function markStarted(q: Queryable, id: string): Promise<void> {
  await q.updateTable('bulk_actions').set({ workflow_started: true }).where('id', '=', id).where('workflow_started', '=', false).execute();
}

/** Completes the action once none of its jobs is pending; whether it is completed now. */
export async function completeIfDone(q: Queryable, id: string): Promise<boolean> {
  await q
    .updateTable('bulk_actions')
    .set({ status: 'completed', completed_at: sql<Date>`now()`, updated_at: sql<Date>`now()` })
    .where('id', '=', id)
    .where('status', '=', 'running')
    .where(({ not, exists, selectFrom }) =>
      not(exists(selectFrom('bulk_action_jobs').select('job_id').where('bulk_action_id', '=', id).where('status', '=', 'pending'))),
    )
    .execute();
  return (await getBulkAction(q, id))?.status === 'completed';
}

/** Actions whose run has not marked them since `before` (the gateway's start failed): the reconciler's to start. */
export function unstartedBulkActions(q: Queryable, before: Date, limit: number): Promise<BulkAction[]> {
  return q
    .selectFrom('bulk_actions')
    .selectAll()
    .where('workflow_started', '=', false)
    .where('created_at', '<', before)
    .orderBy('created_at')
    .limit(limit)
    .execute();
}

export async function listBulkActionsPage(
  q: Queryable,
  workspaceId: string,
  opts: { limit: number; after: NewestFirstKey | null },
): Promise<{ rows: BulkAction[]; next: NewestFirstKey | null }> {
  let query = q.selectFrom('bulk_actions').selectAll().select(createdMicros()).where('workspace_id', '=', workspaceId);
  if (opts.after) query = query.where(olderThan(opts.after));
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(opts.limit + 1)
    .execute();
  const page = newestFirstPage(rows, opts.limit);
  return { rows: page.rows as BulkAction[], next: page.next };
}
