// The provider steps' shared machinery: quiet heartbeats carrying the step's request, provider calls
// turned into the right Temporal failures (and failover), progress writes and the output store.
import { Context, ApplicationFailure } from '@temporalio/activity';
import type { JobPhase } from '../../db/schema.js';
import * as jobsRepo from '../../db/repos/jobs.js';
import { redactText } from '../../shared/redact.js';
import { failureTypes } from '../../shared/failure-types.js';
import { ProviderError, type PollResult, type ProviderContext, type ProviderRef } from '../providers/types.js';
import type { ProviderName } from '../../shared/job-model.js';
import type { ProviderCheck, ProviderStepOptions } from '../../workflows/activity-types.js';
import { failingForMs, retryWaitMs } from '../../shared/provider-retry.js';
import { outputFrame, routeFor } from '../../shared/catalog.js';
import { imageTargetOf, type ImageTarget } from '../../shared/output-format.js';
import { typedParams } from '../../shared/job-params.js';
import { stepAttempt, nonRetryable, currentRunId, holdJob, type JobActivityDeps } from './common.js';
import { createOutputStore } from './outputs.js';
import { backgroundOf, takesBackground } from './background.js';
import type { ProgressWriter } from './progress.js';
import { createRouteSlots } from './slots.js';

// ------------------------------------------------------------------ provider activities

/**
 * A provider activity's first second sends no heartbeat. The SDK sends the first heartbeat at once
 * (a server round trip and a write of the workflow's state) and throttles the rest, so a provider
 * step that ends within a second (an image, a status check) would pay that for nothing: its
 * heartbeat timeout is 30 s (PROVIDER_HEARTBEAT_TIMEOUT), and a cancellation waits at most that second longer. Later calls
 * go through as they are.
 */
export const QUIET_START_MS = 1000;

/** Context.heartbeat, but silent during the first `quietMs` of the attempt (from begin() or the first beat). */
export function quietHeartbeat(quietMs: number): { begin(now?: number): void; beat(details?: unknown, now?: number): void } {
  const attemptStarted = new WeakMap<Context, number>();
  const startedAt = (ctx: Context, now: number) => {
    let started = attemptStarted.get(ctx);
    if (started === undefined) attemptStarted.set(ctx, (started = now));
    return started;
  };
  return {
    begin(now = Date.now()) {
      startedAt(Context.current(), now);
    },
    beat(details, now = Date.now()) {
      const ctx = Context.current();
      if (now - startedAt(ctx, now) >= quietMs) ctx.heartbeat(details);
    },
  };
}

/**
 * Whether attempt `attempt` of a provider step of a job with another route gives its route up after
 * a retryable failure (5xx, 429, timeouts): never for a request the provider last reported running
 * or done (its result is paid for, or being made; the job's deadline ends the wait), otherwise once
 * the provider has been failing for `budgetMs`, measured by the retry schedule between the step's
 * failed attempts (so time the step spent queued behind a busy fleet counts for nothing).
 */
export function givesUp(step: ProviderStepOptions, attempt: number, budgetMs: number): boolean {
  if (step.reported === 'running' || step.reported === 'succeeded') return false;
  return failingForMs(attempt) >= budgetMs;
}

/** How often a provider call that is still running heartbeats (well inside the steps' heartbeat timeout). */
export const PROVIDER_BEAT_EVERY_MS = 5_000;

/** What a provider step's heartbeats carry: the request it made, so a retry finds it even when Postgres did not take it. */
export interface StepDetails {
  ref?: ProviderRef;
  detail?: unknown;
}

/** What createJobProviderActivities is given. */
export type ProviderActivityDeps = Pick<JobActivityDeps, 'db' | 'storage' | 'config' | 'adapterFor' | 'metrics' | 'jobs'> & {
  progress: ProgressWriter;
  heartbeatQuietMs?: number;
  beatEveryMs?: number;
};

/**
 * The state and helpers the provider steps share (./submit.ts, ./check.ts, ./cancel.ts): one per
 * activity registration, so attempts of every step see the same heartbeat and failover bookkeeping.
 */
