// The job read model and its credits. Creating a job debits its price and writes the ledger's
// `charge` in the caller's transaction; settling makes the job's net charge equal its price
// (completed, or about to run again) or zero (failed), writing only the difference — so retries,
// worker crashes and operator resets charge exactly once.
import { sql, type RawBuilder, type SelectQueryBuilder } from 'kysely';
import type { Queryable, Tx } from '../index.js';
import type { DB, Job, JobError, JobKind, JobOutput, JobPhase, JobStatus, LedgerReason, WebhookEventName } from '../schema.js';

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
  /** Where the job's webhook events go, and which (0007_webhooks). */
  webhook?: { url: string; events: WebhookEventName[] } | null;
}

export class ProjectNotInWorkspaceError extends Error {
  override name = 'ProjectNotInWorkspaceError';
  constructor(readonly projectId: string) {
    super(`project ${projectId} is not in this workspace`);
  }
}

/**
 * Creates the pending job and charges its price in one statement, so in one transaction of its
 * own (or of the caller's): the project must be the workspace's, the debit is conditional (the
 * balance never goes below zero), and the job row and its ledger `charge` are written only with
 * it. Refused with ProjectNotInWorkspaceError or InsufficientCreditsError, changing nothing.
 * One round trip instead of six (begin, project, debit, job, ledger, commit): it is on the path
 * of every create. A price of 0 writes no debit, so it does not lock the workspace row.
 */
