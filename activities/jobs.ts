// Activities of the generation pipeline, shared by the four job kinds. Two groups, so fleets can run
// apart: `io` activities (Postgres, input fetching) and `provider` activities (provider calls and
// output streaming — they need storage and provider keys, and the database only for the one
// narrow progress write below). The pipeline (workflows/pipeline.ts) runs the short Postgres steps
// of the io group as LOCAL activities in the workflow worker (startGenerating, recordProviderRef,
// completeJob, failJob), and the provider group's submitAndCheck / checkProvider fold the first
// status check and the output streaming into the submit and the poll. The remaining io and provider
// activities (markJobGenerating, submitToProvider, pollProvider, storeOutputs) serve jobs started
// before that change (workflows/pipeline-v1.ts).
//
// Progress lives in the job row, written by the steps themselves so a status read is one Postgres
// read and never a Temporal query: each step stores the phase the workflow's `progress` query
// reports while it runs (markJobGenerating → fetching_inputs, prepareProviderRequest → submitting,
// recordProviderRef → generating, pollProvider seeing success → storing_outputs, completeJob / failJob → the
// end), and pollProvider stores the provider's percent and queue position when they changed, at
// most once per PROGRESS_WRITE_INTERVAL_MS per job. No step is added to the workflow for it.
import { Context, ApplicationFailure } from '@temporalio/activity';
import { sql, type RawBuilder } from 'kysely';
import type { Database } from '../db/index.js';
import type { Job, JobOutput, JobPhase } from '../db/schema.js';
import * as jobsRepo from '../db/repos/jobs.js';
import { findCompletedUpload } from '../db/repos/uploads.js';
import { jobPrefix, type Storage } from '../shared/storage.js';
import { failJobAndRemoveMedia } from '../db/job-media.js';
import type { Config } from '../shared/config.js';
import { failureTypes } from '../shared/failure-types.js';
import { routeFor } from '../shared/catalog.js';
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
import type { ProviderName } from '../shared/job-model.js';
import type { JobIoActivities, JobProviderActivities, ProviderCheck } from '../workflows/activity-types.js';

export interface JobActivityDeps {
  db: Database;
  storage: Storage;
  config: Config;
  adapterFor(name: ProviderName): ProviderAdapter;
  /** Stores a remote URL's bytes as a job input, through the SSRF-safe fetcher. */
  fetchRemoteInput(args: { url: string; jobId: string; workspaceId: string; role: InputFile['role']; expect: 'image' | 'video' }): Promise<{ key: string; contentType: string; size: number }>;
  metrics?: { providerCall(provider: string, model: string, op: string, seconds: number, ok: boolean): void; jobFinished(kind: string, outcome: 'completed' | 'failed'): void };
}

/** The attempt of the running activity (1 unless the step is being retried). */
const stepAttempt = () => Context.current().info.attempt;

const nonRetryable = (type: string, message: string) => ApplicationFailure.create({ type, message, nonRetryable: true });

