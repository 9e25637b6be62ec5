// Batches and their items (0125_batches): the rows the gateway writes at create, the parent
// workflow's activities move, and the records, counts and manifest read. Plain functions over
// Kysely | Transaction. Every move of a batch takes its row's lock first (lockBatch), so a cancel
// either sees an item's job or is seen before the job exists.
import { sql } from 'kysely';
import type { Queryable } from '../index.js';
import type { Batch, BatchError, BatchItem, BatchStatus } from '../batch-schema.js';
import type { Job } from '../schema.js';
import type { Pipeline } from '../pipeline-schema.js';
import { BATCH_COMPLETED_EVENT, batchItemStatuses, type BatchCounts, type BatchItemKind, type BatchItemStatus } from '../../shared/batches.js';
import { createdMicros, newestFirstPage, olderThan, type NewestFirstKey } from './newest-first.js';
import { WEBHOOK_DELIVERIES_CHANNEL } from './webhooks.js';

export interface NewBatchItem {
  customId: string;
  kind: BatchItemKind;
  model: string;
  body: Record<string, unknown>;
  params: Record<string, unknown>;
  deadlineSeconds: number | null;
  price: number;
}

interface NewBatch {
  id: string;
  workspaceId: string;
  projectId: string;
  apiKeyId: string | null;
  webhookUrl: string | null;
  items: NewBatchItem[];
}

/** Rows per multi-row insert of items (Postgres takes at most 65,535 parameters a statement). */
const INSERT_CHUNK = 500;

