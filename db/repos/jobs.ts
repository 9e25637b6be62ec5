// The job rows' SQL: the create with its charge, reads, and one UPDATE per status move. Which
// moves are allowed, and when, is the job service's (jobs/): it passes each UPDATE its fence (the
// statuses the move may start from, jobs/transitions.ts), which the UPDATE repeats in its WHERE so
// the SQL refuses an illegal move even in a race the service's check did not foresee.
// The ledger is db/repos/job-ledger.ts, progress db/repos/job-progress.ts, the reconciler's leases
// db/repos/job-leases.ts.
import { sql, type RawBuilder } from 'kysely';
import type { Queryable, Tx } from '../index.js';
import type { Job, JobError, JobKind, JobOutput, JobPhase, JobStatus } from '../schema.js';
import { InsufficientCreditsError } from './job-ledger.js';
import { BudgetsApplyError } from './budgets.js';
import { newJobWeight } from './fair-share.js';
import { phaseColumns, progressColumns, type MoveProgress } from './job-progress.js';
import type { NewJobInput } from './job-input.js';
import { labelKeys } from '../../shared/labels.js';

export { InsufficientCreditsError } from './job-ledger.js';
export { cancelChurn } from './cancel-churn.js';
export { BudgetsApplyError };

export type { NewJobInput } from './job-input.js';

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
 * of every create. The job's timeline (0029_receipts) starts in it: created (quoted) and charged.
 * A price of 0 writes no debit, so it does not lock the workspace row.
 * The job keeps the workspace's fair-share weight as it is now, times the burst boost while the
 * workspace has few jobs in flight (`fairness_weight`, newJobWeight): its workflow starts with it.
 * The same statement probes for a budget of the key or the project (budgets_scope_idx): when one
 * applies and the caller did not check it (`budgetsChecked`), it writes nothing and throws
 * BudgetsApplyError, so an unbudgeted create stays one round trip.
 */
