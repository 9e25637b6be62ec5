// Activities of the generation pipeline, shared by the four job kinds. Two groups, so fleets can run
// apart: `io` activities (Postgres, input fetching) and `provider` activities (provider calls and
// output streaming — they need storage and provider keys, never the database).
import { Context, ApplicationFailure } from '@temporalio/activity';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { Database } from '../db/index.js';
import type { Job, JobOutput } from '../db/schema.js';
import * as jobsRepo from '../db/repos/jobs.js';
import { findCompletedUpload } from '../db/repos/uploads.js';
import type { Storage } from './storage.js';
import type { Config } from '../worker/config.js';
import { failureTypes } from './errors.js';
import { routeFor } from './providers/catalog.js';
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
import type { ProviderName } from '../workflows/definitions.js';

export interface JobActivityDeps {
  db: Database;
  storage: Storage;
  config: Config;
  adapterFor(name: ProviderName): ProviderAdapter;
  /** Stores a remote URL's bytes as a job input, through the SSRF-safe fetcher. */
  fetchRemoteInput(args: { url: string; jobId: string; workspaceId: string; role: InputFile['role']; expect: 'image' | 'video' }): Promise<{ key: string; contentType: string; size: number }>;
  metrics?: { providerCall(provider: string, model: string, op: string, seconds: number, ok: boolean): void; jobFinished(kind: string, outcome: 'completed' | 'failed'): void };
}

const nonRetryable = (type: string, message: string) => ApplicationFailure.create({ type, message, nonRetryable: true });

// ------------------------------------------------------------------ io activities

export function createJobIoActivities(deps: JobActivityDeps) {
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

  return {
    /** pending → generating (also after an operator reset, re-charging a refunded job). */
    async markJobGenerating(jobId: string): Promise<void> {
      try {
        await db.transaction().execute((tx) => jobsRepo.markGenerating(tx, jobId));
      } catch (err) {
        if (err instanceof jobsRepo.InsufficientCreditsError) throw nonRetryable(failureTypes.insufficientCredits, err.message);
        throw err;
      }
    },

    /** Resolves the job's inputs into objects in our store (fetching remote URLs safely) and builds the provider request. */
    async prepareProviderRequest(jobId: string): Promise<ProviderRequest> {
      const job = await loadJob(jobId);
      const p = job.params as Record<string, any>;
      const route = routeFor(job.model);
      if (!route) throw nonRetryable(failureTypes.inputUnavailable, `model ${job.model} is not in the catalog`);
      const inputs: InputFile[] = [];
      const req: ProviderRequest = { jobId, kind: job.kind, model: job.model, route, inputs };
      switch (job.kind) {
        case 'image':
          Object.assign(req, { prompt: p.prompt, aspectRatio: p.aspect_ratio, count: p.count });
          break;
        case 'video':
          Object.assign(req, { prompt: p.prompt, aspectRatio: p.aspect_ratio, duration: p.duration, resolution: p.resolution });
          if (p.start_frame_file_id) inputs.push(await uploadInput(job, p.start_frame_file_id, 'start_frame', 'image'));
          if (p.end_frame_file_id) inputs.push(await uploadInput(job, p.end_frame_file_id, 'end_frame', 'image'));
          for (const id of (p.reference_file_ids as string[] | undefined) ?? []) inputs.push(await uploadInput(job, id, 'reference', 'image'));
          break;
        case 'replace_actor':
          Object.assign(req, { prompt: p.prompt, aspectRatio: p.aspect_ratio, duration: p.duration, resolution: p.resolution });
          if (p.image_file_id) {
            inputs.push(await uploadInput(job, p.image_file_id, 'image', 'image'));
            inputs.push(await uploadInput(job, p.video_file_id, 'video', 'video'));
          } else {
            for (const [role, url, expect] of [['image', p.image_url, 'image'], ['video', p.video_url, 'video']] as const) {
              Context.current().heartbeat(role);
              const stored = await deps.fetchRemoteInput({ url, jobId, workspaceId: job.workspace_id, role, expect });
              inputs.push({ role, key: stored.key, contentType: stored.contentType });
            }
          }
          break;
        case 'talking_actor': {
          const actor = await db.selectFrom('actors').selectAll().where('id', '=', p.actor_id).executeTakeFirst();
          const voice = await db.selectFrom('voices').selectAll().where('id', '=', p.voice_id).executeTakeFirst();
          if (!actor || !voice) throw nonRetryable(failureTypes.inputUnavailable, 'the actor or voice of this job no longer exists');
          Object.assign(req, {
            script: p.script,
            aspectRatio: p.aspect_ratio,
            voiceOptions: p.voice_options ?? undefined,
            voice: { id: voice.id, ttsVoice: voice.tts_voice, providerVoiceId: voice.provider_voice_id, gender: voice.gender },
          });
          inputs.push({ role: 'actor_image', key: actor.reference_image_key, contentType: 'image/png' });
          break;
        }
      }
      return req;
    },

    async recordProviderRef(jobId: string, ref: ProviderRef | null): Promise<void> {
      await jobsRepo.setProviderRef(db, jobId, ref);
    },

    /** generating → completed with its outputs; settles the charge to the price. */
    async completeJob(jobId: string, outputs: JobOutput[]): Promise<void> {
      const job = await loadJob(jobId);
      await db.transaction().execute((tx) => jobsRepo.markCompleted(tx, jobId, outputs));
      deps.metrics?.jobFinished(job.kind, 'completed');
    },

    /** → failed with `{ code, message }`; refunds the charge (idempotently). */
    async failJob(jobId: string, code: 'generation_failed' | 'canceled', message: string): Promise<void> {
      const job = await loadJob(jobId);
      await db.transaction().execute((tx) => jobsRepo.markFailed(tx, jobId, { code, message: message.slice(0, 500) }));
      deps.metrics?.jobFinished(job.kind, 'failed');
    },

    /** Settle by current status; used by reconciliation of workflows that closed without doing it. */
    async settleCredits(jobId: string): Promise<number> {
      return db.transaction().execute((tx) => jobsRepo.settleByStatus(tx, jobId));
    },
  };
}