/** The batch and its items (call inside a transaction: all or nothing). */
export async function insertBatch(q: Queryable, b: NewBatch): Promise<Batch> {
  const row = await q
    .insertInto('batches')
    .values({
      id: b.id,
      workspace_id: b.workspaceId,
      project_id: b.projectId,
      api_key_id: b.apiKeyId,
      item_count: b.items.length,
      price: b.items.reduce((n, i) => n + i.price, 0),
      webhook_url: b.webhookUrl,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  for (let from = 0; from < b.items.length; from += INSERT_CHUNK) {
    const values = b.items.slice(from, from + INSERT_CHUNK).map((i, n) => ({
      batch_id: b.id,
      position: from + n,
      custom_id: i.customId,
      kind: i.kind,
      model: i.model,
      body: JSON.stringify(i.body),
      params: JSON.stringify(i.params),
      deadline_seconds: i.deadlineSeconds,
      price: i.price,
    }));
    await q.insertInto('batch_items').values(values).execute();
  }
  return row;
}

export function getBatch(q: Queryable, id: string): Promise<Batch | undefined> {
  return q.selectFrom('batches').selectAll().where('id', '=', id).executeTakeFirst();
}

export function getBatchInWorkspace(q: Queryable, workspaceId: string, id: string): Promise<Batch | undefined> {
  return q.selectFrom('batches').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
}

/** The batch row, locked for the transaction (every move of a batch takes this lock first). */
export function lockBatch(tx: Queryable, id: string): Promise<Batch> {
  return tx.selectFrom('batches').selectAll().where('id', '=', id).forUpdate().executeTakeFirstOrThrow();
}

export async function updateBatch(q: Queryable, id: string, set: { status?: BatchStatus; workflowStarted?: boolean; completed?: boolean }): Promise<void> {
  await q
    .updateTable('batches')
    .set({
      updated_at: sql<Date>`now()`,
      ...(set.status !== undefined ? { status: set.status } : {}),
      ...(set.workflowStarted !== undefined ? { workflow_started: set.workflowStarted } : {}),
      ...(set.completed !== undefined ? { completed_at: set.completed ? sql<Date>`now()` : null } : {}),
    })
    .where('id', '=', id)
    .execute();
}

/** Up to `limit` items still waiting to start, in order. */
export function waitingItems(q: Queryable, batchId: string, limit: number): Promise<BatchItem[]> {
  return q.selectFrom('batch_items').selectAll().where('batch_id', '=', batchId).where('status', '=', 'waiting').orderBy('position').limit(limit).execute();
}

/** A pipeline item has its pipeline (`pipelineId`) now: made, or resumed by a retry. */
export async function markItemPipelineStarted(q: Queryable, batchId: string, position: number, pipelineId: string): Promise<void> {
  await q
    .updateTable('batch_items')
    .set({ status: 'started', pipeline_id: pipelineId, error: null, updated_at: sql<Date>`now()` })
    .where('batch_id', '=', batchId)
    .where('position', '=', position)
    .execute();
}

/** The item has its job (`jobId`) now. */
export async function markItemStarted(q: Queryable, batchId: string, position: number, jobId: string): Promise<void> {
  await q
    .updateTable('batch_items')
    .set({ status: 'started', job_id: jobId, jobs: sql<string[]>`array_append(jobs, ${jobId}::text)`, error: null, updated_at: sql<Date>`now()` })
    .where('batch_id', '=', batchId)
    .where('position', '=', position)
    .execute();
}

/** Marks an item the job service will not charge (credits, a budget, its route) as failed, with no job. */
export async function markItemRefused(q: Queryable, batchId: string, position: number, error: BatchError): Promise<void> {
  await q
    .updateTable('batch_items')
    .set({ status: 'failed', job_id: null, error: JSON.stringify(error), updated_at: sql<Date>`now()` })
    .where('batch_id', '=', batchId)
    .where('position', '=', position)
    .execute();
}

/** Cancel: the batch is marked, and every item not started is canceled (never charged). Answers how many. */
export async function cancelWaitingItems(tx: Queryable, batchId: string): Promise<number> {
  await tx
    .updateTable('batches')
    .set({ cancel_requested_at: sql<Date>`coalesce(cancel_requested_at, now())`, updated_at: sql<Date>`now()` })
    .where('id', '=', batchId)
    .execute();
  const r = await tx
    .updateTable('batch_items')
    .set({ status: 'canceled', updated_at: sql<Date>`now()` })
    .where('batch_id', '=', batchId)
    .where('status', '=', 'waiting')
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}

/**
 * Retry: every failed item (its job failed other than by a cancel, its pipeline failed and was not
 * canceled, or its charge was refused) waits again as its next attempt, with a job of its own (a
 * pipeline item keeps its pipeline: its next start resumes it from the failed step); the batch
 * runs again. Answers how many.
 */
export async function retryFailedItems(tx: Queryable, batchId: string): Promise<number> {
  const r = await sql<{ n: number }>`
    with failed as (
      select i.position from batch_items i left join jobs j on j.id = i.job_id left join pipelines p on p.id = i.pipeline_id
      where i.batch_id = ${batchId}
        and (i.status = 'failed'
          or (i.status = 'started' and j.status = 'failed' and coalesce(j.error->>'code', '') <> 'canceled')
          or (i.status = 'started' and p.status = 'failed' and p.cancel_requested_at is null))
    )
    update batch_items set status = 'waiting', attempt = attempt + 1, job_id = null, error = null, updated_at = now()
    where batch_id = ${batchId} and position in (select position from failed)
    returning 1 as n`.execute(tx);
  if (r.rows.length > 0) {
    // Unmarked until a run sees it: the reconciler starts a run should the gateway's start find the last one closing.
    await tx
      .updateTable('batches')
      .set({ status: 'running', completed_at: null, workflow_started: false, updated_at: sql<Date>`now()` })
      .where('id', '=', batchId)
      .execute();
  }
  return r.rows.length;
}

/** A started pipeline item's status, from its pipeline's (`p`): running reads as generating. */
const PIPELINE_ITEM_STATUS = sql`case p.status when 'running' then 'generating' else p.status end`;

/** The counts by status (a started item's status is its job's, or its pipeline's). */
export async function countsOf(q: Queryable, batchId: string): Promise<BatchCounts> {
  const r = await sql<{ status: BatchItemStatus; n: string }>`
    select case when i.status = 'started' then coalesce(j.status, ${PIPELINE_ITEM_STATUS}, 'pending') else i.status end as status, count(*)::text as n
    from batch_items i left join jobs j on j.id = i.job_id left join pipelines p on p.id = i.pipeline_id
    where i.batch_id = ${batchId}
    group by 1`.execute(q);
  const counts = Object.fromEntries(batchItemStatuses.map((s) => [s, 0])) as BatchCounts;
  for (const row of r.rows) counts[row.status] = Number(row.n);
  return counts;
}

/** Net credits the batch's jobs (every attempt's, its pipelines' steps' included) cost so far. */
export async function chargedOf(q: Queryable, batchId: string): Promise<number> {
  const r = await sql<{ n: string }>`
    select coalesce(sum(j.credits_charged - j.credits_refunded), 0)::text as n
    from jobs j where j.id in (
      select unnest(jobs) from batch_items where batch_id = ${batchId}
      union all
      select unnest(s.jobs) from pipeline_steps s join batch_items i on s.pipeline_id = i.pipeline_id where i.batch_id = ${batchId})`.execute(q);
  return Number(r.rows[0]?.n ?? 0);
}

/** Whether every item ended: none waits, and every started item's job (or pipeline) is completed or failed. */
export async function allItemsEnded(q: Queryable, batchId: string): Promise<boolean> {
  const r = await sql<{ open: boolean }>`
    select exists (
      select 1 from batch_items i left join jobs j on j.id = i.job_id left join pipelines p on p.id = i.pipeline_id
      where i.batch_id = ${batchId}
        and (i.status = 'waiting' or (i.status = 'started' and coalesce(j.status, p.status, 'pending') not in ('completed', 'failed')))
    ) as open`.execute(q);
  return !r.rows[0]!.open;
}

/**
 * Every item ended: the batch is completed (canceled when a cancel stopped it) and its
 * batch.completed is written to the webhook outbox in the same transaction, its id naming the
 * completion (a repeated step writes nothing more; a retry's end, one more).
 */
export async function completeBatch(tx: Queryable, b: Batch): Promise<void> {
  const status: BatchStatus = b.cancel_requested_at ? 'canceled' : 'completed';
  const row = await tx
    .updateTable('batches')
    .set({ status, completed_at: sql<Date>`now()`, completions: sql<number>`completions + 1`, updated_at: sql<Date>`now()` })
    .where('id', '=', b.id)
    .returning(['completions'])
    .executeTakeFirstOrThrow();
  if (!b.webhook_url) return;
  const data = {
    id: b.id,
    project_id: b.project_id,
    status,
    item_count: b.item_count,
    counts: await countsOf(tx, b.id),
    charged: await chargedOf(tx, b.id),
    manifest: `/v1/batches/${b.id}/manifest`,
  };
  const id = `whk_${b.id}_${BATCH_COMPLETED_EVENT}_${row.completions}`;
  const r = await tx
    .insertInto('webhook_deliveries')
    .values({ id, job_id: null, workspace_id: b.workspace_id, type: BATCH_COMPLETED_EVENT, url: b.webhook_url, job: JSON.stringify(data) })
    .onConflict((oc) => oc.doNothing())
    .returning('id')
    .executeTakeFirst();
  if (r) await sql`select pg_notify(${WEBHOOK_DELIVERIES_CHANNEL}, ${id})`.execute(tx);
}

/** Each item in order with its current job and its pipeline (null: none yet, or none of its kind), for the manifest. */
export async function itemsWithJobs(q: Queryable, batchId: string): Promise<{ item: BatchItem; job: Job | null; pipeline: Pipeline | null }[]> {
  const items = await q.selectFrom('batch_items').selectAll().where('batch_id', '=', batchId).orderBy('position').execute();
  const ids = items.flatMap((i) => (i.job_id ? [i.job_id] : []));
  const jobs = ids.length ? await q.selectFrom('jobs').selectAll().where('id', 'in', ids).execute() : [];
  const byId = new Map(jobs.map((j) => [j.id, j]));
  const pipelineIds = items.flatMap((i) => (i.pipeline_id ? [i.pipeline_id] : []));
  const pipelines = pipelineIds.length ? await q.selectFrom('pipelines').selectAll().where('id', 'in', pipelineIds).execute() : [];
  const pipelineById = new Map(pipelines.map((p) => [p.id, p]));
  return items.map((item) => ({
    item,
    job: item.job_id ? (byId.get(item.job_id) ?? null) : null,
    pipeline: item.pipeline_id ? (pipelineById.get(item.pipeline_id) ?? null) : null,
  }));
}

/** Net credits of each job (every attempt of an item counts toward it), by job id. */
export async function creditsByJob(q: Queryable, jobIds: string[]): Promise<Map<string, number>> {
  if (!jobIds.length) return new Map();
  const rows = await q.selectFrom('jobs').select(['id', 'credits_charged', 'credits_refunded']).where('id', 'in', jobIds).execute();
  return new Map(rows.map((r) => [r.id, r.credits_charged - r.credits_refunded]));
}

export async function listBatchesPage(
  q: Queryable,
  workspaceId: string,
  opts: { limit: number; after: NewestFirstKey | null; status?: BatchStatus },
): Promise<{ rows: Batch[]; next: NewestFirstKey | null }> {
  let query = q.selectFrom('batches').selectAll().select(createdMicros()).where('workspace_id', '=', workspaceId);
  if (opts.status) query = query.where('status', '=', opts.status);
  if (opts.after) query = query.where(olderThan(opts.after));
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(opts.limit + 1)
    .execute();
  const page = newestFirstPage(rows, opts.limit);
  return { rows: page.rows as Batch[], next: page.next };
}

/**
 * Running batches whose parent workflow has not marked them started since their create or their
 * last retry (`updated_at`) before `before`: the gateway's start after commit failed, or a retry
 * came while the last run was closing. The reconciler starts them.
 */
export function unstartedBatches(q: Queryable, before: Date, limit: number): Promise<Batch[]> {
  return q
    .selectFrom('batches')
    .selectAll()
    .where('status', '=', 'running')
    .where('workflow_started', '=', false)
    .where('updated_at', '<', before)
    .orderBy('updated_at')
    .limit(limit)
    .execute();
}
