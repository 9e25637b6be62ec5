// Pipelines and their steps (0032_pipelines): the rows the gateway writes at create, the parent
// workflow's activities move and the records read. Plain functions over Kysely | Transaction.
import { labelKeys } from '../../shared/labels.js';
import { sql } from 'kysely';
import type { Queryable } from '../index.js';
import type { Job } from '../schema.js';
import type { Pipeline, PipelineError, PipelineStep, PipelineStepOutput } from '../pipeline-schema.js';
import type { PipelineStatus, PipelineWebhookEventName, StepStatus, StoredReference } from '../../shared/pipelines.js';
import type { JobKind } from '../../kinds/index.js';
import type { JobPriority } from '../../shared/job-model.js';
import { createdMicros, newestFirstPage, olderThan, type NewestFirstKey } from './newest-first.js';
import { labelCreatedMicros, labelOlderThan, otherLabels, type LabelSubject } from './label-filters.js';

export interface NewPipelineStep {
  stepId: string;
  kind: JobKind;
  model: string;
  body: Record<string, unknown>;
  params: Record<string, unknown>;
  refs: StoredReference[];
  priority: JobPriority;
  deadlineSeconds: number | null;
  price: number;
}

interface NewPipeline {
  id: string;
  workspaceId: string;
  projectId: string;
  apiKeyId: string | null;
  price: number;
  webhookUrl: string | null;
  webhookEvents: PipelineWebhookEventName[] | null;
  steps: NewPipelineStep[];
  /** The create's metadata and tags (0115_labels). */
  metadata?: Record<string, string>;
  tags?: string[];
  /** The batch whose pipeline item makes it (0150_batch_pipelines). */
  batchId?: string | null;
}

