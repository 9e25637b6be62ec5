// Activities of the generation pipeline, shared by the four job kinds. Two groups, so fleets can run
// apart: `io` activities (Postgres, input fetching; the Postgres ones run as LOCAL activities of
// the workflow worker) and `provider` activities (provider calls and output streaming: they need
// storage and provider keys, and the database for the job's provider reference and progress). Every
// status move goes through the job service (jobs/service.ts), for the run the step belongs to.
//
// Progress lives in the job row, written by the steps themselves so a status read is one Postgres
// read and never a Temporal query: each step stores the phase the workflow's `progress` query
// reports while it runs (startGenerating → fetching_inputs or submitting, prepareProviderRequest →
// submitting, the recorded provider reference → generating, a check seeing success →
// storing_outputs, completeJob / failJob → the end), and checks store the provider's percent and
// queue position when they changed, at most once per PROGRESS_WRITE_INTERVAL_MS per job. A progress
// write that fails is logged and skipped: it never fails (and so never repeats) a provider step.
import { Context, ApplicationFailure } from '@temporalio/activity';
import { sql } from 'kysely';
import type { Database } from '../db/index.js';
import type { Job, JobOutput, JobPhase, JobStatus } from '../db/schema.js';
import * as jobsRepo from '../db/repos/jobs.js';
import * as progressRepo from '../db/repos/job-progress.js';
import { findUploadForJob } from '../db/repos/uploads.js';
import { redactText } from '../shared/redact.js';
import type { Storage } from '../shared/storage.js';
import { IllegalStatusMoveError, InsufficientCreditsError, type JobService } from '../jobs/index.js';
import type { Config } from '../shared/config.js';
import { failureTypes } from '../shared/failure-types.js';
import { routeFor } from '../shared/catalog.js';
import { providerCancel } from '../shared/routing.js';
import { typedParams } from '../shared/job-params.js';
import { storeProviderOutput } from './providers/outputs.js';
import { toApplicationFailure } from './uploads.js';
import {
  ProviderError,
  type InputFile,
  type PollResult,
  type ProviderAdapter,
  type ProviderContext,
  type ProviderOutput,
  type ProviderRef,
  type ProviderRequest,
} from './providers/types.js';
import type { ProviderName, RunClaim } from '../shared/job-model.js';
import type { JobIoActivities, JobProviderActivities, ProviderCheck, ProviderStepOptions } from '../workflows/activity-types.js';
import { failingForMs } from '../shared/provider-retry.js';

/** Whether two provider references name the same request, whatever their key order. */
function sameRef(a: ProviderRef, b: ProviderRef): boolean {
  const canonical = (r: ProviderRef) => JSON.stringify(Object.entries(r).sort(([x], [y]) => (x < y ? -1 : 1)));
  return canonical(a) === canonical(b);
}

export interface JobActivityDeps {
  db: Database;
  storage: Storage;
  /** The process's job service (the activities' dependency, built where the worker is composed). */
  jobs: JobService;
  config: Config;
  adapterFor(name: ProviderName): ProviderAdapter;
  /** Stores a remote URL's bytes as a job input, through the SSRF-safe fetcher. */
  fetchRemoteInput(args: { url: string; jobId: string; workspaceId: string; role: InputFile['role']; expect: 'image' | 'video' }): Promise<{ key: string; contentType: string; size: number }>;
  metrics?: { providerCall(provider: string, model: string, op: string, seconds: number, ok: boolean): void; jobFinished(job: FinishedJob, outcome: 'completed' | 'failed'): void };
}

/** The attempt of the running activity (1 unless the step is being retried). */
const stepAttempt = () => Context.current().info.attempt;

const nonRetryable = (type: string, message: string) => ApplicationFailure.create({ type, message, nonRetryable: true });

/** The workflow run this activity works for (status moves record it; see jobs/moves.ts). */
function currentRunId(): string {
  const runId = Context.current().info.workflowExecution?.runId;
  if (!runId) throw nonRetryable(failureTypes.illegalStatusMove, 'job activities run only on behalf of a workflow');
  return runId;
}

/** The run holding the job and since when, for the pipeline's deadline (a row claimed before claims were timed: since its start). */
export function runClaim(job: Pick<Job, 'status_run_id' | 'claimed_at' | 'started_at'>): RunClaim | undefined {
  const at = job.claimed_at ?? job.started_at;
  return job.status_run_id && at ? { runId: job.status_run_id, at: new Date(at).getTime() } : undefined;
}

