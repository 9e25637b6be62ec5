// The job read model and its credits. Creating a job debits its price and writes the ledger's
// `charge` in the caller's transaction; settling makes the job's net charge equal its price
// (completed, or about to run again) or zero (failed), writing only the difference — so retries,
// worker crashes and operator resets charge exactly once.
import { sql } from 'kysely';
import type { Queryable, Tx } from '../index.js';
import type { Job, JobError, JobKind, JobOutput, JobPhase, JobStatus, LedgerReason } from '../schema.js';

export class InsufficientCreditsError extends Error {
  override name = 'InsufficientCreditsError';
  constructor(
    readonly required: number,
    readonly available: number,
  ) {
    super(`insufficient credits: ${required} required, ${available} available`);
  }
}

/** Debits `amount` if the balance allows it; never goes below zero. Returns the new balance. */
export async function debitCredits(tx: Queryable, workspaceId: string, amount: number): Promise<number> {
  const row = await tx
    .updateTable('workspaces')
    .set({ credits: sql`credits - ${amount}`, updated_at: sql`now()` })
    .where('id', '=', workspaceId)
    .where('credits', '>=', amount)
    .returning('credits')
    .executeTakeFirst();
  if (row) return row.credits;
  const ws = await tx.selectFrom('workspaces').select('credits').where('id', '=', workspaceId).executeTakeFirst();
  throw new InsufficientCreditsError(amount, ws?.credits ?? 0);
}

export interface NewJobInput {
  id: string;
  kind: JobKind;
  workspaceId: string;
  projectId: string;
  apiKeyId: string;
  model: string;
  params: Record<string, unknown>;
  price: number;
}