export function createProviderStepKit(deps: ProviderActivityDeps) {
  const { storage, db, jobs } = deps;
  const heartbeats = quietHeartbeat(deps.heartbeatQuietMs ?? QUIET_START_MS);
  const beatEveryMs = deps.beatEveryMs ?? PROVIDER_BEAT_EVERY_MS;
  // The request each running attempt made or found, repeated in every heartbeat it sends.
  const attemptRef = new WeakMap<Context, ProviderRef>();
  // Attempts whose job has another route, with what the provider last reported of the request:
  // an outage past the failover budget ends them, unless the provider said it was running.
  const mayFailOver = new WeakMap<Context, ProviderStepOptions>();
  const failoverBudgetMs = deps.config.PROVIDER_FAILOVER_BUDGET_MS;
  // Per submit attempt: how many attempts before it only waited for a route slot (they measure no outage).
  const slotWaits = new WeakMap<Context, number>();
  // Per submit attempt: the customer's deadline (ms), which caps a wait the provider asks for.
  const notAfterOf = new WeakMap<Context, number>();
  const slots = createRouteSlots({ db, config: deps.config, wake: (ids) => jobs.wakeSlotGrantees(ids) });
  const heartbeat = (detail?: unknown) => heartbeats.beat({ ref: attemptRef.get(Context.current()), detail } satisfies StepDetails);

  function providerContext(): ProviderContext {
    const ctx = Context.current();
    // The attempt's quiet second starts with its first provider step.
    heartbeats.begin();
    return {
      storage,
      inputUrl: (key) => storage.url(key, 3600),
      heartbeat: (d) => heartbeat(d),
      signal: ctx.cancellationSignal,
      attempt: ctx.info.attempt,
    };
  }

  /** The request an earlier attempt of this step made, from its last heartbeat. */
  function refFromHeartbeat(): ProviderRef | undefined {
    const details = Context.current().info.heartbeatDetails as StepDetails | undefined;
    return details && typeof details === 'object' && details.ref ? details.ref : undefined;
  }

  /** A progress write never fails (and so never repeats) a provider step: it is logged and skipped. */
  async function bestEffort(what: string, fn: () => Promise<void>): Promise<void> {
    try {
      await fn();
    } catch (err) {
      Context.current().log.warn(`${what} not written`, { error: redactText((err as Error).message) });
    }
  }

  /** The job as run `runId` holds it, claimed when this is the run's first database step (a reset run's). */
  const ownJob = (jobId: string, runId: string, phase: JobPhase) => holdJob(db, jobs, jobId, runId, phase);

  /**
   * Records the request just made on the job row before anything else can fail, retrying a lost
   * connection for a few seconds (the heartbeat already carries it, for a retry of the step). A
   * run that no longer holds the job cancels the request it just made: nobody would poll it.
   */
  async function recordRef(provider: ProviderName, model: string, jobId: string, runId: string, ref: ProviderRef): Promise<void> {
    const attempt = stepAttempt();
    for (let i = 0; ; i++) {
      let recorded: boolean;
      try {
        recorded = await jobs.recordProviderRef(jobId, runId, ref, attempt);
      } catch (err) {
        if (i >= 4) throw err;
        heartbeat('recording the provider reference');
        await new Promise((r) => setTimeout(r, 500 * 2 ** i));
        continue;
      }
      if (recorded) return;
      await call(provider, model, 'cancel', () => deps.adapterFor(provider).cancel(ref, providerContext())).catch(() => undefined);
      await slots.release(jobId);
      throw nonRetryable(failureTypes.illegalStatusMove, `job ${jobId} is no longer held by this run; its new request was canceled`);
    }
  }

  /** The time the step has left: to the customer's deadline, and to the step's schedule-to-close timeout (across its attempts). */
  function remainingMs(ctx: Context, now = Date.now()): number | undefined {
    const { scheduledTimestampMs, scheduleToCloseTimeoutMs } = ctx.info;
    const ends = [notAfterOf.get(ctx), scheduleToCloseTimeoutMs > 0 ? scheduledTimestampMs + scheduleToCloseTimeoutMs : undefined].filter(
      (t): t is number => t !== undefined && Number.isFinite(t),
    );
    return ends.length ? Math.min(...ends) - now : undefined;
  }

  /** Runs a provider call, turning ProviderError into the right Temporal failure and timing it. */
  async function call<T>(provider: ProviderName, model: string, op: string, fn: () => Promise<T>): Promise<T> {
    const start = process.hrtime.bigint();
    let ok = false;
    // A long synchronous call (a speech synthesis, a slow status answer) keeps the step alive:
    // without beats its heartbeat timeout would start the same paid call again beside it.
    const ctx = Context.current();
    const beats = setInterval(() => ctx.heartbeat({ ref: attemptRef.get(ctx), detail: `waiting for ${op}` } satisfies StepDetails), beatEveryMs);
    try {
      const v = await fn();
      ok = true;
      return v;
    } catch (err) {
      if (err instanceof ProviderError) {
        // Another provider can fix our account's trouble or an outage that outlasted the budget; the
        // customer's own faults (content policy, invalid input) fail the job wherever it runs.
        const failover = mayFailOver.get(ctx);
        // A request the provider reported failed is not waited for like one it is still running.
        const step = failover && err.ended ? { ...failover, reported: undefined } : failover;
        const attempt = ctx.info.attempt - (slotWaits.get(ctx) ?? 0);
        if (step && (err.failsOverNow || (err.retryable && givesUp(step, attempt, failoverBudgetMs)))) {
          const failingS = Math.round(failingForMs(attempt) / 1000);
          throw nonRetryable(
            failureTypes.providerFailover,
            err.retryable ? `${err.message} (failing for ${failingS} s, ${ctx.info.attempt} attempts)` : err.message,
          );
        }
        if (!err.retryable) throw nonRetryable(failureTypes.providerRejected, err.message);
        throw ApplicationFailure.create({
          type: failureTypes.providerUnavailable,
          message: err.message,
          nextRetryDelay: retryWaitMs(err.retryAfterMs, remainingMs(ctx)),
        });
      }
      throw err;
    } finally {
      clearInterval(beats);
      deps.metrics?.providerCall(provider, model, op, Number(process.hrtime.bigint() - start) / 1e9, ok);
    }
  }

  /** Asks the provider once, storing the progress the workflow's query will hold after it. */
  async function poll(provider: ProviderName, model: string, ref: ProviderRef): Promise<PollResult> {
    const adapter = deps.adapterFor(provider);
    const result = await call(provider, model, 'poll', () => adapter.poll(ref, providerContext()));
    const info = Context.current().info;
    // The workflow id is the job id.
    const jobId = info.workflowExecution?.workflowId;
    // Done at the provider: the outputs are stored next (a phase worth showing only when there is
    // something to download; outputs the provider wrote into our store are only checked).
    const toDownload = (result.outputs ?? []).some((o) => !o.key);
    if (jobId && result.state === 'succeeded' && toDownload)
      await bestEffort('progress', () => deps.progress.phase(jobId, 'storing_outputs', info.attempt, result.percent ?? null));
    if (jobId && (result.state === 'queued' || result.state === 'running')) {
      const p = {
        percent: result.percent ?? null, // null: keep the last percent
        queuePosition: result.state === 'queued' ? (result.queuePosition ?? null) : null,
        attempt: info.attempt,
      };
      await bestEffort('progress', () => deps.progress.poll(jobId, p));
    }
    return result;
  }

  const store = createOutputStore({ storage, config: deps.config, adapterFor: deps.adapterFor, heartbeat });

  /**
   * One status check; when the provider is done, its outputs are streamed into our store at once —
   * unless the job is no longer this run's to generate (a worker frozen past its heartbeat timeout,
   * resumed after another took the step over and ended the job): such a step writes nothing.
   */
  async function check(
    provider: ProviderName,
    req: { jobId: string; model: string },
    ref: ProviderRef,
    submittedNow = false,
    storeOutputs = true,
  ): Promise<ProviderCheck> {
    const { outputs, ...result } = await poll(provider, req.model, ref);
    // A wait (./await.ts) leaves the storing to a check on the provider's queue.
    if (result.state !== 'succeeded' || !storeOutputs) return { ...result, stored: null };
    const job = deps.adapterFor(provider).free ? undefined : await stillHeld(req.jobId, currentRunId());
    // A route whose video frame is undocumented has its output scaled to the asked frame.
    const route = routeFor(req.model);
    const frame = job && route ? outputFrame(route, provider, job.params) : undefined;
    // Only a kind that takes a background reads its job for one (the local renderer's step has not read it yet).
    const withBackground = route && takesBackground(route) ? (job ?? (await jobsRepo.getJob(db, req.jobId))) : undefined;
    const background = withBackground && route ? await backgroundOf(db, storage, withBackground, route) : undefined;
    // An image job's outputs are stored in the format it asked: its row's, or (the local renderer,
    // whose checks read no row and so ride out a database outage) what its reference kept of its request.
    const typed = job ? typedParams(job) : undefined;
    const image = typed?.kind === 'image' ? imageTargetOf(typed.params) : route?.kind === 'image' ? (ref as { image?: ImageTarget }).image : undefined;
    return { ...result, stored: await store(provider, req.jobId, outputs ?? [], submittedNow, frame, background, image) };
  }

  /** Throws (not retried) unless run `runId` still generates the job; the job otherwise. */
  async function stillHeld(jobId: string, runId: string) {
    const job = await jobsRepo.getJob(db, jobId);
    if (job?.status === 'generating' && job.status_run_id === runId) return job;
    Context.current().log.warn('provider step stopped: the job is no longer generating for this run', { jobId, status: job?.status ?? null });
    throw nonRetryable(
      failureTypes.illegalStatusMove,
      `job ${jobId} is no longer generating for this run (${job?.status ?? 'missing'}); its outputs are not stored again`,
    );
  }

  return {
    deps,
    db,
    jobs,
    attemptRef,
    mayFailOver,
    notAfterOf,
    slotWaits,
    slots,
    heartbeat,
    providerContext,
    refFromHeartbeat,
    ownJob,
    recordRef,
    call,
    check,
    bestEffort,
  };
}

export type ProviderStepKit = ReturnType<typeof createProviderStepKit>;