// ------------------------------------------------------------------ provider activities

export function createJobProviderActivities(deps: Pick<JobActivityDeps, 'storage' | 'config' | 'adapterFor' | 'metrics'>) {
  const { storage } = deps;

  function providerContext(): ProviderContext {
    const ctx = Context.current();
    return {
      storage,
      inputUrl: (key) => storage.url(key, 3600),
      heartbeat: (d) => ctx.heartbeat(d),
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

  return {
    async submitToProvider(provider: ProviderName, req: ProviderRequest): Promise<ProviderRef> {
      const adapter = deps.adapterFor(provider);
      return call(provider, req.model, 'submit', () => adapter.submit(req, providerContext()));
    },

    async pollProvider(provider: ProviderName, model: string, ref: ProviderRef): Promise<PollResult> {
      const adapter = deps.adapterFor(provider);
      return call(provider, model, 'poll', () => adapter.poll(ref, providerContext()));
    },

    async cancelProvider(provider: ProviderName, model: string, ref: ProviderRef): Promise<void> {
      const adapter = deps.adapterFor(provider);
      await call(provider, model, 'cancel', () => adapter.cancel(ref, providerContext()));
    },

    /** Streams every output into our store (outputs already there are only checked). */
    async storeOutputs(provider: ProviderName, jobId: string, outputs: ProviderOutput[]): Promise<JobOutput[]> {
      const adapter = deps.adapterFor(provider);
      const stored: JobOutput[] = [];
      for (const [i, out] of outputs.entries()) {
        Context.current().heartbeat(i);
        if (out.key) {
          const st = await storage.stat(out.key);
          if (!st) throw ApplicationFailure.create({ type: failureTypes.providerUnavailable, message: `output ${out.key} is missing from storage` });
          stored.push({ key: out.key, content_type: out.contentType ?? st.contentType, size: st.size });
          continue;
        }
        if (!out.url) throw nonRetryable(failureTypes.providerRejected, 'provider returned an output without a URL');
        const res = await fetch(out.url, { headers: adapter.outputHeaders?.(out) ?? {}, signal: Context.current().cancellationSignal });
        if (!res.ok || !res.body) {
          const type = res.status >= 500 || res.status === 429 ? failureTypes.providerUnavailable : failureTypes.providerRejected;
          throw ApplicationFailure.create({ type, message: `downloading output ${i + 1} failed with HTTP ${res.status}`, nonRetryable: type === failureTypes.providerRejected });
        }
        const contentType = out.contentType ?? res.headers.get('content-type')?.split(';')[0] ?? 'application/octet-stream';
        const key = `jobs/${jobId}/output-${i + 1}.${extensionFor(contentType)}`;
        const length = Number(res.headers.get('content-length')) || undefined;
        const obj = await storage.putStream(key, Readable.fromWeb(res.body as WebReadableStream), contentType, length);
        stored.push({ key, content_type: contentType, size: obj.size });
      }
      return stored;
    },
  };
}

function extensionFor(contentType: string): string {
  const map: Record<string, string> = {
    'image/png': 'png',
    'image/jpeg': 'jpg',
    'image/webp': 'webp',
    'video/mp4': 'mp4',
    'video/quicktime': 'mov',
    'video/webm': 'webm',
    'audio/mpeg': 'mp3',
    'audio/wav': 'wav',
  };
  return map[contentType] ?? 'bin';
}

export type JobIoActivities = ReturnType<typeof createJobIoActivities>;
export type JobProviderActivities = ReturnType<typeof createJobProviderActivities>;
