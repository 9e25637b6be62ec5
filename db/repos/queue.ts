// What the queues hold, read from the job rows: a job waits in our queues from its create until its
// request first reaches its provider (`submitted_at`, 0025_queue_view). Every read here walks one of
// that migration's indexes: `jobs_waiting_idx` (waiting jobs by workspace, provider and age) or
// `jobs_submitted_at_idx` (recent submits).
import { sql } from 'kysely';
import { runPrepared, type Queryable } from '../index.js';
import type { Job, JobTable } from '../schema.js';
import { jobPriorities, type JobPriority } from '../../shared/job-model.js';

/** The statuses of a job that may still be waiting (a waiting job also has no `submitted_at`). */
const inFlight = sql`status in ('pending', 'generating')`;

/** The priorities dispatched before `priority` (higher), and those dispatched with it (the same). */
export function prioritiesAbove(priority: JobPriority): JobPriority[] {
  return jobPriorities.slice(0, jobPriorities.indexOf(priority));
}

/**
 * The job's place in its workspace's share of its provider's queue, 1 for the next to go; null once
 * its request reached its provider (or it finished). Temporal dispatches a queue's tasks by priority
 * key first (lower goes first), then across fairness keys (the workspace) in proportion to their
 * weights, in arrival order within a key and priority (shared/task-priority.ts; Temporal's
 * "Task Queue Priority and Fairness", docs.temporal.io/develop/task-queue-priority-fairness, and the
 * `temporal.api.common.v1.Priority` message: "First, consider priority ... Then, consider fairness";
 * enforced per task queue partition, and our queues have one). So ahead of the job are its
 * workspace's waiting jobs on the same provider of a higher priority, whenever created, and those
 * of its priority created before it. One range of `jobs_waiting_idx`.
 */
export async function queuePosition(db: Queryable, job: PositionedJob): Promise<number | null> {
  if (job.submitted_at !== null || (job.status !== 'pending' && job.status !== 'generating')) return null;
  const r = await jobsAheadQuery(job).execute(db);
  return (r.rows[0]?.ahead ?? 0) + 1;
}

/** What queuePosition reads of the job. */
type PositionedJob = Pick<Job, 'id' | 'workspace_id' | 'params' | 'priority' | 'status' | 'submitted_at'>;

/**
 * The count of the jobs ahead of `job` (queuePosition's one statement; tests EXPLAIN it). The job's
 * creation moment is read from its row: a Date parameter would lose the column's microseconds.
 */
export function jobsAheadQuery(job: PositionedJob) {
  const provider = (job.params as { provider?: string }).provider ?? '';
  const above = prioritiesAbove(job.priority);
  return sql<{ ahead: number }>`
    select count(*)::int as ahead from jobs
    where workspace_id = ${job.workspace_id} and params->>'provider' = ${provider} and ${inFlight} and submitted_at is null and id <> ${job.id}
      and (${above.length > 0 ? sql`priority in (${sql.join(above)})` : sql`false`}
           or (priority = ${job.priority} and (created_at, id) < (select created_at, id from jobs where id = ${job.id})))`;
}

/**
 * A status read's one statement: the job `id` of the workspace (of `kind`) with its queue position
 * (queuePosition's count, the same range of `jobs_waiting_idx`, as a subquery over the row, run only
 * while the job waits), and only while the API key `liveKeyId` is not revoked, read in the same
 * snapshot (the gateway skips its key listener's sync for this read: api/auth.ts). So a status poll
 * is one round trip whether the job waits or not. Undefined: no such job, or the key is revoked.
 * `queue_position` is null once its request reached its provider (or it finished).
 */
type StatusReadArgs = { workspaceId: string; id: string; kind: Job['kind']; liveKeyId: string };