export async function insertJobWithCharge(db: Queryable, job: NewJobInput): Promise<Job> {
  // An INSERT … SELECT types its values from the SELECT: the casts make them the columns' types.
  const { rows } = await sql<Job & { project_found: boolean; budgets_clear: boolean; available: string | null }>`
    with budgets_clear as (
      select ${job.budgetsChecked === true}::boolean or not exists (
        select 1 from budgets where workspace_id = ${job.workspaceId}
           and ((scope = 'key' and scope_id = ${job.apiKeyId}) or (scope = 'project' and scope_id = ${job.projectId}))
      ) as clear
    ), project as (
      select 1 from projects where id = ${job.projectId} and workspace_id = ${job.workspaceId} and (select clear from budgets_clear)
    ), debit as (
      update workspaces set credits = credits - ${job.price}, updated_at = now()
      where id = ${job.workspaceId} and ${job.price}::int > 0 and credits >= ${job.price} and exists (select 1 from project)
      returning credits
    ), job as (
      insert into jobs (id, kind, workspace_id, project_id, api_key_id, model, status, params, price, webhook_url, webhook_events, deadline_at, priority, fairness_weight, credits_charged, metadata, tags, reuse_key)
      select ${job.id}::text, ${job.kind}::text, ${job.workspaceId}::text, ${job.projectId}::text, ${job.apiKeyId}::text, ${job.model}::text,
             'pending', ${JSON.stringify(job.params)}::jsonb, ${job.price}::int, ${job.webhook?.url ?? null}::text, ${job.webhook?.events ?? null}::text[],
             now() + make_interval(secs => ${job.deadlineSeconds ?? null}::int), ${job.priority ?? 'normal'}::text,
             ${newJobWeight(job.workspaceId)}, ${job.price}::int, ${JSON.stringify(job.metadata ?? {})}::jsonb, ${job.tags ?? []}::text[],
             ${job.reuseKey ?? null}::text
      where exists (select 1 from project) and (${job.price}::int = 0 or exists (select 1 from debit))
      returning *
    ), labels as (
      insert into job_labels (workspace_id, label, created_at, job_id)
      select job.workspace_id, l, job.created_at, job.id from job cross join unnest(${labelKeys(job.metadata ?? {}, job.tags ?? [])}::text[]) l
    ), charge as (
      insert into credit_ledger (workspace_id, job_id, job_seq, delta, reason)
      select workspace_id, id, 1, -price, 'charge' from job
    ), timeline as (
      insert into job_timeline (job_id, key, type, details)
      select job.id, e.key, e.type, e.details
        from job cross join lateral (values
          (1, 'created', 'created', jsonb_build_object('model', job.model, 'provider', job.params->>'provider', 'price', job.price, 'priority', job.priority)),
          (2, 'ledger:1', 'charged', jsonb_build_object('amount', job.price))) as e(ord, key, type, details)
       where e.ord = 1 or job.price > 0 order by e.ord
    )
    select exists (select 1 from projects where id = ${job.projectId} and workspace_id = ${job.workspaceId}) as project_found,
           (select clear from budgets_clear) as budgets_clear,
           (select credits from workspaces where id = ${job.workspaceId}) as available,
           job.*
    from (values (1)) as one left join job on true`.execute(db);
  const { project_found, budgets_clear, available, ...row } = rows[0]!;
  if (!project_found) throw new ProjectNotInWorkspaceError(job.projectId);
  if (!budgets_clear) throw new BudgetsApplyError();
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

/** The workspace a project belongs to (undefined: no such project). */
export async function projectWorkspace(q: Queryable, projectId: string): Promise<string | undefined> {
  return (await q.selectFrom('projects').select('workspace_id').where('id', '=', projectId).executeTakeFirst())?.workspace_id;
}

/** The job row, locked for the caller's transaction: every move that settles credits holds it. */
export async function lockJob(tx: Tx, id: string): Promise<Job> {
  const job = await tx.selectFrom('jobs').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
  if (!job) throw new Error(`job ${id} not found`);
  return job;
}

// ------------------------------------------------------------------ status moves

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
 * The fence of a move to generating: the statuses it may start from, and among them those only a
 * revival leaves (a failed job), which run `runId` may take only when another run failed it and no
 * cancel did.
 */
export interface ClaimFence {
  from: readonly JobStatus[];
  revivingFrom: readonly JobStatus[];
}

/**
 * The job runs in workflow run `runId` from now on: status `generating`, error cleared, progress
 * recorded; `fresh` restarts its claim deadline, `forgetRef` clears the provider request of a failed
 * run. Undefined when the row is outside `fence` (the service checked it under the row lock).
 */
export async function moveToGenerating(
  tx: Tx,
  job: Job,
  runId: string,
  fence: ClaimFence,
  set: { fresh: boolean; progress?: MoveProgress | undefined; forgetRef: boolean },
): Promise<Job | undefined> {
  return tx
    .updateTable('jobs')
    .set({ ...generatingColumns(runId, set.fresh), ...progressColumns(set.progress, job), ...(set.forgetRef ? { provider_ref: null } : {}) })
    .where('id', '=', job.id)
    .where('status', 'in', fence.from)
    .where((eb) =>
      eb.or([
        eb('status', 'not in', fence.revivingFrom),
        sql<boolean>`(status_run_id is distinct from ${runId} and coalesce(error->>'code', '') <> 'canceled')`,
      ]),
    )
    .returningAll()
    .executeTakeFirst();
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
  submitted_at: sql<Date>`coalesce(submitted_at, now())`,
  ...(providerRef ? { provider_ref: JSON.stringify(providerRef) } : {}),
});

export interface CompleteExtra {
  progress?: { phase: JobPhase; attempt: number; percent?: number | null };
  providerRef?: Record<string, unknown>;
}

/**
 * generating → completed in ONE statement for the run that claimed it (see startPendingJob):
 * undefined otherwise (completed already, failed meanwhile, claimed by no or another run); the
 * caller then runs completeJob.
 */
