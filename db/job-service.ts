// The job lifecycle, in one place: quote, create, claim, complete, fail, cancel, settle and
// reconcile a job whose workflow closed without settling it. The gateway's routes, the workflow's
// activities and the worker's reconciler call this; the SQL lives in db/repos/jobs.ts, one
// function per status move, and the Temporal calls reach it through a port (workflows/client.ts
// implements it), so this module sits in db/ and imports no process code.
//
// Money and media follow every move here: a failed job is refunded and its media removed, a
// completed job is charged its price, a revived one is charged again, each exactly once; the
// provider request of an abandoned job is canceled after the refund, never before it.
import type { Logger } from 'pino';
import type { Database, Queryable } from './index.js';
import type { Job, JobError, JobOutput, JobPhase, JobStatus } from './schema.js';
import * as jobsRepo from './repos/jobs.js';
import type { MoveProgress, NewJobInput } from './repos/jobs.js';
import { isFetchedInput, jobOutputs, jobPrefix, type Storage } from '../shared/storage.js';
import type { RawBuilder } from 'kysely';
import type { ProviderCircuits } from './provider-circuits.js';
import { typedParams } from '../shared/job-params.js';
import type { ProviderAttempt, RouteChoice } from '../shared/job-model.js';
import { providerCostFor, routeFor } from '../shared/catalog.js';

/**
 * What a customer's cancel of `job` keeps: nothing before a provider has the request (no reference
 * recorded, or the free local renderer's), else the model's provider cost. A provider that honors
 * cancels gets that back too once it confirms the cancel (cancelConfirmed).
 */
export function cancelChargeOf(job: Job): jobsRepo.CancelCharge {
  const provider = (job.provider_ref as { provider?: string } | null)?.provider;
  if (!provider || provider === 'local') return { kept: 0, afterSubmit: false };
  const route = routeFor(job.model);
  return { kept: route ? providerCostFor(route, typedParams(job).params) : 0, afterSubmit: true };
}

export { IllegalStatusMoveError, InsufficientCreditsError, ProjectNotInWorkspaceError } from './repos/jobs.js';

/** What a cancel found at Temporal (workflows/client.ts cancelJobWorkflow). */
export type WorkflowCancelOutcome =
  /** The workflow runs and was asked to cancel: it fails and refunds the job itself. */
  | { state: 'cancel_requested' }
  /** It completed: the job is completed (or about to be), and is never failed. */
  | { state: 'completed' }
  /** It closed otherwise (failed, canceled, terminated or timed out): nothing runs for the job. */
  | { state: 'closed'; runId: string }
  /** No workflow with this id exists (its start never reached Temporal). */
  | { state: 'not_found' };

/** The Temporal side of the lifecycle, as the service needs it (implemented by workflows/client.ts). */
export interface JobWorkflowPort {
  /** Starts the job's workflow; a job whose workflow runs or ran answers 'already_started'. */
  start(job: Job): Promise<'started' | 'already_started'>;
  /** Asks the job's workflow to cancel, saying what it found. */
  cancel(jobId: string): Promise<WorkflowCancelOutcome>;
  /**
   * Cancels, durably and within a time bound, the provider request of a job that no workflow will
   * clean up (its run was terminated): a small workflow on the provider's queue does it.
   */
  cancelProviderRequest(job: Job): Promise<void>;
}

export interface JobServiceDeps {
  db: Database;
  storage: Storage;
  /** Absent where no Temporal call is made (activities). */
  workflows?: JobWorkflowPort;
  /** The providers' circuit breakers (routeJob); absent where no job is routed (the gateway). */
  circuits?: ProviderCircuits;
  logger?: Pick<Logger, 'warn' | 'info'>;
}

export type FailResult = { moved: boolean; refunded: number; status: JobStatus; job: Job };

/** Where a job goes next (routeJob): a route, or none left; and the request given up, to cancel. */
export type RouteDecision = { route: RouteChoice | null; previousRef: Record<string, unknown> | null };