/**
 * The job as run `runId` holds it, claiming it when this is the run's first live database step (a
 * reset run may start at any step): a refused claim fails the step for good.
 */
async function holdJob(db: Database, jobs: JobService, jobId: string, runId: string, phase: JobPhase): Promise<Job> {
  const job = await jobsRepo.getJob(db, jobId);
  if (!job) throw nonRetryable(failureTypes.inputUnavailable, `job ${jobId} does not exist`);
  if (job.status === 'generating' && job.status_run_id === runId) return job;
  try {
    return (await jobs.claim(jobId, runId, { phase: () => phase, phaseSql: phase, attempt: stepAttempt() })).job;
  } catch (err) {
    throw stepFailure(err);
  }
}

// ------------------------------------------------------------------ io activities

/** Only a replace-actor job given by URLs needs a remote fetch before its request can be built. */
export function needsRemoteFetch(job: Pick<Job, 'kind' | 'params'>): boolean {
  const t = typedParams(job);
  return t.kind === 'replace_actor' && !(t.params.image_file_id && t.params.video_file_id);
}

/** The phase after startGenerating as SQL over the job's row: needsRemoteFetch, for the one-statement start (a test holds the two equal). */
export const nextPhaseSql = sql<JobPhase>`case when kind = 'replace_actor' and not (coalesce(params->>'image_file_id', '') <> '' and coalesce(params->>'video_file_id', '') <> '') then 'fetching_inputs' else 'submitting' end`;

