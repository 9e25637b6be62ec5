// What the job activities share: their dependencies, the run a step belongs to, and the job it holds.
import { Context, ApplicationFailure } from '@temporalio/activity';
import { sql } from 'kysely';
import type { Database } from '../../db/index.js';
import type { Job, JobPhase } from '../../db/schema.js';
import * as jobsRepo from '../../db/repos/jobs.js';
import type { Storage } from '../../shared/storage.js';
import { IllegalStatusMoveError, InsufficientCreditsError, type JobService } from '../../jobs/index.js';
import type { Config } from '../../shared/config.js';
import { failureTypes } from '../../shared/failure-types.js';
import { kindDescriptors, type KindDescriptor } from '../../kinds/index.js';
import type { InputFile, ProviderAdapter, ProviderRef } from '../providers/types.js';
import type { ProviderName, RunClaim } from '../../shared/job-model.js';

/** Whether two provider references name the same request, whatever their key order. */
export function sameRef(a: ProviderRef, b: ProviderRef): boolean {
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
  fetchRemoteInput(args: {
    url: string;
    jobId: string;
    workspaceId: string;
    role: InputFile['role'];
    expect: 'image' | 'video';
  }): Promise<{ key: string; contentType: string; size: number }>;
  metrics?: {
    providerCall(provider: string, model: string, op: string, seconds: number, ok: boolean): void;
    jobFinished(job: FinishedJob, outcome: 'completed' | 'failed'): void;
  };
}

/** The attempt of the running activity (1 unless the step is being retried). */
export const stepAttempt = () => Context.current().info.attempt;

export const nonRetryable = (type: string, message: string) => ApplicationFailure.create({ type, message, nonRetryable: true });

/**
 * Refuses (not retried) a provider step after the customer's deadline (`notAfter`): a task dispatched
 * at its last moment must not make a request the job would cancel at once. `what` names the step.
 */
export function refuseAfterDeadline(notAfter: string | undefined, what: string): void {
  if (notAfter !== undefined && Date.parse(notAfter) <= Date.now()) {
    throw nonRetryable(failureTypes.jobDeadlinePassed, `the job's deadline (${notAfter}) passed before ${what}`);
  }
}

/** The workflow run this activity works for (status moves record it; see jobs/moves.ts). */
export function currentRunId(): string {
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
export async function holdJob(db: Database, jobs: JobService, jobId: string, runId: string, phase: JobPhase): Promise<Job> {
  const job = await jobsRepo.getJob(db, jobId);
  if (!job) throw nonRetryable(failureTypes.inputUnavailable, `job ${jobId} does not exist`);
  if (job.status === 'generating' && job.status_run_id === runId) return job;
  if (job.status === 'generating' && job.status_run_id !== null) await refuseReplacedRun(jobId, runId, job.status_run_id);
  try {
    return (await jobs.claim(jobId, runId, { phase: () => phase, phaseSql: phase, attempt: stepAttempt() })).job;
  } catch (err) {
    throw stepFailure(err);
  }
}

/**
 * Another run holds the job: a reset run takes it from the run it replaced, never the other way.
 * The replaced run's step still in flight when the reset terminated it (its heartbeat has not told it
 * yet) would take the job back from its replacement: it is refused unless its run is the workflow's
 * current one. One describe, only when the job changes hands.
 */
async function refuseReplacedRun(jobId: string, runId: string, holder: string): Promise<void> {
  const ctx = Context.current();
  const workflowId = ctx.info.workflowExecution?.workflowId;
  if (!workflowId) return;
  const current = (await ctx.client.workflow.getHandle(workflowId).describe()).runId;
  if (current !== runId) {
    throw nonRetryable(failureTypes.illegalStatusMove, `job ${jobId} is held by run ${holder}: run ${runId} was replaced by run ${current}`);
  }
}

// ------------------------------------------------------------------ io activities

/** Per kind, the params keys of its URL inputs (kinds/<kind>/descriptor.ts `inputs`): they are fetched before the request can be built. */
const urlInputs = kindDescriptors
  .map(
    (d) =>
      [
        d.kind,
        Object.entries((d as KindDescriptor).inputs ?? {})
          .filter(([, i]) => i.from === 'url')
          .map(([key]) => key),
      ] as const,
  )
  .filter(([, keys]) => keys.length > 0);

/** Only a job whose params name a URL input (a replace-actor job given by URLs) needs a remote fetch before its request can be built. */
export function needsRemoteFetch(job: Pick<Job, 'kind' | 'params'>): boolean {
  const params = job.params as unknown as Record<string, unknown>;
  const named = (v: unknown) => (Array.isArray(v) ? v.length > 0 : typeof v === 'string' && v !== '');
  return urlInputs.some(([kind, keys]) => kind === job.kind && keys.some((k) => named(params[k])));
}

/** The phase after startGenerating as SQL over the job's row: needsRemoteFetch, for the one-statement start (a test holds the two equal). */
export const nextPhaseSql =
  urlInputs.length === 0
    ? sql<JobPhase>`'submitting'`
    : sql<JobPhase>`case when ${sql.join(
        urlInputs.map(
          ([kind, keys]) =>
            sql`(kind = ${sql.lit(kind)} and (${sql.join(
              keys.map((k) => sql`coalesce(params->>${sql.lit(k)}, '') not in ('', '[]')`),
              sql` or `,
            )}))`,
        ),
        sql` or `,
      )} then 'fetching_inputs' else 'submitting' end`;

/** What the finished-job metrics need of a job row. */
export interface FinishedJob {
  kind: string;
  model: string;
  provider: string;
  createdAt: Date;
  refunded: number;
}

/** A job service error as the activity failure the pipeline expects; anything else as it is (retried). */
export function stepFailure(err: unknown): unknown {
  if (err instanceof InsufficientCreditsError) return nonRetryable(failureTypes.insufficientCredits, err.message);
  if (err instanceof IllegalStatusMoveError) return nonRetryable(failureTypes.illegalStatusMove, err.message);
  return err;
}
