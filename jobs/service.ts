// The job lifecycle, in one place: quote, create, start, claim, complete, fail, cancel, settle and
// reconcile a job whose workflow closed without settling it. One service per process, built where
// the process is composed (api/app.ts, worker/workers.ts) and passed down: the gateway's routes,
// the workflow's activities and the worker's reconciler call it. Its rules are jobs/rules.ts and
// jobs/transitions.ts, its quote jobs/quote.ts; the SQL lives in db/repos/, and the Temporal calls
// reach it through a port (workflows/client.ts implements it), so this module imports no process code.
// It is built from small factories, one per caller's concern, that share the service's one fail.
//
// Money and media follow every move here: a failed job is refunded and its media removed, a
// completed job is charged its price, a revived one is charged again, each exactly once; the
// provider request of an abandoned job is canceled after the refund, never before it.
import type { RawBuilder } from 'kysely';
import type { Queryable } from '../db/index.js';
import { auditEventId, recordAuditEventOnce } from '../db/repos/audit.js';
import { RECONCILER_ACTOR } from '../shared/audit.js';
import type { Job, JobError, JobOutput, JobPhase } from '../db/schema.js';
import * as jobsRepo from '../db/repos/jobs.js';
import { BudgetsApplyError, type NewJobInput } from '../db/repos/jobs.js';
import { budgetCheck, createWithinBudgets } from './budgets.js';
import { createHash } from 'node:crypto';
import { appendTimeline } from '../db/repos/job-timeline.js';
import type { CancelUpstreamOutcome } from '../shared/timeline.js';
import type { MoveProgress } from '../db/repos/job-progress.js';
import { jobPrefix, type Storage } from '../shared/storage.js';
import { isRequestInput, jobOutputs } from '../shared/job-media.js';
import type { ProviderCancelHandoff } from '../shared/provider-types.js';

import type { JobServiceDeps, JobWorkflowPort, StartOutcome } from './service-types.js';
import { claimJob, completeJob, failJob, refundConfirmedCancel, settleByStatus, type FailResult } from './moves.js';
import { DEADLINE_EXCEEDED, IllegalStatusMoveError } from './rules.js';
import { inFlightStatuses } from './transitions.js';
import { createJobFailover } from './failover.js';
import { createSlotRelease } from './slot-release.js';
import { createQuote, requireProject } from './quote.js';

export type { JobServiceDeps, JobWorkflowPort, Quote, QuoteRequest, StartOutcome, WorkflowCancelOutcome } from './service-types.js';

/** The Temporal port, asked for at each call that needs it: a service built without one still settles jobs. */
function workflowsOf(deps: Pick<JobServiceDeps, 'workflows'>): JobWorkflowPort {
  if (!deps.workflows) throw new Error('this job service has no Temporal client');
  return deps.workflows;
}

/**
 * Removes the job's media but its request's inputs (fetched URL inputs, a speech step's speech): no
 * generated media stays for a job that was refunded, and a run an operator's reset revives finds the
 * inputs its replayed request names, so a speech step replayed from the history is not paid again.
 * The inputs go with the rest of the job's media (retention, DELETE).
 */
async function removeMedia(storage: Storage, jobId: string): Promise<void> {
  for await (const o of storage.list(jobPrefix(jobId))) {
    if (!isRequestInput(o.key)) await storage.remove(o.key);
  }
}

/** The service's one fail, bound to its database, storage and slot release: every move that fails a job goes through it. */
function createFail(deps: Pick<JobServiceDeps, 'db' | 'storage'>, slotRelease: Pick<ReturnType<typeof createSlotRelease>, 'releaseRouteSlot'>) {
  /**
   * Fails the job (refunding it) for run `runId`, gives its route slot back and removes its media;
   * `alongside` writes more in the same transaction when the job moved. Idempotent: removing again
   * also catches an output written late by a step still running when the job was canceled.
   */
  async function fail(
    jobId: string,
    error: JobError,
    runId: string | null,
    alongside?: (tx: Queryable, moved: FailResult) => Promise<void>,
  ): Promise<FailResult> {
    const result = await deps.db.transaction().execute(async (tx) => {
      const r = await failJob(tx, jobId, { code: error.code, message: error.message.slice(0, 500) }, runId);
      if (r.moved && alongside) await alongside(tx, r);
      return r;
    });
    if (result.status === 'failed') {
      // Its request there ends with it (canceled next, or failed already); a slot missed here expires.
      await slotRelease.releaseRouteSlot(jobId);
      await removeMedia(deps.storage, jobId);
    }
    return result;
  }
  return fail;
}

/** The service's fail, as the factories of the moves that fail a job take it. */
type Fail = ReturnType<typeof createFail>;