export function createJobIoActivities(deps: JobActivityDeps): JobIoActivities {
  const { db, jobs } = deps;

  async function uploadInput(job: Job, id: string, role: InputFile['role'], expect: 'image' | 'video'): Promise<InputFile> {
    const up = await findUploadForJob(db, job.workspace_id, id);
    if (!up || up.file_type !== expect) throw nonRetryable(failureTypes.inputUnavailable, `file upload ${id} is no longer available as a ${expect}`);
    return { role, key: up.object_key, contentType: up.mime_type };
  }

  /** The provider request of a job whose inputs are in our store (fetching URL inputs first, safely). */
  async function buildProviderRequest(job: Job): Promise<ProviderRequest> {
    const jobId = job.id;
    const route = routeFor(job.model);
    if (!route) throw nonRetryable(failureTypes.inputUnavailable, `model ${job.model} is not in the catalog`);
    const inputs: InputFile[] = [];
    const t = typedParams(job);
    // The provider's model id was fixed when the job was created (rows from before then: the catalog's).
    const base = { jobId, kind: job.kind, model: job.model, route, providerModelId: t.params.provider_model_id, inputs };
    let req: ProviderRequest;
    switch (t.kind) {
      case 'image': {
        const p = t.params;
        req = { ...base, prompt: p.prompt, aspectRatio: p.aspect_ratio, count: p.count };
        break;
      }
      case 'video': {
        const p = t.params;
        req = { ...base, prompt: p.prompt, aspectRatio: p.aspect_ratio, duration: p.duration, resolution: p.resolution };
        if (p.start_frame_file_id) inputs.push(await uploadInput(job, p.start_frame_file_id, 'start_frame', 'image'));
        if (p.end_frame_file_id) inputs.push(await uploadInput(job, p.end_frame_file_id, 'end_frame', 'image'));
        for (const id of p.reference_file_ids ?? []) inputs.push(await uploadInput(job, id, 'reference', 'image'));
        break;
      }
      case 'replace_actor': {
        const p = t.params;
        req = { ...base, prompt: p.prompt, aspectRatio: p.aspect_ratio, duration: p.duration, resolution: p.resolution };
        if (p.image_file_id && p.video_file_id) {
          inputs.push(await uploadInput(job, p.image_file_id, 'image', 'image'));
          inputs.push(await uploadInput(job, p.video_file_id, 'video', 'video'));
        } else if (p.image_url && p.video_url) {
          for (const [role, url, expect] of [['image', p.image_url, 'image'], ['video', p.video_url, 'video']] as const) {
            Context.current().heartbeat(role);
            const stored = await deps.fetchRemoteInput({ url, jobId, workspaceId: job.workspace_id, role, expect });
            inputs.push({ role, key: stored.key, contentType: stored.contentType });
          }
        } else {
          throw nonRetryable(failureTypes.inputUnavailable, 'a replace-actor job needs an image and a video (files or URLs)');
        }
        break;
      }
      case 'talking_actor': {
        const p = t.params;
        const actor = await db.selectFrom('actors').selectAll().where('id', '=', p.actor_id).executeTakeFirst();
        const voice = await db.selectFrom('voices').selectAll().where('id', '=', p.voice_id).executeTakeFirst();
        if (!actor || !voice) throw nonRetryable(failureTypes.inputUnavailable, 'the actor or voice of this job no longer exists');
        req = {
          ...base,
          script: p.script,
          aspectRatio: p.aspect_ratio,
          voiceOptions: p.voice_options ?? undefined,
          voice: { id: voice.id, ttsVoice: voice.tts_voice, providerVoiceId: voice.provider_voice_id, gender: voice.gender },
        };
        inputs.push({ role: 'actor_image', key: actor.reference_image_key, contentType: 'image/png' });
        break;
      }
    }
    return req;
  }

  /** The job service's status moves as activity failures: a refused move ends the job, a lost connection is retried. */
  async function asStep<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw stepFailure(err);
    }
  }

  return {
    /**
     * Claims the job for this run: pending → generating, or a reset run taking it over (failed →
     * generating re-charges a refunded job). The run id comes from the activity's own context, so a
     * late attempt of the run that failed the job, or a job canceled before any workflow ran, is
     * refused. The provider request is built in the same step when every input is already in our
     * store (all but replace-actor jobs given by URL, whose request comes from prepareProviderRequest
     * on the fetch queue: `request` is null then). A local activity: it never fetches a remote URL.
     */
    async startGenerating(jobId: string): Promise<{ request: ProviderRequest | null; claim?: RunClaim }> {
      const phase = (j: Job): JobPhase => (needsRemoteFetch(j) ? 'fetching_inputs' : 'submitting');
      const { job } = await asStep(() => jobs.claim(jobId, currentRunId(), { phase, phaseSql: nextPhaseSql, attempt: stepAttempt() }));
      return { request: needsRemoteFetch(job) ? null : await buildProviderRequest(job), claim: runClaim(job) };
    },

    /**
     * Resolves the job's inputs into objects in our store (fetching remote URLs safely) and builds
     * the provider request; claims the job first when this is the run's first database step.
     */
    async prepareProviderRequest(jobId: string): Promise<ProviderRequest> {
      const req = await buildProviderRequest(await holdJob(db, jobs, jobId, currentRunId(), 'fetching_inputs'));
      // The workflow submits next: the phase says so even while no provider fleet has taken it.
      await progressRepo.setJobPhase(db, jobId, 'submitting', stepAttempt());
      return req;
    },

    /**
     * → completed with its outputs (and the provider reference, when given), charged its price;
     * claims the job first when this is the run's first database step (a reset run). A job canceled
     * meanwhile stays failed and refunded, and its outputs are removed: no media without payment.
     */
    async completeJob(jobId: string, outputs: JobOutput[], ref?: ProviderRef): Promise<void> {
      const job = await asStep(() => jobs.complete(jobId, outputs, currentRunId(), { providerRef: ref, attempt: stepAttempt() }));
      deps.metrics?.jobFinished(finished(job, 0), 'completed');
      await jobs.routeSucceeded(job);
    },

    /** The next route of a job with failover routes (the job service decides, with the circuit breakers). */
    async routeJob(jobId, gaveUp) {
      // A reset to the task that gives a route up (or that follows the inputs' fetch) runs this step first.
      const held = await holdJob(db, jobs, jobId, currentRunId(), 'submitting');
      const decision = await asStep(() => jobs.routeJob(jobId, currentRunId(), gaveUp ?? undefined, stepAttempt()));
      if (gaveUp) Context.current().log.warn('provider route given up', { jobId, provider: gaveUp.provider, next: decision.route?.provider ?? null, error: redactText(gaveUp.error) });
      return { route: decision.route, previousRef: (decision.previousRef as ProviderRef | null) ?? null, claim: runClaim(held) };
    },

    /**
     * → failed with `{ code, message }`, refunded and its media removed, for this run. Answers the
     * job's status after it: `completed` for a job whose completion committed first (its outputs
     * stay), `generating` for one another run has claimed; `failedHere` when this run failed it
     * (a retry after the commit included), not a cancel or an earlier run.
     */
    async failJob(jobId: string, code: 'generation_failed' | 'canceled', message: string): Promise<{ status: JobStatus; outputs: number; failedHere: boolean }> {
      const runId = currentRunId();
      const result = await jobs.fail(jobId, { code, message }, runId);
      if (result.moved) {
        await progressRepo.setJobPhase(db, jobId, code === 'canceled' ? 'canceled' : 'failed', stepAttempt());
        // A failed job is refunded all it was charged, but what its customer's cancel kept.
        deps.metrics?.jobFinished(finished(result.job, result.refunded), 'failed');
      }
      return { status: result.status, outputs: result.job.outputs?.length ?? 0, failedHere: result.status === 'failed' && result.job.status_run_id === runId };
    },
  };
}

