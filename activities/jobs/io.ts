// The `io` activities: the job's database steps (start, route, complete, fail) and its input fetching.
import { Context } from '@temporalio/activity';
import type { Job, JobOutput, JobPhase, JobStatus } from '../../db/schema.js';
import * as progressRepo from '../../db/repos/job-progress.js';
import { findUploadForJob } from '../../db/repos/uploads.js';
import { redactText } from '../../shared/redact.js';
import { failureTypes } from '../../shared/failure-types.js';
import { routeFor } from '../../shared/catalog.js';
import { typedParams } from '../../shared/job-params.js';
import { kindOf, type KindDescriptor } from '../../kinds/index.js';
import type { InputFile, ProviderRef, ProviderRequest } from '../providers/types.js';
import type { RunClaim } from '../../shared/job-model.js';
import type { JobIoActivities } from '../../workflows/activity-types.js';
import {
  stepAttempt,
  nonRetryable,
  currentRunId,
  runClaim,
  holdJob,
  needsRemoteFetch,
  nextPhaseSql,
  stepFailure,
  type FinishedJob,
  type JobActivityDeps,
} from './common.js';
import { createReuseActivities } from './reuse.js';

export function createJobIoActivities(deps: JobActivityDeps): JobIoActivities {
  const { db, jobs } = deps;

  async function uploadInput(job: Job, id: string, role: InputFile['role'], expect: 'image' | 'video'): Promise<InputFile> {
    const up = await findUploadForJob(db, job.workspace_id, id);
    if (!up || up.file_type !== expect) throw nonRetryable(failureTypes.inputUnavailable, `file upload ${id} is no longer available as a ${expect}`);
    return { role, key: up.object_key, contentType: up.mime_type };
  }

  /** The job's declared inputs (kinds/<kind>/descriptor.ts `inputs`) that its params name, resolved into our store in declaration order (fetching URL inputs, safely). */
  async function resolveInputs(job: Job, declared: KindDescriptor['inputs']): Promise<InputFile[]> {
    const inputs: InputFile[] = [];
    const params = job.params as unknown as Record<string, unknown>;
    for (const [key, { from, type, role }] of Object.entries(declared ?? {})) {
      const value = params[key];
      const values = (Array.isArray(value) ? value : [value]).filter((v): v is string => typeof v === 'string' && v !== '');
      for (const v of values) {
        if (from === 'upload') {
          inputs.push(await uploadInput(job, v, role, type));
          continue;
        }
        Context.current().heartbeat(role);
        const stored = await deps.fetchRemoteInput({ url: v, jobId: job.id, workspaceId: job.workspace_id, role, expect: type });
        inputs.push({ role, key: stored.key, contentType: stored.contentType });
      }
    }
    return inputs;
  }

  /** What a kind's `request` may ask of the database beyond its params. */
  const lookups = {
    async actor(id: string) {
      const actor = await db.selectFrom('actors').select('reference_image_key').where('id', '=', id).executeTakeFirst();
      return actor ? { referenceImageKey: actor.reference_image_key } : null;
    },
    async voice(id: string) {
      const v = await db.selectFrom('voices').select(['id', 'tts_voice', 'provider_voice_id', 'gender']).where('id', '=', id).executeTakeFirst();
      return v ? { id: v.id, ttsVoice: v.tts_voice, providerVoiceId: v.provider_voice_id, gender: v.gender } : null;
    },
    unavailable(message: string): never {
      throw nonRetryable(failureTypes.inputUnavailable, message);
    },
  };

  /** The provider request of a job: the common fields here, the kind's own from its descriptor's `request`. */
  async function buildProviderRequest(job: Job): Promise<ProviderRequest> {
    const route = routeFor(job.model);
    if (!route) throw nonRetryable(failureTypes.inputUnavailable, `model ${job.model} is not in the catalog`);
    const kind = kindOf(job.kind);
    const params = typedParams(job).params;
    const ctx = { ...lookups, inputs: await resolveInputs(job, kind.inputs) };
    const { inputs = ctx.inputs, ...fields } = await kind.request(params, ctx);
    // The provider's model id was fixed when the job was created (rows from before then: the catalog's).
    return { jobId: job.id, kind: job.kind, model: job.model, route, providerModelId: params.provider_model_id, inputs, ...fields };
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
    ...createReuseActivities(deps),

    /** Starts the workflow that cancels a request the run hands off, on the current build (jobs/service.ts). */
    handOffProviderCancel: (jobId, handoff) => jobs.handOffProviderCancel(jobId, handoff),

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
      if (gaveUp)
        Context.current().log.warn('provider route given up', {
          jobId,
          provider: gaveUp.provider,
          next: decision.route?.provider ?? null,
          error: redactText(gaveUp.error),
        });
      return { route: decision.route, previousRef: (decision.previousRef as ProviderRef | null) ?? null, claim: runClaim(held) };
    },

    /**
     * → failed with `{ code, message }`, refunded and its media removed, for this run. Answers the
     * job's status after it: `completed` for a job whose completion committed first (its outputs
     * stay), `generating` for one another run has claimed; `failedHere` when this run failed it
     * (a retry after the commit included), not a cancel or an earlier run.
     */
    async failJob(
      jobId: string,
      code: 'generation_failed' | 'canceled' | 'deadline_exceeded',
      message: string,
    ): Promise<{ status: JobStatus; outputs: number; failedHere: boolean }> {
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

function finished(job: Job, refunded: number): FinishedJob {
  return { kind: job.kind, model: job.model, provider: typedParams(job).params.provider, createdAt: new Date(job.created_at), refunded };
}