export function createJobService(deps: JobServiceDeps) {
  const { db, storage } = deps;

  function workflows(): JobWorkflowPort {
    if (!deps.workflows) throw new Error('this job service has no Temporal client');
    return deps.workflows;
  }

  /** Throws ProjectNotInWorkspaceError unless the project is the workspace's: the 403 rule. */
  async function requireProject(q: Queryable, workspaceId: string, projectId: string): Promise<void> {
    const project = await q.selectFrom('projects').select('workspace_id').where('id', '=', projectId).executeTakeFirst();
    if (!project || project.workspace_id !== workspaceId) throw new jobsRepo.ProjectNotInWorkspaceError(projectId);
  }

  /**
   * Removes the job's media but its fetched inputs: no generated media stays for a job that was
   * refunded, and a run an operator's reset revives finds the inputs its replayed request names.
   * The inputs go with the rest of the job's media (retention, DELETE).
   */
  async function removeMedia(jobId: string): Promise<void> {
    for await (const o of storage.list(jobPrefix(jobId))) {
      if (!isFetchedInput(o.key)) await storage.remove(o.key);
    }
  }

  /**
   * Fails the job (refunding it) for run `runId` and removes its media. Idempotent: removing again
   * also catches an output written late by a step still running when the job was canceled.
   */
  async function fail(jobId: string, error: JobError, runId: string | null): Promise<FailResult> {
    const result = await db.transaction().execute((tx) => jobsRepo.failJob(tx, jobId, { code: error.code, message: error.message.slice(0, 500) }, runId, cancelChargeOf));
    if (result.status === 'failed') await removeMedia(jobId);
    return result;
  }

  return {
    requireProject,

    /** The price against the balance, after the project check (a dry run: nothing is written). */
    async quote(q: Queryable, workspaceId: string, projectId: string, price: number): Promise<{ price: number; available: number; sufficient: boolean }> {
      await requireProject(q, workspaceId, projectId);
      const ws = await q.selectFrom('workspaces').select('credits').where('id', '=', workspaceId).executeTakeFirstOrThrow();
      return { price, available: ws.credits, sufficient: ws.credits >= price };
    },

    /**
     * The pending job and its charge, in one statement (so one transaction of its own, or of the
     * caller's `q`). Throws ProjectNotInWorkspaceError or InsufficientCreditsError, writing nothing.
     */
    create(q: Queryable, input: NewJobInput): Promise<Job> {
      return jobsRepo.insertJobWithCharge(q, input);
    },

    /**
     * Starts the committed job's workflow. A failed start leaves the job to the reconciler (it
     * starts jobs whose workflow has not run after a few seconds): the answer is false then.
     */
    async start(job: Job, opts: { logFailure?: boolean } = {}): Promise<boolean> {
      try {
        await workflows().start(job);
        return true;
      } catch (err) {
        if (opts.logFailure !== false) deps.logger?.warn({ jobId: job.id, err: (err as Error).message }, 'workflow start failed; left for the reconciler');
        return false;
      }
    },

    /**
     * The move to generating for run `runId` (jobsRepo.claimOf): one UPDATE for a pending job,
     * the common case; else the transaction that decides (a retry, a reset, a revival).
     */
    async claim(
      jobId: string,
      runId: string,
      /** The phase the job is in next, as a function of the row and as SQL over it (for the one UPDATE). */
      progress: { phase: (job: Job) => JobPhase; phaseSql: JobPhase | RawBuilder<JobPhase>; attempt: number },
    ): Promise<{ job: Job; claim: 'ours' | 'take' | 'revive' }> {
      const started = await jobsRepo.startPendingJob(db, jobId, runId, { phase: progress.phaseSql, attempt: progress.attempt });
      if (started) return { job: started, claim: 'take' };
      const move: MoveProgress = { phase: progress.phase, attempt: progress.attempt };
      return db.transaction().execute((tx) => jobsRepo.claimJob(tx, jobId, runId, move));
    },

    /**
     * → completed with its outputs for run `runId` (claiming the job first in a reset run),
     * charged its price. A job canceled meanwhile stays failed and refunded, and the outputs just
     * stored are removed: no media without payment (IllegalStatusMoveError is rethrown).
     */
    async complete(jobId: string, outputs: JobOutput[], runId: string, extra: { providerRef?: Record<string, unknown>; attempt: number }): Promise<Job> {
      const moveExtra = { providerRef: extra.providerRef, progress: { phase: 'completed' as const, attempt: extra.attempt, percent: 100 } };
      try {
        return (await jobsRepo.completeGeneratingJob(db, jobId, outputs, runId, moveExtra)) ?? (await db.transaction().execute((tx) => jobsRepo.completeJob(tx, jobId, outputs, runId, moveExtra))).job;
      } catch (err) {
        if (err instanceof jobsRepo.IllegalStatusMoveError && err.from === 'failed') await removeMedia(jobId);
        throw err;
      }
    },

    fail,

    /** The provider request of run `runId`'s job, durable before anything after the submit can fail. */
    recordProviderRef(jobId: string, runId: string, ref: Record<string, unknown>, attempt: number): Promise<boolean> {
      return jobsRepo.recordProviderRef(db, jobId, runId, ref, { phase: 'generating', attempt });
    },

    /**
     * A customer's cancel. Always through Temporal: the workflow is the job's one writer while it
     * runs, and a start that timed out at the gateway may still have succeeded. A job whose workflow
     * never existed or already closed is failed here (refunded, media removed); a job that
     * completed meanwhile stays completed. The request is marked first: a job failed as canceled
     * then keeps the provider's cost when it had been submitted (cancelChargeOf). Returns the job
     * as it is now.
     */
    async cancel(job: Job): Promise<{ job: Job; refunded: number }> {
      await jobsRepo.markCancelRequested(db, job.id);
      const outcome = await workflows().cancel(job.id);
      let refunded = 0;
      if (outcome.state === 'not_found' || outcome.state === 'closed') {
        const message = outcome.state === 'not_found' ? 'the job was canceled' : "the job was canceled; its workflow had already ended";
        // Acts only if the row is still as read: pending, or generating for the run that closed.
        const result = await fail(job.id, { code: 'canceled', message }, job.status_run_id);
        refunded = result.refunded;
        // A job with no workflow is never started later (the reconciler starts unmarked pending jobs only).
        if (outcome.state === 'not_found') await jobsRepo.markWorkflowStarted(db, job.id);
        if (result.moved && job.provider_ref) await workflows().cancelProviderRequest(result.job).catch(() => undefined);
      }
      return { job: (await jobsRepo.getJob(db, job.id))!, refunded };
    },

    /**
     * A job whose workflow closed (`status`, as Temporal names it) while its row says in flight:
     * the workflow never ran its own settlement (terminated from the Web UI, which skips workflow
     * code, or timed out). Fails and refunds it — only if the row is still as the caller read it,
     * so a reset run that claimed it meanwhile is left alone — then cancels its provider request.
     * A terminate counts as a cancel: a later reset does not revive the job.
     */
    async reconcileClosed(job: Job, status: string): Promise<FailResult> {
      const canceled = status === 'TERMINATED' || status === 'CANCELLED';
      const message = canceled ? `the job was ${status === 'TERMINATED' ? 'terminated' : 'canceled'} by an operator` : `the job's workflow ended as ${status.toLowerCase()}`;
      const result = await fail(job.id, { code: canceled ? 'canceled' : 'generation_failed', message }, job.status_run_id);
      if (result.moved && result.job.provider_ref) {
        try {
          await workflows().cancelProviderRequest(result.job);
        } catch (err) {
          deps.logger?.warn({ jobId: job.id, err: (err as Error).message }, 'could not start the provider cancel of a closed job');
        }
      }
      return result;
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
        const result = await fail(job.id, { code: 'generation_failed', message: "the job's workflow completed but its outputs were not found" }, job.status_run_id);
        return { completed: false, result };
      }
      const extra = { providerRef: (job.provider_ref as Record<string, unknown> | null) ?? undefined, progress: { phase: 'completed' as const, attempt: job.attempt, percent: 100 } };
      const done = await db.transaction().execute(async (tx) => {
        const now = await tx.selectFrom('jobs').select(['status', 'status_run_id']).where('id', '=', job.id).forUpdate().executeTakeFirst();
        if (!now || now.status !== job.status || now.status_run_id !== job.status_run_id) return false;
        await jobsRepo.completeJob(tx, job.id, outputs, runId, extra);
        return true;
      });
      return { completed: done };
    },

    /**
     * The route run `runId`'s job uses next, among its failover routes (params.routes). At the start
     * (`gaveUp` absent): the first route from the job's current one whose circuit breaker admits a
     * new job. After a route failed in a way another provider can fix (`gaveUp`): the breaker
     * counts the failure, the job records the attempt and forgets that route's request (answered
     * for its cancel), and moves to the next admitted route after it — or the next one at all when
     * every breaker is open (the job still gets its chance); `route` null when none is left. The
     * job is charged nothing here: its price was fixed at create, whichever provider serves it.
     */
    async routeJob(jobId: string, runId: string, gaveUp: ProviderAttempt | undefined, attempt: number): Promise<RouteDecision> {
      const job = await jobsRepo.getJob(db, jobId);
      if (!job || job.status !== 'generating' || job.status_run_id !== runId) throw new jobsRepo.IllegalStatusMoveError(jobId, job?.status ?? 'pending', 'generating', 'this run does not hold it');
      const { params } = typedParams(job);
      const routes = params.routes ?? [];
      const from = gaveUp?.provider ?? params.provider;
      // A retry of this step after the give-up committed: the route it moved to (none when the job
      // stayed on the route it gave up) and the request it gave up, from the stored attempt; no
      // breaker is asked again.
      const repeat = gaveUp ? job.provider_attempts.find((a) => a.provider === gaveUp.provider && a.error === gaveUp.error) : undefined;
      if (repeat) return { route: params.provider === from ? null : (routes.find((r) => r.provider === params.provider) ?? null), previousRef: repeat.ref ?? null };
      const at = routes.findIndex((r) => r.provider === from);
      const candidates = gaveUp ? routes.slice(at + 1) : routes.slice(Math.max(at, 0));
      let route = candidates[0];
      for (const c of candidates) {
        if (!deps.circuits || (await deps.circuits.admit(c.provider, job.model, jobId))) {
          route = c;
          break;
        }
      }
      if (!gaveUp && (!route || route.provider === params.provider)) return { route: route ?? null, previousRef: null };
      // No route left: the attempt is still recorded and its request forgotten (the job stays on it to fail).
      const to = route ?? { provider: from, provider_model_id: params.provider_model_id ?? '' };
      const moved = await jobsRepo.switchJobRoute(db, jobId, runId, { from, to, ...(gaveUp ? { gaveUp } : {}), attempt });
      if (!moved) throw new jobsRepo.IllegalStatusMoveError(jobId, job.status, 'generating', 'this run does not hold it');
      if (gaveUp && !moved.moved) {
        // Another attempt of this step committed the give-up meanwhile: answered as above.
        const now = typedParams(moved.job).params;
        const current = now.provider === from ? null : (routes.find((r) => r.provider === now.provider) ?? null);
        return { route: current, previousRef: moved.previousRef };
      }
      // Counted once: a retry of this step after the move committed finds the job moved already.
      if (gaveUp && moved.moved) {
        try {
          await deps.circuits?.record(gaveUp.provider, job.model, { ok: false, error: gaveUp.error, jobId });
        } catch (err) {
          deps.logger?.warn({ jobId, err: (err as Error).message }, 'circuit breaker outcome not recorded');
        }
      }
      return { route: route ?? null, previousRef: moved.previousRef };
    },

    /** Counts a completed job toward its serving route's circuit breaker (jobs with failover routes only; once per job, however often a step repeats). */
    async routeSucceeded(job: Job): Promise<void> {
      const { params } = typedParams(job);
      if (!params.routes || !deps.circuits) return;
      try {
        await deps.circuits.record(params.provider, job.model, { ok: true, jobId: job.id });
      } catch (err) {
        deps.logger?.warn({ jobId: job.id, err: (err as Error).message }, 'circuit breaker outcome not recorded');
      }
    },

    /** The provider confirmed the cancel of a canceled job's request: what the cancel kept is refunded (once). */
    cancelConfirmed(jobId: string): Promise<number> {
      return db.transaction().execute((tx) => jobsRepo.refundConfirmedCancel(tx, jobId));
    },

    /**
     * Whether the workspace's cancels after a submit within `windowMs` are past `limit` (new jobs
     * are refused then, until `retryAfterMs`): counted from the committed job rows, so every gateway
     * replica sees the same count.
     */
    cancelChurn(q: Queryable, workspaceId: string, limit: number, windowMs: number): Promise<{ over: boolean; retryAfterMs: number }> {
      return jobsRepo.cancelChurn(q, workspaceId, limit, windowMs);
    },

    /** Settles the job's credits by its status (completed → price, failed → zero); the difference written. */
    settle(jobId: string): Promise<number> {
      return db.transaction().execute((tx) => jobsRepo.settleByStatus(tx, jobId));
    },
  };
}

export type JobService = ReturnType<typeof createJobService>;