/** Inserts the pending job and charges its price, inside the caller's transaction. */
export async function insertJobWithCharge(tx: Tx, job: NewJobInput): Promise<Job> {
  if (job.price > 0) await debitCredits(tx, job.workspaceId, job.price);
  const row = await tx
    .insertInto('jobs')
    .values({
      id: job.id,
      kind: job.kind,
      workspace_id: job.workspaceId,
      project_id: job.projectId,
      api_key_id: job.apiKeyId,
      model: job.model,
      status: 'pending',
      params: JSON.stringify(job.params),
      price: job.price,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  await tx
    .insertInto('credit_ledger')
    .values({ workspace_id: job.workspaceId, job_id: job.id, job_seq: 1, delta: -job.price, reason: 'charge', note: null })
    .execute();
  return row;
}

export async function getJob(db: Queryable, id: string): Promise<Job | undefined> {
  return db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function getJobInWorkspace(db: Queryable, workspaceId: string, id: string, kind?: JobKind): Promise<Job | undefined> {
  let q = db.selectFrom('jobs').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId);
  if (kind) q = q.where('kind', '=', kind);
  return q.executeTakeFirst();
}

async function lockJob(tx: Tx, id: string): Promise<Job> {
  const job = await tx.selectFrom('jobs').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
  if (!job) throw new Error(`job ${id} not found`);
  return job;
}

/** The job's net charge so far (positive = credits taken from the workspace). */
async function netCharge(tx: Tx, jobId: string): Promise<{ net: number; lastSeq: number }> {
  const r = await tx
    .selectFrom('credit_ledger')
    .select([sql<number>`coalesce(-sum(delta), 0)::int`.as('net'), sql<number>`coalesce(max(job_seq), 0)::int`.as('last_seq')])
    .where('job_id', '=', jobId)
    .executeTakeFirstOrThrow();
  return { net: r.net, lastSeq: r.last_seq };
}

/**
 * Make the job's net charge equal `target`, writing one ledger row for the difference (or none).
 * The job row lock serializes concurrent settlements; (job_id, job_seq) uniqueness backs it up.
 * Returns the credits moved: positive = charged now, negative = refunded now.
 */
async function settleTo(tx: Tx, job: Job, target: number): Promise<number> {
  const { net, lastSeq } = await netCharge(tx, job.id);
  const diff = target - net;
  if (diff === 0) return 0;
  let reason: LedgerReason;
  if (diff > 0) {
    await debitCredits(tx, job.workspace_id, diff);
    reason = 'recharge';
  } else {
    await tx
      .updateTable('workspaces')
      .set({ credits: sql`credits + ${-diff}`, updated_at: sql`now()` })
      .where('id', '=', job.workspace_id)
      .execute();
    reason = 'refund';
  }
  await tx
    .insertInto('credit_ledger')
    .values({ workspace_id: job.workspace_id, job_id: job.id, job_seq: lastSeq + 1, delta: -diff, reason, note: null })
    .execute();
  return diff;
}

/**
 * The job starts (or, after an operator reset, starts again): status `generating`, error cleared,
 * and its price charged again if an earlier failure refunded it. Throws InsufficientCreditsError
 * when a re-run cannot be paid for.
 */
export async function markGenerating(tx: Tx, jobId: string): Promise<Job> {
  const job = await lockJob(tx, jobId);
  await settleTo(tx, job, job.price);
  return tx
    .updateTable('jobs')
    .set({
      status: 'generating',
      error: null,
      outputs: null,
      finished_at: null,
      started_at: sql`coalesce(started_at, now())`,
      updated_at: sql`now()`,
    })
    .where('id', '=', jobId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function markCompleted(tx: Tx, jobId: string, outputs: JobOutput[]): Promise<{ charged: number }> {
  const job = await lockJob(tx, jobId);
  const charged = await settleTo(tx, job, job.price);
  await tx
    .updateTable('jobs')
    .set({ status: 'completed', outputs: JSON.stringify(outputs), error: null, finished_at: sql`now()`, updated_at: sql`now()` })
    .where('id', '=', jobId)
    .execute();
  return { charged };
}

/** The job failed (or was canceled): status `failed` with its error, and the whole charge refunded. */
export async function markFailed(tx: Tx, jobId: string, error: JobError): Promise<{ refunded: number }> {
  const job = await lockJob(tx, jobId);
  const moved = await settleTo(tx, job, 0);
  await tx
    .updateTable('jobs')
    .set({ status: 'failed', error: JSON.stringify(error), finished_at: sql`now()`, updated_at: sql`now()` })
    .where('id', '=', jobId)
    .execute();
  return { refunded: -moved };
}

/** Settle by the job's current status (completed → price, failed → zero); for reconciliation. */
export async function settleByStatus(tx: Tx, jobId: string): Promise<number> {
  const job = await lockJob(tx, jobId);
  if (job.status === 'completed') return settleTo(tx, job, job.price);
  if (job.status === 'failed') return settleTo(tx, job, 0);
  return 0;
}

export async function setProviderRef(db: Queryable, jobId: string, ref: Record<string, unknown> | null): Promise<void> {
  await db
    .updateTable('jobs')
    .set({ provider_ref: ref === null ? null : JSON.stringify(ref), updated_at: sql`now()` })
    .where('id', '=', jobId)
    .execute();
}

export async function markWorkflowStarted(db: Queryable, jobId: string): Promise<void> {
  await db.updateTable('jobs').set({ workflow_started: true }).where('id', '=', jobId).execute();
}

/** Jobs whose workflow start failed or never happened (older than `olderThanMs`). */
export async function findUnstartedJobs(db: Queryable, olderThanMs: number, limit = 100): Promise<Job[]> {
  return db
    .selectFrom('jobs')
    .selectAll()
    .where('workflow_started', '=', false)
    .where('created_at', '<', sql<Date>`now() - make_interval(secs => ${olderThanMs / 1000})`)
    .orderBy('created_at')
    .limit(limit)
    .execute();
}

/** In-flight jobs not updated for a while: candidates whose workflow may have been terminated. */
export async function findStaleInFlightJobs(db: Queryable, olderThanMs: number, limit = 100): Promise<Job[]> {
  return db
    .selectFrom('jobs')
    .selectAll()
    .where('status', 'in', ['pending', 'generating'] satisfies JobStatus[])
    .where('workflow_started', '=', true)
    .where('updated_at', '<', sql<Date>`now() - make_interval(secs => ${olderThanMs / 1000})`)
    .orderBy('updated_at')
    .limit(limit)
    .execute();
}

export async function touchJob(db: Queryable, jobId: string): Promise<void> {
  await db.updateTable('jobs').set({ updated_at: sql`now()` }).where('id', '=', jobId).execute();
}

export async function ledgerForJob(db: Queryable, jobId: string) {
  return db.selectFrom('credit_ledger').selectAll().where('job_id', '=', jobId).orderBy('job_seq').execute();
}

// ------------------------------------------------------------------ progress (the read model of the workflow's state)

export interface StoredProgress {
  phase: JobPhase;
  attempt: number;
  percent: number | null;
  queue_position: number | null;
}

/** A phase change: the provider's percent and queue position start over with it. */
export async function setJobPhase(db: Queryable, jobId: string, phase: JobPhase, attempt: number, percent: number | null = null): Promise<void> {
  await db
    .updateTable('jobs')
    .set({ phase, attempt, percent, queue_position: null, progress_updated_at: sql`now()` })
    .where('id', '=', jobId)
    .execute();
}

/**
 * The provider's percent and queue position from a poll, written only while the job is still in
 * the `generating` phase and at most once per `minIntervalMs` per job, whichever worker polls.
 * Returns whether the row changed.
 */
export async function recordPollProgress(
  db: Queryable,
  jobId: string,
  p: { percent: number | null; queuePosition: number | null; attempt: number },
  minIntervalMs: number,
): Promise<boolean> {
  // A poll without a percent keeps the last one, as the workflow's query does.
  const percent = sql<number | null>`coalesce(${p.percent}::double precision, percent)`;
  const r = await db
    .updateTable('jobs')
    .set({ percent, queue_position: p.queuePosition, attempt: p.attempt, progress_updated_at: sql`now()` })
    .where('id', '=', jobId)
    .where('phase', '=', 'generating')
    .where((eb) => eb.or([sql<boolean>`${percent} is distinct from percent`, eb('queue_position', 'is distinct from', p.queuePosition)]))
    .where((eb) => {
      const due = [
        // The phase's first figure is always written.
        eb.and([eb('percent', 'is', null), eb('queue_position', 'is', null)]),
        eb('progress_updated_at', 'is', null),
        eb('progress_updated_at', '<=', sql<Date>`now() - make_interval(secs => ${minIntervalMs / 1000})`),
      ];
      // Leaving the provider's queue is news worth telling at once.
      if (p.queuePosition === null) due.push(eb('queue_position', 'is not', null));
      return eb.or(due);
    })
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}