/** The gateway's side of a new job: its create within the budgets at the service's clock, and its workflow's start. */
function createJobCreation(deps: Pick<JobServiceDeps, 'db' | 'logger' | 'workflows'>, clock: () => Date) {
  const { db } = deps;
  return {
    /**
     * The pending job and its charge, in one statement (so one transaction of its own, or of the
     * caller's `q`); under a budget, in the transaction of jobs/budgets.ts. Throws
     * ProjectNotInWorkspaceError, InsufficientCreditsError or BudgetExceededError, writing nothing.
     */
    async create(q: Queryable, input: NewJobInput): Promise<Job> {
      try {
        return await jobsRepo.insertJobWithCharge(q, input);
      } catch (err) {
        if (!(err instanceof BudgetsApplyError)) throw err;
      }
      const { job, alerts } = await createWithinBudgets(db, q, input, clock());
      for (const a of alerts) deps.logger?.info({ budgetId: a.budgetId, threshold: a.threshold, jobId: job.id }, 'budget alert threshold reached');
      return job;
    },

    /** A dry run's check of the create's budgets at the service's clock (null: none applies). */
    budgetCheck(q: Queryable, input: Parameters<typeof budgetCheck>[1]) {
      return budgetCheck(q, input, clock());
    },

    /** The service's clock (budget periods). */
    now: () => clock(),

    /**
     * Starts the committed job's workflow. A failed start leaves the job to the reconciler (it
     * starts jobs whose workflow has not run after a few seconds): the answer is 'failed' then.
     */
    async start(job: Job, opts: { logFailure?: boolean } = {}): Promise<StartOutcome> {
      try {
        return await workflowsOf(deps).start(job);
      } catch (err) {
        if (opts.logFailure !== false) deps.logger?.warn({ jobId: job.id, err: (err as Error).message }, 'workflow start failed; left for the reconciler');
        return 'failed';
      }
    },
  };
}

/** A run's own moves, made by the workflow's activities: claim, complete, fail, and its provider request recorded. */
function createRunMoves(deps: Pick<JobServiceDeps, 'db' | 'storage'>, fail: Fail) {
  const { db } = deps;
  return {
    /**
     * The move to generating for run `runId` (rules.ts claimOf): one UPDATE for a pending job,
     * the common case; else the transaction that decides (a retry, a reset, a revival).
     */
    async claim(
      jobId: string,
      runId: string,
      /** The phase the job is in next, as a function of the row and as SQL over it (for the one UPDATE). */
      progress?: { phase: (job: Job) => JobPhase; phaseSql: JobPhase | RawBuilder<JobPhase>; attempt: number },
    ): Promise<{ job: Job; claim: 'ours' | 'take' | 'revive' }> {
      const started = await jobsRepo.startPendingJob(db, jobId, runId, progress && { phase: progress.phaseSql, attempt: progress.attempt });
      if (started) return { job: started, claim: 'take' };
      const move: MoveProgress | undefined = progress && { phase: progress.phase, attempt: progress.attempt };
      return db.transaction().execute((tx) => claimJob(tx, jobId, runId, move));
    },

    /**
     * → completed with its outputs for run `runId` (claiming the job first in a reset run),
     * charged its price. A job canceled meanwhile stays failed and refunded, and the outputs just
     * stored are removed: no media without payment (IllegalStatusMoveError is rethrown).
     */
    async complete(jobId: string, outputs: JobOutput[], runId: string, extra: { providerRef?: Record<string, unknown>; attempt?: number } = {}): Promise<Job> {
      const moveExtra = {
        providerRef: extra.providerRef,
        ...(extra.attempt !== undefined ? { progress: { phase: 'completed' as const, attempt: extra.attempt, percent: 100 } } : {}),
      };
      try {
        return (
          (await jobsRepo.completeGeneratingJob(db, jobId, outputs, runId, moveExtra)) ??
          (await db.transaction().execute((tx) => completeJob(tx, jobId, outputs, runId, moveExtra))).job
        );
      } catch (err) {
        if (err instanceof IllegalStatusMoveError && err.from === 'failed') await removeMedia(deps.storage, jobId);
        throw err;
      }
    },

    fail,

    /** The provider request of run `runId`'s job, durable before anything after the submit can fail. */
    recordProviderRef(jobId: string, runId: string, ref: Record<string, unknown>, attempt: number): Promise<boolean> {
      return jobsRepo.recordProviderRef(db, jobId, runId, ref, { phase: 'generating', attempt });
    },
  };
}