/** The pipeline and its steps (call inside a transaction: both or neither). */
export async function insertPipeline(q: Queryable, p: NewPipeline): Promise<Pipeline> {
  const row = await q
    .insertInto('pipelines')
    .values({
      id: p.id,
      workspace_id: p.workspaceId,
      project_id: p.projectId,
      api_key_id: p.apiKeyId,
      price: p.price,
      webhook_url: p.webhookUrl,
      webhook_events: p.webhookEvents,
      metadata: JSON.stringify(p.metadata ?? {}),
      tags: p.tags ?? [],
      batch_id: p.batchId ?? null,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  const labels = labelKeys(row.metadata, row.tags);
  if (labels.length > 0) {
    // Its created_at as stored (microseconds: a JS Date keeps milliseconds), for the list's keyset.
    await sql`insert into pipeline_labels (workspace_id, label, created_at, pipeline_id)
              select workspace_id, l, created_at, id from pipelines cross join unnest(${labels}::text[]) l where id = ${row.id}`.execute(q);
  }
  await q
    .insertInto('pipeline_steps')
    .values(
      p.steps.map((s, position) => ({
        pipeline_id: p.id,
        position,
        step_id: s.stepId,
        kind: s.kind,
        model: s.model,
        body: JSON.stringify(s.body),
        params: JSON.stringify(s.params),
        refs: JSON.stringify(s.refs),
        priority: s.priority,
        deadline_seconds: s.deadlineSeconds,
        price: s.price,
      })),
    )
    .execute();
  return row;
}

export function getPipeline(q: Queryable, id: string): Promise<Pipeline | undefined> {
  return q.selectFrom('pipelines').selectAll().where('id', '=', id).executeTakeFirst();
}

export function getPipelineInWorkspace(q: Queryable, workspaceId: string, id: string): Promise<Pipeline | undefined> {
  return q.selectFrom('pipelines').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
}

/** The pipeline row, locked for the transaction (every move of a pipeline takes this lock first). */
export function lockPipeline(tx: Queryable, id: string): Promise<Pipeline> {
  return tx.selectFrom('pipelines').selectAll().where('id', '=', id).forUpdate().executeTakeFirstOrThrow();
}

/**
 * The pipeline row under a share lock: its moves (which take the row's update lock) wait until
 * the transaction ends, so what it read of the pipeline and its steps holds until then.
 */
export function sharePipeline(tx: Queryable, id: string): Promise<Pipeline | undefined> {
  return tx.selectFrom('pipelines').selectAll().where('id', '=', id).forShare().executeTakeFirst();
}

export function stepsOf(q: Queryable, pipelineId: string): Promise<PipelineStep[]> {
  return q.selectFrom('pipeline_steps').selectAll().where('pipeline_id', '=', pipelineId).orderBy('position').execute();
}

export function stepsOfMany(q: Queryable, pipelineIds: string[]): Promise<PipelineStep[]> {
  if (pipelineIds.length === 0) return Promise.resolve([]);
  return q.selectFrom('pipeline_steps').selectAll().where('pipeline_id', 'in', pipelineIds).orderBy('pipeline_id').orderBy('position').execute();
}

export function getStep(q: Queryable, pipelineId: string, position: number): Promise<PipelineStep> {
  return q.selectFrom('pipeline_steps').selectAll().where('pipeline_id', '=', pipelineId).where('position', '=', position).executeTakeFirstOrThrow();
}

export function findStep(q: Queryable, pipelineId: string, position: number): Promise<PipelineStep | undefined> {
  return q.selectFrom('pipeline_steps').selectAll().where('pipeline_id', '=', pipelineId).where('position', '=', position).executeTakeFirst();
}

/** The jobs of these ids (the steps' attempts), by id. */
export async function jobsByIds(q: Queryable, ids: string[]): Promise<Map<string, Job>> {
  if (ids.length === 0) return new Map();
  const rows = await q.selectFrom('jobs').selectAll().where('id', 'in', ids).execute();
  return new Map(rows.map((j) => [j.id, j]));
}

export async function updateStep(
  q: Queryable,
  pipelineId: string,
  position: number,
  set: {
    status?: StepStatus;
    attempt?: number;
    jobId?: string | null;
    addJob?: string;
    outputs?: PipelineStepOutput[] | null;
    error?: PipelineError | null;
    body?: Record<string, unknown>;
    params?: Record<string, unknown>;
    refs?: StoredReference[];
    model?: string;
    price?: number;
    priority?: JobPriority;
    deadlineSeconds?: number | null;
  },
): Promise<void> {
  await q
    .updateTable('pipeline_steps')
    .set({
      updated_at: sql<Date>`now()`,
      ...(set.status !== undefined ? { status: set.status } : {}),
      ...(set.attempt !== undefined ? { attempt: set.attempt } : {}),
      ...(set.jobId !== undefined ? { job_id: set.jobId } : {}),
      ...(set.addJob !== undefined
        ? { jobs: sql<string[]>`case when ${set.addJob} = any(jobs) then jobs else array_append(jobs, ${set.addJob}::text) end` }
        : {}),
      ...(set.outputs !== undefined ? { outputs: set.outputs === null ? null : JSON.stringify(set.outputs) } : {}),
      ...(set.error !== undefined ? { error: set.error === null ? null : JSON.stringify(set.error) } : {}),
      ...(set.body !== undefined ? { body: JSON.stringify(set.body) } : {}),
      ...(set.params !== undefined ? { params: JSON.stringify(set.params) } : {}),
      ...(set.refs !== undefined ? { refs: JSON.stringify(set.refs) } : {}),
      ...(set.model !== undefined ? { model: set.model } : {}),
      ...(set.price !== undefined ? { price: set.price } : {}),
      ...(set.priority !== undefined ? { priority: set.priority } : {}),
      ...(set.deadlineSeconds !== undefined ? { deadline_seconds: set.deadlineSeconds } : {}),
    })
    .where('pipeline_id', '=', pipelineId)
    .where('position', '=', position)
    .execute();
}

/** Steps still `waiting` from `fromPosition` on get `status` (a canceled pipeline's never-run steps: skipped). */
export async function markWaitingSteps(q: Queryable, pipelineId: string, fromPosition: number, status: StepStatus): Promise<void> {
  await q
    .updateTable('pipeline_steps')
    .set({ status, updated_at: sql<Date>`now()` })
    .where('pipeline_id', '=', pipelineId)
    .where('position', '>=', fromPosition)
    .where('status', '=', 'waiting')
    .execute();
}

export async function updatePipeline(
  q: Queryable,
  id: string,
  set: {
    status?: PipelineStatus;
    error?: PipelineError | null;
    cancelRequested?: boolean;
    workflowStarted?: boolean;
    price?: number;
    completed?: boolean;
    failedRunId?: string | null;
  },
): Promise<void> {
  await q
    .updateTable('pipelines')
    .set({
      updated_at: sql<Date>`now()`,
      event_seq: sql<number>`event_seq + 1`,
      ...(set.status !== undefined ? { status: set.status } : {}),
      ...(set.error !== undefined ? { error: set.error === null ? null : JSON.stringify(set.error) } : {}),
      ...(set.cancelRequested ? { cancel_requested_at: sql<Date>`coalesce(cancel_requested_at, now())` } : {}),
      ...(set.workflowStarted !== undefined ? { workflow_started: set.workflowStarted } : {}),
      ...(set.price !== undefined ? { price: set.price } : {}),
      ...(set.completed !== undefined ? { completed_at: set.completed ? sql<Date>`now()` : null } : {}),
      ...(set.failedRunId !== undefined ? { failed_run_id: set.failedRunId } : {}),
    })
    .where('id', '=', id)
    .execute();
}

/** A new body for the failed step a resume runs again (validated as at create). */
type ResumedStepBody = Pick<NewPipelineStep, 'body' | 'params' | 'refs' | 'model' | 'price' | 'priority' | 'deadlineSeconds'>;

/**
 * Resume (under the pipeline's lock, the pipeline failed and not canceled): its failed step waits
 * again as its next attempt, with `changed` as its new body when given, and the pipeline runs
 * again, unmarked until its new run's first step (so a start that fails is the reconciler's to
 * retry). Earlier steps keep their outputs. Answers how many steps it has.
 */
export async function reopenFailedStep(tx: Queryable, pipelineId: string, changed?: ResumedStepBody): Promise<number> {
  const all = await stepsOf(tx, pipelineId);
  const failed = all.find((s) => s.status !== 'completed');
  if (!failed) throw new Error(`pipeline ${pipelineId} has no step to resume`);
  await updateStep(tx, pipelineId, failed.position, { attempt: failed.attempt + 1, status: 'waiting', jobId: null, error: null, ...changed });
  const price = all.reduce((n, s) => n + (changed && s.position === failed.position ? changed.price : s.price), 0);
  await updatePipeline(tx, pipelineId, { status: 'running', error: null, completed: false, price, failedRunId: null, workflowStarted: false });
  return all.length;
}

/**
 * How many of the workspace's pipelines created through POST /v1/pipelines are pending or running
 * (pipelines_active_idx): a batch's pipeline items are bounded by their batch, not by this.
 */
export async function activePipelines(q: Queryable, workspaceId: string): Promise<number> {
  const r = await q
    .selectFrom('pipelines')
    .select(sql<string>`count(*)`.as('n'))
    .where('workspace_id', '=', workspaceId)
    .where('status', 'in', ['pending', 'running'])
    .where('batch_id', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Pipelines created before `before` whose parent workflow never ran its first step (the reconciler starts them; pipelines_unstarted_idx). */
export function unstartedPipelines(q: Queryable, before: Date, limit: number): Promise<Pipeline[]> {
  return unstartedPipelinesQuery(q, before, limit).execute();
}

/** The query of unstartedPipelines (a test reads its plan). */
export function unstartedPipelinesQuery(q: Queryable, before: Date, limit: number) {
  return q
    .selectFrom('pipelines')
    .selectAll()
    .where('workflow_started', '=', false)
    .where('status', 'in', ['pending', 'running'])
    .where('created_at', '<', before)
    .orderBy('created_at')
    .limit(limit);
}

/** When the oldest pipeline still pending or running was created (none: undefined): no run of a live pipeline closed before it. */
export async function oldestActivePipelineCreatedAt(q: Queryable): Promise<Date | undefined> {
  const row = await q
    .selectFrom('pipelines')
    .select((eb) => eb.fn.min('created_at').as('at'))
    .where('status', 'in', ['pending', 'running'])
    .executeTakeFirst();
  return row?.at ? new Date(row.at as unknown as string | Date) : undefined;
}

/** Which of `ids` are pipelines still pending or running. */
export async function activePipelineIds(q: Queryable, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await q.selectFrom('pipelines').select('id').where('id', 'in', ids).where('status', 'in', ['pending', 'running']).execute();
  return rows.map((r) => r.id);
}

/** Pipelines pending or running whose row has not moved since `before` (the stall check's candidates; pipelines_quiet_idx). */
export function quietActivePipelines(q: Queryable, before: Date, limit: number): Promise<Pipeline[]> {
  return quietActivePipelinesQuery(q, before, limit).execute();
}

/** The query of quietActivePipelines (a test reads its plan). */
export function quietActivePipelinesQuery(q: Queryable, before: Date, limit: number) {
  return q
    .selectFrom('pipelines')
    .selectAll()
    .where('status', 'in', ['pending', 'running'])
    .where('updated_at', '<', before)
    .orderBy('updated_at')
    .limit(limit);
}

/** A page of the workspace's pipelines, newest first (pipelines_list_idx; with labels, the first label's index: label-filters.ts). */
export async function listPipelinesPage(
  q: Queryable,
  workspaceId: string,
  opts: { limit: number; after: NewestFirstKey | null; status?: PipelineStatus; labels?: string[] },
): Promise<{ rows: Pipeline[]; next: NewestFirstKey | null }> {
  if (opts.labels?.length) return labelledPipelinesPage(q, workspaceId, { ...opts, labels: opts.labels });
  let query = q.selectFrom('pipelines').selectAll().select(createdMicros()).where('workspace_id', '=', workspaceId);
  if (opts.status) query = query.where('status', '=', opts.status);
  if (opts.after) query = query.where(olderThan(opts.after));
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(opts.limit + 1)
    .execute();
  const page = newestFirstPage(rows, opts.limit);
  return { rows: page.rows as Pipeline[], next: page.next };
}

const PIPELINE_LABELS: LabelSubject = { labels: 'pipeline_labels', id: 'pipeline_id' };

async function labelledPipelinesPage(
  q: Queryable,
  workspaceId: string,
  opts: { limit: number; after: NewestFirstKey | null; status?: PipelineStatus; labels: string[] },
): Promise<{ rows: Pipeline[]; next: NewestFirstKey | null }> {
  let query = q
    .selectFrom('pipeline_labels as l')
    .innerJoin('pipelines as p', 'p.id', 'l.pipeline_id')
    .selectAll('p')
    .select(labelCreatedMicros())
    .where('l.workspace_id', '=', workspaceId)
    .where('l.label', '=', opts.labels[0]!)
    .where(otherLabels(PIPELINE_LABELS, opts.labels.slice(1)));
  if (opts.status) query = query.where('p.status', '=', opts.status);
  if (opts.after) query = query.where(labelOlderThan(PIPELINE_LABELS, opts.after));
  const rows = await query
    .orderBy('l.created_at', 'desc')
    .orderBy('l.pipeline_id', 'desc')
    .limit(opts.limit + 1)
    .execute();
  const page = newestFirstPage(rows, opts.limit);
  return { rows: page.rows as Pipeline[], next: page.next };
}