/** What the finished-job metrics need of a job row. */
export interface FinishedJob {
  kind: string;
  model: string;
  provider: string;
  createdAt: Date;
  refunded: number;
}

function finished(job: Job, refunded: number): FinishedJob {
  return { kind: job.kind, model: job.model, provider: typedParams(job).params.provider, createdAt: new Date(job.created_at), refunded };
}

/** A job service error as the activity failure the pipeline expects; anything else as it is (retried). */
function stepFailure(err: unknown): unknown {
  if (err instanceof InsufficientCreditsError) return nonRetryable(failureTypes.insufficientCredits, err.message);
  if (err instanceof IllegalStatusMoveError) return nonRetryable(failureTypes.illegalStatusMove, err.message);
  return err;
}

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
interface StepDetails {
  ref?: ProviderRef;
  detail?: unknown;
}

export function createJobProviderActivities(
  deps: Pick<JobActivityDeps, 'db' | 'storage' | 'config' | 'adapterFor' | 'metrics' | 'jobs'> & { progress: ProgressWriter; heartbeatQuietMs?: number; beatEveryMs?: number },
): JobProviderActivities {
  const { storage, db, jobs } = deps;
  const heartbeats = quietHeartbeat(deps.heartbeatQuietMs ?? QUIET_START_MS);
  const beatEveryMs = deps.beatEveryMs ?? PROVIDER_BEAT_EVERY_MS;
  // The request each running attempt made or found, repeated in every heartbeat it sends.
  const attemptRef = new WeakMap<Context, ProviderRef>();
  // Attempts whose job has another route, with what the provider last reported of the request:
  // an outage past the failover budget ends them, unless the provider said it was running.
  const mayFailOver = new WeakMap<Context, ProviderStepOptions>();
  const failoverBudgetMs = deps.config.PROVIDER_FAILOVER_BUDGET_MS;
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
      throw nonRetryable(failureTypes.illegalStatusMove, `job ${jobId} is no longer held by this run; its new request was canceled`);
    }
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
        if (failover && (err.account || (err.retryable && givesUp(failover, ctx.info.attempt, failoverBudgetMs)))) {
          const failingS = Math.round(failingForMs(ctx.info.attempt) / 1000);
          throw nonRetryable(failureTypes.providerFailover, err.retryable ? `${err.message} (failing for ${failingS} s, ${ctx.info.attempt} attempts)` : err.message);
        }
        if (!err.retryable) throw nonRetryable(failureTypes.providerRejected, err.message);
        throw ApplicationFailure.create({
          type: failureTypes.providerUnavailable,
          message: err.message,
          nextRetryDelay: err.retryAfterMs !== undefined ? Math.max(err.retryAfterMs, 100) : undefined,
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
    if (jobId && result.state === 'succeeded' && toDownload) await bestEffort('progress', () => deps.progress.phase(jobId, 'storing_outputs', info.attempt, result.percent ?? null));
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
  async function check(provider: ProviderName, req: { jobId: string; model: string }, ref: ProviderRef, submittedNow = false): Promise<ProviderCheck> {
    const { outputs, ...result } = await poll(provider, req.model, ref);
    if (result.state !== 'succeeded') return { ...result, stored: null };
    if (!deps.adapterFor(provider).free) await stillHeld(req.jobId, currentRunId());
    return { ...result, stored: await store(provider, req.jobId, outputs ?? [], submittedNow) };
  }

  /** Throws (not retried) unless run `runId` still generates the job. */
  async function stillHeld(jobId: string, runId: string): Promise<void> {
    const job = await jobsRepo.getJob(db, jobId);
    if (job?.status === 'generating' && job.status_run_id === runId) return;
    Context.current().log.warn('provider step stopped: the job is no longer generating for this run', { jobId, status: job?.status ?? null });
    throw nonRetryable(failureTypes.illegalStatusMove, `job ${jobId} is no longer generating for this run (${job?.status ?? 'missing'}); its outputs are not stored again`);
  }

  return {
    /**
     * Submits once per job and run, then checks once (storing the outputs of a provider that
     * finished within submit: the local renderer renders there). The request an earlier attempt
     * made — in its last heartbeat, or recorded on the job row — is polled instead of submitted
     * again; a new one is recorded on the row and in the heartbeat before anything else can fail.
     * The local renderer (a free provider) is simply run again.
     */
    async submitAndCheck(provider: ProviderName, req: ProviderRequest, opts: ProviderStepOptions = {}): Promise<ProviderCheck & { ref: ProviderRef }> {
      const adapter = deps.adapterFor(provider);
      const runId = currentRunId();
      const ctx = Context.current();
      if (opts.failover) mayFailOver.set(ctx, opts);
      if (adapter.free) {
        const ref = await call(provider, req.model, 'submit', () => adapter.submit(req, providerContext()));
        const first = await check(provider, req, ref, true);
        // Still running (an injected latency): the row says so, with the reference.
        if (!first.stored && !(await jobs.recordProviderRef(req.jobId, runId, ref, stepAttempt()))) {
          throw nonRetryable(failureTypes.illegalStatusMove, `job ${req.jobId} is no longer held by this run`);
        }
        return { ref, ...first };
      }
      let ref = refFromHeartbeat();
      const job = await ownJob(req.jobId, runId, 'submitting');
      // The row's request counts only when it is this provider's (a failover forgets the last route's).
      const recorded = job.provider_ref as ProviderRef | null;
      if (recorded?.provider === provider) ref ??= recorded;
      if (ref && ref.provider !== provider) ref = undefined;
      if (ref) {
        attemptRef.set(ctx, ref);
        // Found in the heartbeat only: the row learns it now.
        if (recorded?.provider !== provider) await recordRef(provider, req.model, req.jobId, runId, ref);
      } else {
        ref = await call(provider, req.model, 'submit', () => adapter.submit(req, providerContext()));
        attemptRef.set(ctx, ref);
        ctx.heartbeat({ ref } satisfies StepDetails);
        await recordRef(provider, req.model, req.jobId, runId, ref);
      }
      return { ref, ...(await check(provider, req, ref)), claim: runClaim(job) };
    },

    /**
     * One status check of the job's recorded request; the outputs are stored when the provider is
     * done. A job with no live request (revived by a reset after its request was canceled) answers
     * `resubmit`.
     */
    async checkProvider(provider: ProviderName, jobId: string, model: string, ref: ProviderRef, opts: ProviderStepOptions = {}): Promise<ProviderCheck> {
      if (opts.failover) mayFailOver.set(Context.current(), opts);
      if (deps.adapterFor(provider).free) return check(provider, { jobId, model }, ref);
      const job = await ownJob(jobId, currentRunId(), 'generating');
      const claim = runClaim(job);
      const recorded = job.provider_ref as ProviderRef | null;
      if (!recorded || recorded.provider !== provider) return { state: 'queued', stored: null, resubmit: true, claim };
      attemptRef.set(Context.current(), recorded);
      return { ...(await check(provider, { jobId, model }, recorded)), claim };
    },

    /**
     * Cancels the request given (a given-up route's, or the run's own), else the job's recorded one;
     * none, nothing to do. The given one comes first: by the time a given-up route's cancel runs, the
     * row may hold a newer request of the job (a reset run's on the same provider) that must live. A
     * cancel the provider confirms of the request the job's charge stands on (the recorded one),
     * where its cancel is honored, refunds what the customer's cancel kept (the provider charges
     * nothing for it).
     */
    async cancelProvider(provider: ProviderName, model: string, jobId: string, ref: ProviderRef | undefined): Promise<void> {
      const adapter = deps.adapterFor(provider);
      const recorded = adapter.free ? null : ((await jobsRepo.getJob(db, jobId))?.provider_ref as ProviderRef | null);
      // Only this provider's request: after a failover the row holds the next route's.
      const target = ref?.provider === provider ? ref : recorded?.provider === provider ? recorded : undefined;
      if (!target) return;
      const outcome = await call(provider, model, 'cancel', () => adapter.cancel(target, providerContext()));
      // (jsonb keeps its own key order: compared field by field.)
      const charged = recorded !== null && sameRef(recorded, target);
      if (outcome.confirmed && charged && provider !== 'local' && providerCancel[provider] !== 'never') await jobs.cancelConfirmed(jobId);
    },
  };
}

/**
 * Streams a finished generation's outputs into our store (its own function so the provider
 * activities and their tests share it). `heartbeat` is called as the bytes arrive.
 */
export function createOutputStore(deps: Pick<JobActivityDeps, 'storage' | 'config' | 'adapterFor'> & { heartbeat(details?: unknown): void }) {
  const { storage, heartbeat } = deps;
  /**
   * Streams every output into our store. Outputs already there are checked, unless `writtenNow`:
   * the adapter wrote them within this same activity and reported their type and size.
   */
  return async function store(provider: ProviderName, jobId: string, outputs: ProviderOutput[], writtenNow = false): Promise<JobOutput[]> {
    const adapter = deps.adapterFor(provider);
    const stored: JobOutput[] = [];
    for (const [i, out] of outputs.entries()) {
      heartbeat(i);
      if (out.key && writtenNow && out.contentType && out.size !== undefined) {
        stored.push({ key: out.key, content_type: out.contentType, size: out.size });
        continue;
      }
      if (out.key) {
        const st = await storage.stat(out.key);
        if (!st) throw ApplicationFailure.create({ type: failureTypes.providerUnavailable, message: `output ${out.key} is missing from storage` });
        stored.push({ key: out.key, content_type: out.contentType ?? st.contentType, size: st.size });
        continue;
      }
      if (!out.url) throw nonRetryable(failureTypes.providerRejected, 'provider returned an output without a URL');
      // Through the guarded fetcher, from the provider's CDN hosts only, capped, sniffed, heartbeating.
      let lastBeat = 0;
      let saved: { key: string; contentType: string; size: number };
      try {
        saved = await storeProviderOutput(
          { storage, config: deps.config },
          {
            provider,
            jobId,
            index: i,
            output: out,
            headers: adapter.outputHeaders?.(out),
            onProgress: (bytes) => {
              const now = Date.now();
              if (now - lastBeat < 1000) return;
              lastBeat = now;
              heartbeat({ output: i, bytes });
            },
          },
        );
      } catch (err) {
        const failure = toApplicationFailure(err, failureTypes.providerRejected);
        if (failure instanceof ApplicationFailure) failure.message = `output ${i + 1}: ${failure.message}`;
        throw failure;
      }
      stored.push({ key: saved.key, content_type: saved.contentType, size: saved.size });
    }
    return stored;
  };
}

/**
 * Progress writes from provider activities. Polls skip the round trip when nothing changed since
 * this process last wrote the job, and the SQL throttles writes per job across every worker.
 */
export interface ProgressWriter {
  phase(jobId: string, phase: JobPhase, attempt: number, percent?: number | null): Promise<void>;
  poll(jobId: string, p: { percent: number | null; queuePosition: number | null; attempt: number }): Promise<void>;
}

const LAST_POLL_CACHE_MAX = 10_000;

export function createProgressWriter(db: Database, minIntervalMs: number): ProgressWriter {
  // jobId → the values this process last asked to store (oldest entries dropped first).
  const last = new Map<string, string>();
  return {
    async phase(jobId, phase, attempt, percent = null) {
      last.delete(jobId);
      await progressRepo.setJobPhase(db, jobId, phase, attempt, percent, { whileGenerating: true });
    },
    async poll(jobId, p) {
      const seen = `${p.percent}/${p.queuePosition}`;
      if (last.get(jobId) === seen) return;
      const written = await progressRepo.recordPollProgress(db, jobId, p, minIntervalMs);
      if (!written) return;
      last.delete(jobId);
      if (last.size >= LAST_POLL_CACHE_MAX) last.delete(last.keys().next().value!);
      last.set(jobId, seen);
    },
  };
}

export type { JobIoActivities, JobProviderActivities } from '../workflows/activity-types.js';