/** The ends of a job no run of its own settles: one never started before its deadline, and a customer's cancel. */
function createJobCancels(deps: Pick<JobServiceDeps, 'db' | 'workflows'>, fail: Fail) {
  const { db } = deps;
  return {
    /**
     * A job whose deadline passed before any workflow ran for it (the reconciler's late start): failed
     * as never submitted (refunded in full) and marked, so it is never started. Acts only on a job
     * still pending; `moved` says whether this call failed it.
     */
    async expireUnstarted(job: Job): Promise<FailResult> {
      const at = job.deadline_at?.toISOString() ?? 'its deadline';
      const result = await fail(job.id, { code: DEADLINE_EXCEEDED, message: `the job's deadline (${at}) passed before it was submitted to a provider` }, null);
      await jobsRepo.markWorkflowStarted(db, job.id);
      return result;
    },

    /**
     * A customer's cancel. Always through Temporal: the workflow is the job's one writer while it
     * runs, and a start that timed out at the gateway may still have succeeded. A job whose workflow
     * never existed or already closed is failed here (refunded, media removed); a job that
     * completed meanwhile stays completed. The request is marked first: a job failed as canceled
     * then keeps the provider's cost when it had been submitted (rules.ts cancelChargeOf). Returns
     * the job as it is now.
     */
    async cancel(job: Job): Promise<{ job: Job; refunded: number }> {
      await jobsRepo.markCancelRequested(db, job.id, inFlightStatuses);
      const outcome = await workflowsOf(deps).cancel(job.id);
      let refunded = 0;
      if (outcome.state === 'not_found' || outcome.state === 'closed') {
        const message = outcome.state === 'not_found' ? 'the job was canceled' : 'the job was canceled; its workflow had already ended';
        // Acts only if the row is still as read: pending, or generating for the run that closed.
        const result = await fail(job.id, { code: 'canceled', message }, job.status_run_id);
        refunded = result.refunded;
        // A job with no workflow is never started later (the reconciler starts unmarked pending jobs only).
        if (outcome.state === 'not_found') await jobsRepo.markWorkflowStarted(db, job.id);
        if (result.moved && job.provider_ref)
          await workflowsOf(deps)
            .cancelProviderRequest(result.job)
            .catch(() => undefined);
      }
      return { job: (await jobsRepo.getJob(db, job.id))!, refunded };
    },

    /**
     * Starts the workflow that cancels a request the job's own run hands off (workflows/job-generation.ts),
     * through the client, so it runs on the deployment's current build: a child of the run would be
     * pinned to the run's build, whose workers may be gone by the time it runs. One already running
     * under that id is that request's cancel.
     */
    async handOffProviderCancel(jobId: string, handoff: ProviderCancelHandoff): Promise<void> {
      const job = await jobsRepo.getJob(db, jobId);
      if (job) await workflowsOf(deps).cancelProviderRequest(job, handoff);
    },
  };
}

/** The reconciler's moves for a job whose workflow closed while its row says in flight: settled as the workflow would have. */
function createClosedRunReconciles(deps: Pick<JobServiceDeps, 'db' | 'storage' | 'logger' | 'workflows'>, fail: Fail) {
  const { db, storage } = deps;
  return {
    /**
     * A job whose workflow closed (`status`, as Temporal names it) while its row says in flight:
     * the workflow never ran its own settlement (terminated from the Web UI, which skips workflow
     * code, or timed out). Fails and refunds it — only if the row is still as the caller read it,
     * so a reset run that claimed it meanwhile is left alone — then cancels its provider request
     * (`providerCancel`: whether that was asked of Temporal).
     * A terminate counts as a cancel: a later reset does not revive the job. A terminate of run
     * `runId` is recorded in the workspace's audit log (`job.terminated_detected`) in the failing
     * transaction, once per run whoever detects it.
     */
    async reconcileClosed(job: Job, status: string, runId?: string): Promise<FailResult & { providerCancel: boolean }> {
      const canceled = status === 'TERMINATED' || status === 'CANCELLED';
      const message = canceled
        ? `the job was ${status === 'TERMINATED' ? 'terminated' : 'canceled'} by an operator`
        : `the job's workflow ended as ${status.toLowerCase()}`;
      const audit =
        status === 'TERMINATED' && runId
          ? async (tx: Queryable, r: FailResult) => {
              await recordAuditEventOnce(tx, auditEventId('job.terminated_detected', job.id, runId), {
                workspaceId: job.workspace_id,
                action: 'job.terminated_detected',
                actor: RECONCILER_ACTOR,
                targetType: 'job',
                targetId: job.id,
                details: { kind: job.kind, run_id: runId, refunded: r.refunded },
              });
            }
          : undefined;
      const result = await fail(job.id, { code: canceled ? 'canceled' : 'generation_failed', message }, job.status_run_id, audit);
      const providerCancel = result.moved && !!result.job.provider_ref;
      if (providerCancel) {
        try {
          await workflowsOf(deps).cancelProviderRequest(result.job);
        } catch (err) {
          deps.logger?.warn({ jobId: job.id, err: (err as Error).message }, 'could not start the provider cancel of a closed job');
        }
      }
      return { ...result, providerCancel };
    },

    /**
     * A job whose workflow run `runId` completed while its row says in flight: the completion's
     * write was lost (a database crash, a failover to a replica behind). Completed with the outputs
     * stored under its prefix and charged its price (once: a charged job is charged nothing more);
     * with none found, failed and refunded like any closed run. Acts only while the row is still
     * as the caller read it.
     */
    async reconcileCompleted(job: Job, runId: string): Promise<{ completed: boolean; result?: FailResult }> {
      const outputs = await jobOutputs(storage, job.id);
      if (outputs.length === 0) {
        const result = await fail(
          job.id,
          { code: 'generation_failed', message: "the job's workflow completed but its outputs were not found" },
          job.status_run_id,
        );
        return { completed: false, result };
      }
      const extra = {
        providerRef: (job.provider_ref as Record<string, unknown> | null) ?? undefined,
        progress: { phase: 'completed' as const, attempt: job.attempt, percent: 100 },
      };
      const done = await db.transaction().execute(async (tx) => {
        const now = await jobsRepo.lockJob(tx, job.id);
        if (now.status !== job.status || now.status_run_id !== job.status_run_id) return false;
        await completeJob(tx, job.id, outputs, runId, extra);
        return true;
      });
      return { completed: done };
    },
  };
}