/** The workflow run this activity works for (status moves record it; see db/repos/jobs.ts). */
function currentRunId(): string {
  const runId = Context.current().info.workflowExecution?.runId;
  if (!runId) throw nonRetryable(failureTypes.illegalStatusMove, 'job activities run only on behalf of a workflow');
  return runId;
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
  const { db } = deps;

  async function loadJob(jobId: string): Promise<Job> {
    const job = await jobsRepo.getJob(db, jobId);
    if (!job) throw nonRetryable(failureTypes.inputUnavailable, `job ${jobId} does not exist`);
    return job;
  }

  async function uploadInput(job: Job, id: string, role: InputFile['role'], expect: 'image' | 'video'): Promise<InputFile> {
    const up = await findCompletedUpload(db, job.workspace_id, id);
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

  /**
   * markGenerating with the phase the workflow's progress query reports next: one UPDATE for a
   * pending job (the common case), else the settling transaction (a retry, a reset).
   */
  async function moveToGenerating(jobId: string, phaseFor: (job: Job) => JobPhase, phaseSql: JobPhase | RawBuilder<JobPhase>): Promise<Job> {
    const runId = currentRunId();
    const attempt = stepAttempt();
    try {
      const started = await jobsRepo.startPendingJob(db, jobId, runId, { phase: phaseSql, attempt });
      return started ?? (await db.transaction().execute((tx) => jobsRepo.markGenerating(tx, jobId, runId, { phase: phaseFor, attempt })));
    } catch (err) {
      if (err instanceof jobsRepo.InsufficientCreditsError) throw nonRetryable(failureTypes.insufficientCredits, err.message);
      if (err instanceof jobsRepo.IllegalStatusMoveError) throw nonRetryable(failureTypes.illegalStatusMove, err.message);
      throw err;
    }
  }

  return {
    /**
     * pending → generating, or failed → generating when an operator reset started a new run (which
     * re-charges a refunded job). The run id comes from the activity's own context, so a late
     * attempt of the run that failed the job, or a job canceled before any workflow ran, is refused.
     */
    async markJobGenerating(jobId: string): Promise<void> {
      await moveToGenerating(jobId, () => 'fetching_inputs', 'fetching_inputs');
    },

    /**
     * markJobGenerating, and the provider request built in the same step when every input is
     * already in our store (all but replace-actor jobs given by URL, whose request comes from
     * prepareProviderRequest on the fetch queue: `request` is null then). A local activity: it never
     * fetches a remote URL, so slow servers never hold the workflow worker.
     */
    async startGenerating(jobId: string): Promise<{ request: ProviderRequest | null }> {
      const job = await moveToGenerating(jobId, (j) => (needsRemoteFetch(j) ? 'fetching_inputs' : 'submitting'), nextPhaseSql);
      return { request: needsRemoteFetch(job) ? null : await buildProviderRequest(job) };
    },

    /** Resolves the job's inputs into objects in our store (fetching remote URLs safely) and builds the provider request. */
    async prepareProviderRequest(jobId: string): Promise<ProviderRequest> {
      const req = await buildProviderRequest(await loadJob(jobId));
      // The workflow submits next: the phase says so even while no provider fleet has taken it.
      await jobsRepo.setJobPhase(db, jobId, 'submitting', stepAttempt());
      return req;
    },

    /** Stores the provider's request reference; the workflow now waits for the provider. */
    async recordProviderRef(jobId: string, ref: ProviderRef | null): Promise<void> {
      await jobsRepo.setProviderRef(db, jobId, ref, { phase: 'generating', attempt: stepAttempt() });
    },

    /**
     * generating → completed with its outputs (and the provider reference, when given); settles the charge to the price. A job failed
     * meanwhile (canceled while its outputs were stored) stays failed and refunded, and the
     * outputs are removed: no media without payment.
     */
    async completeJob(jobId: string, outputs: JobOutput[], ref?: ProviderRef): Promise<void> {
      let job: Job;
      const runId = currentRunId();
      // The reference of a job the provider finished within submit is recorded with the outcome.
      const extra = { providerRef: ref, progress: { phase: 'completed' as const, attempt: stepAttempt(), percent: 100 } };
      try {
        // One UPDATE for a generating job; else the transaction that decides (completed already, failed meanwhile).
        job = (await jobsRepo.completeGeneratingJob(db, jobId, outputs, runId, extra)) ?? (await db.transaction().execute((tx) => jobsRepo.markCompleted(tx, jobId, outputs, runId, extra))).job;
      } catch (err) {
        if (!(err instanceof jobsRepo.IllegalStatusMoveError)) throw err;
        if (err.from === 'failed') await deps.storage.removePrefix(jobPrefix(jobId));
        throw nonRetryable(failureTypes.illegalStatusMove, err.message);
      }
      deps.metrics?.jobFinished(job.kind, 'completed');
    },

    /** → failed with `{ code, message }`, refunded and its media removed; a completed job stays completed. */
    async failJob(jobId: string, code: 'generation_failed' | 'canceled', message: string): Promise<void> {
      const job = await loadJob(jobId);
      const result = await failJobAndRemoveMedia(deps, jobId, { code, message: message.slice(0, 500) }, currentRunId());
      if (result.status === 'failed') await jobsRepo.setJobPhase(db, jobId, code === 'canceled' ? 'canceled' : 'failed', stepAttempt());
      if (result.moved) deps.metrics?.jobFinished(job.kind, 'failed');
    },

    /** Settle by current status; used by reconciliation of workflows that closed without doing it. */
    async settleCredits(jobId: string): Promise<number> {
      return db.transaction().execute((tx) => jobsRepo.settleByStatus(tx, jobId));
    },
  };
}

// ------------------------------------------------------------------ provider activities

/**
 * A provider activity's first second sends no heartbeat. The SDK sends the first heartbeat at once
 * (a server round trip and a write of the workflow's state) and throttles the rest, so a provider
 * step that ends within a second (an image, a status check) would pay that for nothing: its
 * heartbeat timeout is a minute, and a cancellation waits at most that second longer. Later calls
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

export function createJobProviderActivities(
  deps: Pick<JobActivityDeps, 'storage' | 'config' | 'adapterFor' | 'metrics'> & { progress: ProgressWriter; heartbeatQuietMs?: number },
): JobProviderActivities {
  const { storage } = deps;
  const heartbeats = quietHeartbeat(deps.heartbeatQuietMs ?? QUIET_START_MS);
  const heartbeat = (details?: unknown) => heartbeats.beat(details);

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

  /** Runs a provider call, turning ProviderError into the right Temporal failure and timing it. */
  async function call<T>(provider: ProviderName, model: string, op: string, fn: () => Promise<T>): Promise<T> {
    const start = process.hrtime.bigint();
    let ok = false;
    try {
      const v = await fn();
      ok = true;
      return v;
    } catch (err) {
      if (err instanceof ProviderError) {
        if (!err.retryable) throw nonRetryable(failureTypes.providerRejected, err.message);
        throw ApplicationFailure.create({
          type: failureTypes.providerUnavailable,
          message: err.message,
          nextRetryDelay: err.retryAfterMs !== undefined ? Math.max(err.retryAfterMs, 100) : undefined,
        });
      }
      throw err;
    } finally {
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
    if (jobId && result.state === 'succeeded' && toDownload) await deps.progress.phase(jobId, 'storing_outputs', info.attempt, result.percent ?? null);
    if (jobId && (result.state === 'queued' || result.state === 'running')) {
      await deps.progress.poll(jobId, {
        percent: result.percent ?? null, // null: keep the last percent
        queuePosition: result.state === 'queued' ? (result.queuePosition ?? null) : null,
        attempt: info.attempt,
      });
    }
    return result;
  }

  /**
   * Streams every output into our store. Outputs already there are checked, unless `writtenNow`:
   * the adapter wrote them within this same activity and reported their type and size.
   */
  async function store(provider: ProviderName, jobId: string, outputs: ProviderOutput[], writtenNow = false): Promise<JobOutput[]> {
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
  }

  /** One status check; when the provider is done, its outputs are streamed into our store at once. */
  async function check(provider: ProviderName, req: { jobId: string; model: string }, ref: ProviderRef, submittedNow = false): Promise<ProviderCheck> {
    const { outputs, ...result } = await poll(provider, req.model, ref);
    return { ...result, stored: result.state === 'succeeded' ? await store(provider, req.jobId, outputs ?? [], submittedNow) : null };
  }

  return {
    async submitToProvider(provider: ProviderName, req: ProviderRequest): Promise<ProviderRef> {
      const adapter = deps.adapterFor(provider);
      return call(provider, req.model, 'submit', () => adapter.submit(req, providerContext()));
    },

    /**
     * Submit (idempotency key: the job id) and check once, storing the outputs of a provider that
     * finished within submit (the local renderer renders there): no separate poll, timer or store
     * step for it. Every part is idempotent, so a retry of the whole activity is safe.
     */
    async submitAndCheck(provider: ProviderName, req: ProviderRequest): Promise<ProviderCheck & { ref: ProviderRef }> {
      const adapter = deps.adapterFor(provider);
      const ref = await call(provider, req.model, 'submit', () => adapter.submit(req, providerContext()));
      return { ref, ...(await check(provider, req, ref, true)) };
    },

    /** One status check of the job's request; the outputs are stored when the provider is done. */
    async checkProvider(provider: ProviderName, jobId: string, model: string, ref: ProviderRef): Promise<ProviderCheck> {
      return check(provider, { jobId, model }, ref);
    },

    async pollProvider(provider: ProviderName, model: string, ref: ProviderRef): Promise<PollResult> {
      return poll(provider, model, ref);
    },

    async cancelProvider(provider: ProviderName, model: string, ref: ProviderRef): Promise<void> {
      const adapter = deps.adapterFor(provider);
      await call(provider, model, 'cancel', () => adapter.cancel(ref, providerContext()));
    },

    /** Streams every output into our store (outputs already there are only checked). */
    async storeOutputs(provider: ProviderName, jobId: string, outputs: ProviderOutput[]): Promise<JobOutput[]> {
      return store(provider, jobId, outputs);
    },
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
      await jobsRepo.setJobPhase(db, jobId, phase, attempt, percent);
    },
    async poll(jobId, p) {
      const seen = `${p.percent}/${p.queuePosition}`;
      if (last.get(jobId) === seen) return;
      const written = await jobsRepo.recordPollProgress(db, jobId, p, minIntervalMs);
      if (!written) return;
      last.delete(jobId);
      if (last.size >= LAST_POLL_CACHE_MAX) last.delete(last.keys().next().value!);
      last.set(jobId, seen);
    },
  };
}

export type { JobIoActivities, JobProviderActivities } from '../workflows/activity-types.js';