/** Every column of a job, named (a prepared statement must not select `*`: see runPrepared). */
const jobColumns = Object.keys({
  id: true,
  kind: true,
  workspace_id: true,
  project_id: true,
  api_key_id: true,
  model: true,
  status: true,
  params: true,
  error: true,
  price: true,
  outputs: true,
  provider_ref: true,
  workflow_started: true,
  status_run_id: true,
  created_at: true,
  updated_at: true,
  started_at: true,
  finished_at: true,
  phase: true,
  percent: true,
  queue_position: true,
  attempt: true,
  progress_updated_at: true,
  event_seq: true,
  reconcile_lease_until: true,
  webhook_url: true,
  webhook_events: true,
  outputs_removed_at: true,
  provider_attempts: true,
  cancel_requested_at: true,
  cancel_kept: true,
  canceled_after_submit_at: true,
  claimed_at: true,
  priority: true,
  fairness_weight: true,
  deadline_at: true,
  submitted_at: true,
  credits_charged: true,
  credits_refunded: true,
  metadata: true,
  tags: true,
  reuse_key: true,
  reused_from: true,
} satisfies Record<keyof JobTable, true>).map((c) => `j.${c}` as `j.${keyof JobTable}`);

function statusReadQuery(db: Queryable, q: StatusReadArgs) {
  const above = sql.join(
    jobPriorities.map((p) => {
      const ps = prioritiesAbove(p);
      return sql`when ${p} then ${ps.length > 0 ? sql`a.priority in (${sql.join(ps)})` : sql`false`}`;
    }),
    sql` `,
  );
  return db
    .selectFrom('jobs as j')
    .select(jobColumns)
    .select(
      sql<number | null>`case when j.submitted_at is null and j.status in ('pending', 'generating') then (
        select count(*)::int + 1 from jobs a
         where a.workspace_id = j.workspace_id and a.params->>'provider' = coalesce(j.params->>'provider', '')
           and a.status in ('pending', 'generating') and a.submitted_at is null and a.id <> j.id
           and ((case j.priority ${above} else false end)
                or (a.priority = j.priority and (a.created_at, a.id) < (j.created_at, j.id)))
      ) end`.as('queue_position'),
    )
    .where('j.id', '=', q.id)
    .where('j.workspace_id', '=', q.workspaceId)
    .where('j.kind', '=', q.kind)
    .where(sql<boolean>`exists (select 1 from api_keys k where k.id = ${q.liveKeyId} and k.revoked_at is null)`);
}

type StatusRead = NonNullable<Awaited<ReturnType<ReturnType<typeof statusReadQuery>['executeTakeFirst']>>>;

// The statement compiled once, with markers where the request's values go.
const marks: StatusReadArgs = { id: '\u0000id', workspaceId: '\u0000workspace', kind: '\u0000kind' as Job['kind'], liveKeyId: '\u0000key' };
let compiledStatusRead: { sql: string; parameters: readonly unknown[] } | undefined;

/**
 * The status poll's one statement: the job (in the key's workspace, of the route's kind), its place
 * in the queue while it waits, and only if the key is not revoked. A named prepared statement: the
 * API's hottest read is parsed and planned once per connection, not per poll.
 */
export async function jobForStatusRead(db: Queryable, q: StatusReadArgs): Promise<StatusRead | undefined> {
  compiledStatusRead ??= statusReadQuery(db, marks).compile();
  const values = compiledStatusRead.parameters.map((v) =>
    v === marks.id ? q.id : v === marks.workspaceId ? q.workspaceId : v === marks.kind ? q.kind : v === marks.liveKeyId ? q.liveKeyId : v,
  );
  const rows = await runPrepared<StatusRead>(db, 'mediagen_job_status_read', compiledStatusRead.sql, values);
  return rows ? rows[0] : await statusReadQuery(db, q).executeTakeFirst();
}

/** Waiting jobs of one workspace on one provider queue, per model and priority. */
export interface WaitingCount {
  workspaceId: string;
  provider: string;
  model: string;
  priority: JobPriority;
  waiting: number;
  /** Age of the oldest of them, in seconds. */
  oldestSeconds: number;
  /** Their fairness weight (the largest, should the workspace's weight have changed between creates). */
  weight: number;
}

/** Every waiting job counted by workspace, provider, model and priority (the whole of `jobs_waiting_idx`: only waiting jobs are in it). */
export async function waitingCounts(db: Queryable): Promise<WaitingCount[]> {
  const r = await sql<{ workspace_id: string; provider: string; model: string; priority: JobPriority; waiting: number; oldest: number; weight: number }>`
    select workspace_id, coalesce(params->>'provider', '') as provider, model, priority, count(*)::int as waiting,
           extract(epoch from now() - min(created_at))::float8 as oldest, max(fairness_weight)::float8 as weight
    from jobs where ${inFlight} and submitted_at is null
    group by 1, 2, 3, 4`.execute(db);
  return r.rows.map((x) => ({
    workspaceId: x.workspace_id,
    provider: x.provider,
    model: x.model,
    priority: x.priority,
    waiting: x.waiting,
    oldestSeconds: x.oldest,
    weight: x.weight,
  }));
}