export async function insertJobWithCharge(db: Queryable, job: NewJobInput): Promise<Job> {
  // An INSERT … SELECT types its values from the SELECT: the casts make them the columns' types.
  const { rows } = await sql<Job & { project_found: boolean; available: string | null }>`
    with project as (
      select 1 from projects where id = ${job.projectId} and workspace_id = ${job.workspaceId}
    ), debit as (
      update workspaces set credits = credits - ${job.price}, updated_at = now()
      where id = ${job.workspaceId} and ${job.price}::int > 0 and credits >= ${job.price} and exists (select 1 from project)
      returning credits
    ), job as (
      insert into jobs (id, kind, workspace_id, project_id, api_key_id, model, status, params, price, webhook_url, webhook_events)
      select ${job.id}::text, ${job.kind}::text, ${job.workspaceId}::text, ${job.projectId}::text, ${job.apiKeyId}::text, ${job.model}::text,
             'pending', ${JSON.stringify(job.params)}::jsonb, ${job.price}::int, ${job.webhook?.url ?? null}::text, ${job.webhook?.events ?? null}::text[]
      where exists (select 1 from project) and (${job.price}::int = 0 or exists (select 1 from debit))
      returning *
    ), charge as (
      insert into credit_ledger (workspace_id, job_id, job_seq, delta, reason)
      select workspace_id, id, 1, -price, 'charge' from job
    )
    select exists (select 1 from project) as project_found,
           (select credits from workspaces where id = ${job.workspaceId}) as available,
           job.*
    from (values (1)) as one left join job on true`.execute(db);
  const { project_found, available, ...row } = rows[0]!;
  if (!project_found) throw new ProjectNotInWorkspaceError(job.projectId);
  if (row.id === null) {
    // The statement's own read of the balance is as of its snapshot; a racing debit it waited for
    // is not in it. A new statement reads the balance that refused this one.
    const now = await db.selectFrom('workspaces').select('credits').where('id', '=', job.workspaceId).executeTakeFirst();
    throw new InsufficientCreditsError(job.price, now?.credits ?? Number(available ?? 0));
  }
  return row as Job;
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

// ------------------------------------------------------------------ status moves

/**
 * The only status moves a job makes (DESIGN.md "Life of a generation request", step 6), one
 * function each:
 *   claimJob     pending | generating | failed → generating, for workflow run `runId`
 *   completeJob  generating (claimed by `runId`) → completed
 *   failJob      pending | generating (claimed by `runId`) → failed
 * A workflow run acts on a job only once it has claimed it: whatever database step runs first in
 * a run claims the job (so an operator's Reset to any point of a history works, whichever step the
 * new run runs first), and a step of any other run — a late attempt of a run that was reset, the
 * reconciler acting on a closed run — is refused by the run id in the UPDATE's WHERE. Each UPDATE
 * repeats its allowed sources and that run id, so the SQL refuses an illegal move even in a race
 * the check before it did not foresee. Repeating a move a job already made (a step retried after
 * its commit) changes nothing. Completed is final; a job failed by a cancel (error code
 * `canceled`: the customer's cancel, or an operator's terminate) is never revived.
 */
export const statusMoves = {
  generating: ['pending', 'generating', 'failed'],
  completed: ['generating'],
  failed: ['pending', 'generating'],
} as const satisfies Record<Exclude<JobStatus, 'pending'>, readonly JobStatus[]>;

export class IllegalStatusMoveError extends Error {
  override name = 'IllegalStatusMoveError';
  constructor(
    readonly jobId: string,
    readonly from: JobStatus,
    readonly to: JobStatus,
    reason?: string,
  ) {
    super(`job ${jobId} is ${from} and cannot become ${to}${reason ? `: ${reason}` : ''}`);
  }
}

/**
 * The progress a status move records in the same UPDATE (the read model's phase, with the
 * provider's percent and queue position starting over): one statement instead of two.
 */
export interface MoveProgress {
  phase: JobPhase | ((job: Job) => JobPhase);
  attempt: number;
  percent?: number | null;
}

/** The progress columns of a phase change: the provider's percent and queue position start over with it. */
function phaseColumns(phase: JobPhase | RawBuilder<JobPhase>, attempt: number, percent: number | null = null) {
  return { phase, attempt, percent, queue_position: null, progress_updated_at: sql<Date>`now()` };
}

function progressColumns(p: MoveProgress | undefined, job: Job) {
  if (!p) return {};
  return phaseColumns(typeof p.phase === 'function' ? p.phase(job) : p.phase, p.attempt, p.percent ?? null);
}

/** A job failed by a cancel: the customer's, or an operator's terminate. A reset never revives it. */
export function wasCanceled(job: Pick<Job, 'status' | 'error'>): boolean {
  return job.status === 'failed' && job.error?.code === 'canceled';
}

/**
 * How run `runId` may claim the job: `ours` (it holds it already), `take` (pending, or generating
 * under another run: a run replaced by an operator's reset), `revive` (failed by another run, not
 * canceled: an operator's reset runs it again, re-charged), or why it may not.
 */
export function claimOf(job: Pick<Job, 'status' | 'status_run_id' | 'error'>, runId: string): 'ours' | 'take' | 'revive' | { refused: string } {
  switch (job.status) {
    case 'pending':
      return 'take';
    case 'generating':
      return job.status_run_id === runId ? 'ours' : 'take';
    case 'completed':
      return { refused: 'completed is final' };
    case 'failed':
      if (wasCanceled(job)) return { refused: 'it was canceled' };
      if (job.status_run_id === runId) return { refused: 'this run failed it' };
      return 'revive';
  }
}

/** The claim's sources and run fence as SQL (claimOf): repeated in every claiming UPDATE. */
const claimableBy = (runId: string) =>
  sql<boolean>`(status in ('pending', 'generating') or (status = 'failed' and status_run_id is distinct from ${runId} and coalesce(error->>'code', '') <> 'canceled'))`;

/** The columns of a claim by `runId`; `fresh` (a run taking the job, not one repeating its own claim) restarts its deadline. */
const generatingColumns = (runId: string, fresh = true) => ({
  status: 'generating' as const,
  status_run_id: runId,
  ...(fresh ? { claimed_at: sql<Date>`now()` } : {}),
  // Its workflow runs, whatever the gateway heard back from the start (a lost answer).
  workflow_started: true,
  error: null,
  outputs: null,
  finished_at: null,
  started_at: sql<Date>`coalesce(started_at, now())`,
  updated_at: sql<Date>`now()`,
});

/**
 * The job's ledger nets to its price: true of every pending or generating job (charged at create,
 * charged again by a revival), so moving one between those states and `completed` settles nothing.
 * The one-statement moves below repeat it in their WHERE, so a job that ever broke it takes the
 * settling path instead.
 */
const chargedItsPrice = (jobId: string) => sql<boolean>`price = (select coalesce(-sum(delta), 0) from credit_ledger where job_id = ${jobId})`;

/**
 * pending → generating in ONE statement, the common first step of every job: nothing to settle
 * (see chargedItsPrice), and the UPDATE takes the row lock itself. Returns undefined when the job
 * is not pending (a step retried after its commit, an operator reset, a canceled job): the caller
 * then runs claimJob in a transaction, which decides those cases.
 */
export async function startPendingJob(
  db: Queryable,
  jobId: string,
  runId: string,
  progress?: { phase: JobPhase | RawBuilder<JobPhase>; attempt: number },
): Promise<Job | undefined> {
  return db
    .updateTable('jobs')
    .set({
      ...generatingColumns(runId),
      // A phase that depends on the job comes as SQL over the row being updated.
      ...(progress ? phaseColumns(progress.phase, progress.attempt) : {}),
    })
    .where('id', '=', jobId)
    .where('status', '=', 'pending')
    .where(chargedItsPrice(jobId))
    .returningAll()
    .executeTakeFirst();
}

/**
 * The job runs in workflow run `runId` from now on (see claimOf): status `generating`, error
 * cleared, and its price charged again when a failure had refunded it (a revival also forgets the
 * provider request of the failed run: it was canceled or failed). Returns the row and how it was
 * claimed. Throws IllegalStatusMoveError when the run may not claim it, and
 * InsufficientCreditsError when a revival cannot be paid for.
 */
export async function claimJob(tx: Tx, jobId: string, runId: string, progress?: MoveProgress): Promise<{ job: Job; claim: 'ours' | 'take' | 'revive' }> {
  const job = await lockJob(tx, jobId);
  const claim = claimOf(job, runId);
  if (typeof claim === 'object') throw new IllegalStatusMoveError(jobId, job.status, 'generating', claim.refused);
  if (claim === 'ours' && !progress) return { job, claim };
  await settleTo(tx, job, job.price);
  const row = await tx
    .updateTable('jobs')
    .set({ ...generatingColumns(runId, claim !== 'ours'), ...progressColumns(progress, job), ...(claim === 'revive' ? { provider_ref: null } : {}) })
    .where('id', '=', jobId)
    .where(claimableBy(runId))
    .returningAll()
    .executeTakeFirst();
  if (!row) throw new IllegalStatusMoveError(jobId, job.status, 'generating');
  return { job: row, claim };
}

/** Which run claimed the job: the owner a step must be. */
const claimedBy = (runId: string) => sql<boolean>`(status = 'generating' and status_run_id = ${runId})`;

const completedColumns = (outputs: JobOutput[], runId: string, providerRef?: Record<string, unknown>) => ({
  status: 'completed' as const,
  status_run_id: runId,
  outputs: JSON.stringify(outputs),
  error: null,
  finished_at: sql<Date>`now()`,
  updated_at: sql<Date>`now()`,
  ...(providerRef ? { provider_ref: JSON.stringify(providerRef) } : {}),
});

interface CompleteExtra {
  progress?: { phase: JobPhase; attempt: number; percent?: number | null };
  providerRef?: Record<string, unknown>;
}

/**
 * generating → completed in ONE statement for the run that claimed it (see startPendingJob):
 * undefined otherwise (completed already, failed meanwhile, claimed by no or another run); the
 * caller then runs completeJob.
 */
export async function completeGeneratingJob(db: Queryable, jobId: string, outputs: JobOutput[], runId: string, extra: CompleteExtra = {}): Promise<Job | undefined> {
  const { progress } = extra;
  return db
    .updateTable('jobs')
    .set({
      ...completedColumns(outputs, runId, extra.providerRef),
      ...(progress ? phaseColumns(progress.phase, progress.attempt, progress.percent ?? null) : {}),
    })
    .where('id', '=', jobId)
    .where(claimedBy(runId))
    .where(chargedItsPrice(jobId))
    .returningAll()
    .executeTakeFirst();
}

/**
 * → completed with its outputs for run `runId`, claiming the job first when this is the run's
 * first database step (a reset run; a pending job has not started and is refused), and settling
 * the charge to the price. A completed job is left
 * as it is (`charged` 0): completed is final, whichever run completed it. A job the run may not
 * claim (canceled meanwhile) throws IllegalStatusMoveError and stays failed and refunded.
 */
export async function completeJob(tx: Tx, jobId: string, outputs: JobOutput[], runId: string, extra: CompleteExtra = {}): Promise<{ charged: number; job: Job }> {
  let job = await lockJob(tx, jobId);
  if (job.status === 'completed') return { charged: 0, job };
  // A job is claimed by the step that starts it: a pending one has not started.
  const claim = job.status === 'pending' ? { refused: 'it has not started' } : claimOf(job, runId);
  if (typeof claim === 'object') throw new IllegalStatusMoveError(jobId, job.status, 'completed', claim.refused);
  if (claim !== 'ours') job = (await claimJob(tx, jobId, runId)).job;
  const charged = await settleTo(tx, job, job.price);
  const row = await tx
    .updateTable('jobs')
    .set({ ...completedColumns(outputs, runId, extra.providerRef), ...(extra.progress ? phaseColumns(extra.progress.phase, extra.progress.attempt, extra.progress.percent ?? null) : {}) })
    .where('id', '=', jobId)
    .where(claimedBy(runId))
    .returningAll()
    .executeTakeFirst();
  if (!row) throw new IllegalStatusMoveError(jobId, job.status, 'completed');
  return { charged, job: row };
}

/**
 * → failed with `{ code, message }` and the charge refunded (all of it, but for what the customer's
 * own cancel keeps: `cancelCharge`, recorded as `cancel_kept`), for run `runId` (null: no
 * workflow run acts, e.g. a cancel before any ran): a pending job, or a generating one claimed by
 * that run. Anything else is left as it is and reported: a completed job is never refunded, and a
 * job another run has claimed is that run's to finish. The provider reference stays on the row,
 * for the cancel that follows the refund. `moved` says whether this call failed it, `status` what
 * the job is now.
 */
export async function failJob(
  tx: Tx,
  jobId: string,
  error: JobError,
  runId: string | null,
  cancelCharge?: (job: Job) => CancelCharge,
): Promise<{ moved: boolean; refunded: number; status: JobStatus; job: Job }> {
  const job = await lockJob(tx, jobId);
  const mayFail = job.status === 'pending' || (job.status === 'generating' && job.status_run_id === runId);
  if (!mayFail) return { moved: false, refunded: 0, status: job.status, job };
  // Only the customer's own cancel keeps anything: an operator's terminate or a failure refunds in full.
  const cancel = error.code === 'canceled' && job.cancel_requested_at ? (cancelCharge?.(job) ?? { kept: 0, afterSubmit: false }) : null;
  const kept = cancel ? Math.max(0, Math.min(job.price, cancel.kept)) : 0;
  const moved = await settleTo(tx, job, kept);
  const row = await tx
    .updateTable('jobs')
    .set({
      status: 'failed',
      status_run_id: runId,
      error: JSON.stringify(error),
      finished_at: sql`now()`,
      updated_at: sql`now()`,
      ...(cancel ? { cancel_kept: kept, canceled_after_submit_at: cancel.afterSubmit ? sql<Date>`now()` : null } : {}),
    })
    .where('id', '=', jobId)
    .where((eb) => eb.or([eb('status', '=', 'pending'), eb.and([eb('status', '=', 'generating'), eb('status_run_id', 'is not distinct from', runId)])]))
    .returningAll()
    .executeTakeFirst();
  if (!row) throw new IllegalStatusMoveError(jobId, job.status, 'failed');
  return { moved: true, refunded: -moved, status: 'failed', job: row };
}

/** Settle by the job's current status (completed → price, failed → zero, or what its customer's cancel kept); for reconciliation. */
export async function settleByStatus(tx: Tx, jobId: string): Promise<number> {
  const job = await lockJob(tx, jobId);
  if (job.status === 'completed') return settleTo(tx, job, job.price);
  if (job.status === 'failed') return settleTo(tx, job, job.cancel_kept ?? 0);
  return 0;
}

/**
 * What a customer's cancel keeps of the job's charge (failJob): `kept` credits (the provider's cost
 * of a submitted request; at most the price), and whether the job had been submitted to a provider.
 */
export interface CancelCharge {
  kept: number;
  afterSubmit: boolean;
}

/** The customer asked to cancel the job (before its workflow is asked): its cancel may keep the provider's cost. */
export async function markCancelRequested(db: Queryable, jobId: string): Promise<void> {
  await db
    .updateTable('jobs')
    .set({ cancel_requested_at: sql<Date>`coalesce(cancel_requested_at, now())` })
    .where('id', '=', jobId)
    .where('status', 'in', ['pending', 'generating'])
    .execute();
}

/**
 * The provider confirmed the cancel of a canceled job's request (it will not charge for it): what the
 * cancel kept is refunded too, once. Returns the credits refunded now (0 on a repeat).
 */
export async function refundConfirmedCancel(tx: Tx, jobId: string): Promise<number> {
  const job = await lockJob(tx, jobId);
  if (!wasCanceled(job) || !job.cancel_kept) return 0;
  const moved = await settleTo(tx, job, 0);
  await tx.updateTable('jobs').set({ cancel_kept: 0, updated_at: sql`now()` }).where('id', '=', jobId).execute();
  return -moved;
}

/**
 * The workspace's cancels after a submit within the last `windowMs`, newest first, at most
 * `limit + 1` of them (jobs_cancel_churn_idx): past `limit`, `retryAfterMs` is when the oldest of
 * those leaves the window, and the count is back within the limit.
 */
export async function cancelChurn(db: Queryable, workspaceId: string, limit: number, windowMs: number): Promise<{ over: boolean; retryAfterMs: number }> {
  const { rows } = await sql<{ leaves_in_ms: number }>`
    select ceil(extract(epoch from (canceled_after_submit_at + make_interval(secs => ${windowMs / 1000}) - now())) * 1000)::float8 as leaves_in_ms
      from jobs
     where workspace_id = ${workspaceId} and canceled_after_submit_at is not null
       and canceled_after_submit_at > now() - make_interval(secs => ${windowMs / 1000})
     order by canceled_after_submit_at desc
     limit ${limit + 1}`.execute(db);
  if (rows.length <= limit) return { over: false, retryAfterMs: 0 };
  return { over: true, retryAfterMs: Math.max(1, Math.ceil(Number(rows[limit]!.leaves_in_ms))) };
}

/**
 * The provider's request reference of the run that claimed the job, with the phase it is now in:
 * written right after the submit, before anything that can fail, so a retried step polls the
 * request instead of paying for another. Returns false (writing nothing) when `runId` no longer
 * holds the job.
 */
export async function recordProviderRef(db: Queryable, jobId: string, runId: string, ref: Record<string, unknown>, progress?: { phase: JobPhase; attempt: number }): Promise<boolean> {
  const r = await db
    .updateTable('jobs')
    .set({ provider_ref: JSON.stringify(ref), updated_at: sql`now()`, ...(progress ? phaseColumns(progress.phase, progress.attempt) : {}) })
    .where('id', '=', jobId)
    .where(claimedBy(runId))
    .executeTakeFirst();
  return r.numUpdatedRows === 1n;
}

export async function markWorkflowStarted(db: Queryable, jobId: string): Promise<void> {
  await db.updateTable('jobs').set({ workflow_started: true }).where('id', '=', jobId).execute();
}

/** Marks the jobs' workflows as started (they exist at Temporal): the reconciler stops asking. */
export async function markWorkflowsStarted(db: Queryable, jobIds: string[]): Promise<void> {
  if (jobIds.length === 0) return;
  await db.updateTable('jobs').set({ workflow_started: true }).where('id', 'in', jobIds).execute();
}

const leaseFree = sql<boolean>`(reconcile_lease_until is null or reconcile_lease_until < now())`;
const leaseFor = (leaseMs: number) => sql<Date>`now() + make_interval(secs => ${leaseMs / 1000})`;

/**
 * Leases for `leaseMs` the rows of `candidates` that no other replica holds: rows locked by another
 * claim are skipped (SKIP LOCKED), then rows whose lease has not run out, so replicas share the work
 * and never act on the same job.
 */
function leaseJobs(db: Queryable, candidates: SelectQueryBuilder<DB, 'jobs', { id: string }>, leaseMs: number): Promise<Job[]> {
  return db
    .updateTable('jobs')
    .set({ reconcile_lease_until: leaseFor(leaseMs) })
    .where('id', 'in', candidates.where(leaseFree).forUpdate().skipLocked())
    .where(leaseFree)
    .returningAll()
    .execute();
}

/**
 * Claims for `leaseMs` up to `limit` pending jobs whose workflow has not marked them started within
 * `olderThanMs` (a start that failed after commit, or a workflow still waiting in a backlog), oldest
 * first, that no other replica holds. Served by jobs_unstarted_idx.
 */
export async function claimUnstartedJobs(db: Queryable, olderThanMs: number, limit: number, leaseMs: number): Promise<Job[]> {
  const candidates = db
    .selectFrom('jobs')
    .select('id')
    .where('workflow_started', '=', false)
    .where('status', '=', 'pending')
    .where('created_at', '<', sql<Date>`now() - make_interval(secs => ${olderThanMs / 1000})`)
    .orderBy('created_at')
    .limit(limit);
  return leaseJobs(db, candidates, leaseMs);
}

/**
 * Claims for `leaseMs` up to `limit` jobs in flight whose row has not been written for `staleAfterMs`
 * (a final write lost with a database crash, or a long generation), oldest first, that no replica
 * holds and none checked within `staleAfterMs` (a checked row's lease ends when its check does, so
 * it comes back only that much later). Pending jobs whose workflow was never marked started are
 * the unstarted pass's. Served by jobs_stale_in_flight_idx.
 */
export async function claimStaleInFlightJobs(db: Queryable, staleAfterMs: number, limit: number, leaseMs: number): Promise<Job[]> {
  const bound = sql<Date>`now() - make_interval(secs => ${staleAfterMs / 1000})`;
  const candidates = db
    .selectFrom('jobs')
    .select('id')
    .where('status', 'in', ['pending', 'generating'] satisfies JobStatus[])
    .where('updated_at', '<', bound)
    .where((eb) => eb.or([eb('status', '=', 'generating'), eb('workflow_started', '=', true)]))
    .where((eb) => eb.or([eb('reconcile_lease_until', 'is', null), eb('reconcile_lease_until', '<', bound)]))
    .orderBy('updated_at')
    .limit(limit);
  return leaseJobs(db, candidates, leaseMs);
}

/** Ends this replica's leases on the jobs now (checked and left as they are): other passes may act on them at once. */
export async function releaseLeases(db: Queryable, jobIds: string[]): Promise<void> {
  if (jobIds.length === 0) return;
  await db.updateTable('jobs').set({ reconcile_lease_until: sql<Date>`now()` }).where('id', 'in', jobIds).execute();
}

/**
 * Claims for `leaseMs` those of `jobIds` still in flight (pending or generating) that no other
 * replica holds: the jobs whose closed workflow run this replica will settle. Primary-key reads only.
 */
export async function claimInFlightJobs(db: Queryable, jobIds: string[], leaseMs: number): Promise<Job[]> {
  if (jobIds.length === 0) return [];
  const candidates = db
    .selectFrom('jobs')
    .select('id')
    .where('id', 'in', jobIds)
    .where('status', 'in', ['pending', 'generating'] satisfies JobStatus[]);
  return leaseJobs(db, candidates, leaseMs);
}

/** Those of `jobIds` still pending or generating, with the run that holds each (primary-key reads). */
export async function inFlightJobs(db: Queryable, jobIds: string[]): Promise<Pick<Job, 'id' | 'status' | 'status_run_id'>[]> {
  if (jobIds.length === 0) return [];
  return db
    .selectFrom('jobs')
    .select(['id', 'status', 'status_run_id'])
    .where('id', 'in', jobIds)
    .where('status', 'in', ['pending', 'generating'] satisfies JobStatus[])
    .execute();
}

/**
 * When the oldest job still in flight was created (null: none is). A replica asks once, at its first
 * pass (it walks jobs_status_list_idx, whose non-completed entries include the failed history).
 */
export async function oldestInFlightCreatedAt(db: Queryable): Promise<Date | null> {
  const r = await db
    .selectFrom('jobs')
    .select('created_at')
    .where('status', 'in', ['pending', 'generating'] satisfies JobStatus[])
    .orderBy('created_at')
    .limit(1)
    .executeTakeFirst();
  return r?.created_at ?? null;
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
export async function setJobPhase(db: Queryable, jobId: string, phase: JobPhase, attempt: number, percent: number | null = null, opts: { whileGenerating?: boolean } = {}): Promise<void> {
  let q = db.updateTable('jobs').set(phaseColumns(phase, attempt, percent)).where('id', '=', jobId);
  // A provider step's progress: a step still running after its job ended (a worker frozen, then
  // resumed) must not move an ended job's phase back.
  if (opts.whileGenerating) q = q.where('status', '=', 'generating');
  await q.execute();
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

// ------------------------------------------------------------------ provider routes (failover)

/**
 * Moves run `runId`'s job from provider `from` to route `to`: the job's provider and provider model
 * id become `to`'s, and when `gaveUp` is given it is appended to the job's provider attempts (with
 * `from`'s recorded request as its `ref`) and that reference is cleared from the row (answered as
 * `previousRef`, for its cancel, also by a repeat after the commit), so
 * the next submit goes to `to` instead of polling `from`'s request. Only while the job is on `from`
 * and has not recorded this give-up: a repeat after the commit changes nothing and answers
 * `moved: false`. Undefined when `runId` does
 * not hold the job.
 */
export async function switchJobRoute(
  db: Queryable,
  jobId: string,
  runId: string,
  move: { from: string; to: { provider: string; provider_model_id: string }; gaveUp?: { provider: string; error: string }; attempt: number },
): Promise<{ moved: boolean; previousRef: Record<string, unknown> | null; job: Job } | undefined> {
  const refOfFrom = sql<boolean>`coalesce(j.provider_ref->>'provider', '') = ${move.from}`;
  const gaveUp = move.gaveUp ? JSON.stringify(move.gaveUp) : null;
  const { rows } = await sql<Job & { previous_ref: Record<string, unknown> | null }>`
    update jobs j set
      params = j.params || jsonb_build_object('provider', ${move.to.provider}::text, 'provider_model_id', ${move.to.provider_model_id}::text),
      provider_attempts = case when ${gaveUp}::jsonb is null then j.provider_attempts
        else j.provider_attempts || jsonb_build_array(${gaveUp}::jsonb || case when coalesce(old.provider_ref->>'provider', '') = ${move.from} then jsonb_build_object('ref', old.provider_ref) else '{}'::jsonb end) end,
      provider_ref = case when ${!!move.gaveUp} and ${refOfFrom} then null else j.provider_ref end,
      phase = 'submitting', attempt = ${move.attempt}, percent = null, queue_position = null, progress_updated_at = now(), updated_at = now()
    from (select id, provider_ref from jobs where id = ${jobId} for update) old
    where j.id = old.id and j.status = 'generating' and j.status_run_id = ${runId} and j.params->>'provider' = ${move.from}
      and (${gaveUp}::jsonb is null or not j.provider_attempts @> jsonb_build_array(${gaveUp}::jsonb))
    returning j.*, case when ${!!move.gaveUp} and coalesce(old.provider_ref->>'provider', '') = ${move.from} then old.provider_ref end as previous_ref`.execute(db);
  if (rows[0]) {
    const { previous_ref, ...job } = rows[0];
    return { moved: true, previousRef: previous_ref, job: job as Job };
  }
  const job = await getJob(db, jobId);
  if (!job || job.status !== 'generating' || job.status_run_id !== runId) return undefined;
  // A repeat of a give-up that committed: the request it gave up, as stored with the attempt.
  const given = move.gaveUp ? job.provider_attempts.find((a) => a.provider === move.gaveUp!.provider && a.error === move.gaveUp!.error) : undefined;
  return { moved: false, previousRef: given?.ref ?? null, job };
}