export async function completeGeneratingJob(
  db: Queryable,
  jobId: string,
  outputs: JobOutput[],
  runId: string,
  extra: CompleteExtra = {},
): Promise<Job | undefined> {
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

/** → completed with its outputs for run `runId`, which holds it (the service claimed and settled it first). */
export async function moveToCompleted(tx: Tx, jobId: string, outputs: JobOutput[], runId: string, extra: CompleteExtra = {}): Promise<Job | undefined> {
  return tx
    .updateTable('jobs')
    .set({
      ...completedColumns(outputs, runId, extra.providerRef),
      ...(extra.progress ? phaseColumns(extra.progress.phase, extra.progress.attempt, extra.progress.percent ?? null) : {}),
    })
    .where('id', '=', jobId)
    .where(claimedBy(runId))
    .returningAll()
    .executeTakeFirst();
}

/**
 * → failed with `error` for run `runId` (null: no workflow run acts), from a status of `from`,
 * and a generating job only when that run holds it. `cancel`: what the customer's cancel kept
 * (cancel_kept) and whether it came after the submit. The provider reference stays on the row,
 * for the cancel that follows the refund. Undefined when the row is outside the fence.
 */
export async function moveToFailed(
  tx: Tx,
  jobId: string,
  error: JobError,
  runId: string | null,
  from: readonly JobStatus[],
  cancel: { kept: number; afterSubmit: boolean } | null,
): Promise<Job | undefined> {
  return tx
    .updateTable('jobs')
    .set({
      status: 'failed',
      status_run_id: runId,
      error: JSON.stringify(error),
      finished_at: sql`now()`,
      updated_at: sql`now()`,
      ...(cancel ? { cancel_kept: cancel.kept, canceled_after_submit_at: cancel.afterSubmit ? sql<Date>`now()` : null } : {}),
    })
    .where('id', '=', jobId)
    .where('status', 'in', from)
    .where((eb) => eb.or([eb('status', '<>', 'generating'), eb('status_run_id', 'is not distinct from', runId)]))
    .returningAll()
    .executeTakeFirst();
}

/** The customer asked to cancel the job (before its workflow is asked), while it is in flight (`inFlight`). */
export async function markCancelRequested(db: Queryable, jobId: string, inFlight: readonly JobStatus[]): Promise<void> {
  await db
    .updateTable('jobs')
    .set({ cancel_requested_at: sql<Date>`coalesce(cancel_requested_at, now())` })
    .where('id', '=', jobId)
    .where('status', 'in', inFlight)
    .execute();
}

/** What the job's cancel kept was refunded (the provider confirmed the cancel). */
export async function clearCancelKept(tx: Tx, jobId: string): Promise<void> {
  await tx
    .updateTable('jobs')
    .set({ cancel_kept: 0, updated_at: sql`now()` })
    .where('id', '=', jobId)
    .execute();
}

/**
 * The provider's request reference of the run that claimed the job, with the phase it is now in:
 * written right after the submit, before anything that can fail, so a retried step polls the
 * request instead of paying for another. The first one also ends the job's wait in our queues
 * (`submitted_at`). Returns false (writing nothing) when `runId` no longer holds the job.
 */
export async function recordProviderRef(
  db: Queryable,
  jobId: string,
  runId: string,
  ref: Record<string, unknown>,
  progress?: { phase: JobPhase; attempt: number },
): Promise<boolean> {
  const r = await db
    .updateTable('jobs')
    .set({
      provider_ref: JSON.stringify(ref),
      submitted_at: sql`coalesce(submitted_at, now())`,
      updated_at: sql`now()`,
      ...(progress ? phaseColumns(progress.phase, progress.attempt) : {}),
    })
    .where('id', '=', jobId)
    .where(claimedBy(runId))
    .executeTakeFirst();
  return r.numUpdatedRows === 1n;
}

export async function markWorkflowStarted(db: Queryable, jobId: string): Promise<void> {
  await db.updateTable('jobs').set({ workflow_started: true }).where('id', '=', jobId).execute();
}

// ------------------------------------------------------------------ provider routes (failover)

/**
 * Moves run `runId`'s job from provider `from` to route `to`: the job's provider and provider model
 * id become `to`'s, and when `gaveUp` is given it is appended to the job's provider attempts (with
 * `from`'s recorded request as its `ref`) and that reference is cleared from the row (answered as
 * `previousRef`, for its cancel, also by a repeat after the commit), so the next submit goes to
 * `to` instead of polling `from`'s request. Only while the job is on `from` and has not recorded
 * this give-up: a repeat after the commit changes nothing and answers `moved: false`. Undefined
 * when `runId` does not hold the job. (The timeline's give-up and failover: 0029_receipts.)
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
    returning j.*, case when ${!!move.gaveUp} and coalesce(old.provider_ref->>'provider', '') = ${move.from} then old.provider_ref end as previous_ref`.execute(
    db,
  );
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