/** The workspace's fair-share weight (1 when the row is gone). */
export async function workspaceWeight(db: Queryable, workspaceId: string): Promise<number> {
  const row = await db.selectFrom('workspaces').select('fair_share_weight').where('id', '=', workspaceId).executeTakeFirst();
  return row?.fair_share_weight ?? 1;
}

/** The waits (create → first submit) of the jobs submitted in a recent window, per provider, model and priority. */
export interface RecentWaits {
  provider: string;
  model: string;
  priority: JobPriority;
  submitted: number;
  p50Seconds: number;
  p90Seconds: number;
}

export async function recentWaits(db: Queryable, windowSeconds: number): Promise<RecentWaits[]> {
  const r = await sql<{ provider: string; model: string; priority: JobPriority; submitted: number; p50: number; p90: number }>`
    select coalesce(params->>'provider', '') as provider, model, priority, count(*)::int as submitted,
           percentile_cont(0.5) within group (order by extract(epoch from submitted_at - created_at))::float8 as p50,
           percentile_cont(0.9) within group (order by extract(epoch from submitted_at - created_at))::float8 as p90
    from jobs where submitted_at > now() - make_interval(secs => ${windowSeconds})
    group by 1, 2, 3`.execute(db);
  return r.rows.map((x) => ({ provider: x.provider, model: x.model, priority: x.priority, submitted: x.submitted, p50Seconds: x.p50, p90Seconds: x.p90 }));
}

/** One workspace's queue as the operator metrics show it. */
export interface WorkspaceQueue {
  workspaceId: string;
  /** Jobs created and not yet submitted to a provider. */
  queued: number;
  /** Jobs submitted and not finished. */
  running: number;
  /** Age of its oldest queued job, in seconds (0 when none). */
  oldestQueuedSeconds: number;
  /** Jobs of it submitted in the recent window. */
  submittedRecently: number;
  /** Median and 90th percentile of the waits of those jobs (create → submit), in seconds; 0 when none. */
  waitP50Seconds: number;
  waitP90Seconds: number;
}

/**
 * Every workspace with a job in flight or submitted in the recent window. Jobs in flight are few
 * (the reconciler reads them the same way); the recent submits come from `jobs_submitted_at_idx`.
 */
export async function workspaceQueues(db: Queryable, windowSeconds: number): Promise<WorkspaceQueue[]> {
  const r = await sql<{
    workspace_id: string;
    queued: number;
    running: number;
    oldest: number | null;
    submitted: number;
    p50: number | null;
    p90: number | null;
  }>`
    with flight as (
      select workspace_id,
             count(*) filter (where submitted_at is null)::int as queued,
             count(*) filter (where submitted_at is not null)::int as running,
             extract(epoch from now() - min(created_at) filter (where submitted_at is null))::float8 as oldest
      from jobs where ${inFlight} group by workspace_id
    ), recent as (
      select workspace_id, count(*)::int as submitted,
             percentile_cont(0.5) within group (order by extract(epoch from submitted_at - created_at))::float8 as p50,
             percentile_cont(0.9) within group (order by extract(epoch from submitted_at - created_at))::float8 as p90
      from jobs where submitted_at > now() - make_interval(secs => ${windowSeconds}) group by workspace_id
    )
    select coalesce(f.workspace_id, r.workspace_id) as workspace_id, coalesce(f.queued, 0) as queued, coalesce(f.running, 0) as running,
           f.oldest, coalesce(r.submitted, 0) as submitted, r.p50, r.p90
    from flight f full join recent r on r.workspace_id = f.workspace_id`.execute(db);
  return r.rows.map((x) => ({
    workspaceId: x.workspace_id,
    queued: x.queued,
    running: x.running,
    oldestQueuedSeconds: x.oldest ?? 0,
    submittedRecently: x.submitted,
    waitP50Seconds: x.p50 ?? 0,
    waitP90Seconds: x.p90 ?? 0,
  }));
}