/** What follows a cancel once the provider answers it, and the settlement of a job's credits by its status. */
function createCancelSettlement(deps: Pick<JobServiceDeps, 'db'>) {
  const { db } = deps;
  return {
    /** The provider confirmed the cancel of a canceled job's request: what the cancel kept is refunded (once). */
    cancelConfirmed(jobId: string): Promise<number> {
      return db.transaction().execute((tx) => refundConfirmedCancel(tx, jobId));
    },

    /**
     * The provider's answer to the cancel of the job's request `ref`, on its timeline once per
     * request; `refundKept`: a confirmed cancel of the request the charge stands on, which refunds
     * what the customer's cancel kept, in the same transaction. Returns the credits refunded now.
     */
    cancelAnswered(jobId: string, upstream: { provider: string; ref: object; outcome: CancelUpstreamOutcome }, refundKept: boolean): Promise<number> {
      const key = `cancel_upstream:${upstream.provider}:${createHash('sha256').update(JSON.stringify(upstream.ref)).digest('hex').slice(0, 32)}`;
      return db.transaction().execute(async (tx) => {
        const job = await jobsRepo.lockJob(tx, jobId);
        const details = { provider: upstream.provider, outcome: upstream.outcome, ...(job.cancel_kept !== null ? { kept: job.cancel_kept } : {}) };
        await appendTimeline(tx, jobId, [{ key, type: 'cancel_upstream', details }]);
        return refundKept ? refundConfirmedCancel(tx, jobId) : 0;
      });
    },

    /**
     * Whether the workspace's cancels after a submit within `windowMs` are past `limit` (new jobs
     * are refused then, until `retryAfterMs`): counted from the committed job rows, so every gateway
     * replica sees the same count.
     */
    cancelChurn(q: Queryable, workspaceId: string, limit: number, windowMs: number): Promise<{ over: boolean; retryAfterMs: number; counted: number }> {
      return jobsRepo.cancelChurn(q, workspaceId, limit, windowMs);
    },

    /** Settles the job's credits by its status (completed → price, failed → what its cancel kept); the difference written. */
    settle(jobId: string): Promise<number> {
      return db.transaction().execute((tx) => settleByStatus(tx, jobId));
    },
  };
}

/** The job service: its steps, built once per process around one clock, one slot release and one fail. */
export function createJobService(deps: JobServiceDeps) {
  const clock = deps.clock ?? (() => new Date());
  const slotRelease = createSlotRelease(deps);
  const fail = createFail(deps, slotRelease);
  return {
    requireProject,
    quote: createQuote(deps),
    ...createJobCreation(deps, clock),
    ...createRunMoves(deps, fail),
    ...createJobCancels(deps, fail),
    ...createClosedRunReconciles(deps, fail),
    ...createJobFailover(deps, slotRelease),
    ...slotRelease,
    ...createCancelSettlement(deps),
  };
}

export type JobService = ReturnType<typeof createJobService>;
