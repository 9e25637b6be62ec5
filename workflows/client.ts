// Client side of the job workflows (used by the gateway and the worker's reconciler, never by
// workflow code): start a job's workflow with workflow id = job id, search attributes and a
// readable summary; query its progress; cancel it.
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
// Queried by name, not through job-generation.ts's definition: that would load @temporalio/workflow into
// the gateway.
import { typedParams, type StoredJobParams } from '../shared/job-params.js';
import { kindOf } from '../kinds/index.js';
import {
  progressQueryName,
  searchAttributes,
  taskQueues,
  providerCancelWorkflowType,
  PROVIDER_CANCEL_RUN_TIMEOUT_MS,
  type GenerationInput,
  type GenerationProgress,
  type JobKind,
  type JobStatus,
} from './definitions.js';
import type { JobWorkflowPort, WorkflowCancelOutcome } from '../jobs/service.js';
import type { Job } from '../db/schema.js';
import { currentTraceId, withSpan } from '../shared/tracing.js';
import type { JobPriority } from '../shared/job-model.js';
import { taskPriority } from '../shared/task-priority.js';
import type { ProviderCancelHandoff } from '../shared/provider-types.js';

interface JobToStart {
  id: string;
  kind: JobKind;
  workspaceId: string;
  projectId: string;
  model: string;
  status: JobStatus;
  input: GenerationInput;
  /** Its Temporal priority and fair share (shared/task-priority.ts). */
  priority: JobPriority;
  fairnessWeight: number;
}

/** What starting a stored job's workflow needs (the gateway after commit, the reconciler later). */
export function jobToStart(
  job: {
    id: string;
    kind: JobKind;
    workspace_id: string;
    project_id: string;
    model: string;
    status: JobStatus;
    params: StoredJobParams;
    priority: JobPriority;
    fairness_weight: number;
    deadline_at: Date | null;
    /** Set when the create opted into reuse (absent in rows read without it: no reuse). */
    reuse_key?: string | null;
  },
  taskQueuePrefix: string,
): JobToStart {
  const t = typedParams(job);
  return {
    id: job.id,
    kind: job.kind,
    workspaceId: job.workspace_id,
    projectId: job.project_id,
    model: job.model,
    status: job.status,
    // The route stored at create time: the workflow does not work it out again.
    input: {
      jobId: job.id,
      kind: job.kind,
      model: job.model,
      provider: t.params.provider,
      ...(t.params.routes ? { routes: t.params.routes } : {}),
      deadlineSeconds: t.params.deadline_seconds,
      ...(job.deadline_at ? { cancelAt: job.deadline_at.toISOString() } : {}),
      taskQueuePrefix,
      ...(job.reuse_key ? { reuse: true as const } : {}),
    },
    priority: job.priority,
    fairnessWeight: job.fairness_weight,
  };
}

/**
 * The Web UI's one-line summary of a job's workflow: its kind, model and route, never customer text
 * (prompts, scripts, URLs). Summaries are payloads the codec seals like any other, but they are
 * what an operator reads in lists, so they hold only what the search attributes show anyway.
 */
export function jobSummary(job: Pick<JobToStart, 'kind' | 'model' | 'input'>): string {
  return `${job.kind.replace('_', '-')} · ${job.model} · ${job.input.provider}`;
}

/** JOB_RUN_TIMEOUT_GRACE_MS's default (shared/config.ts): outputs storing (20 min) + provider cancel (5 min) + a margin. */
const DEFAULT_RUN_TIMEOUT_GRACE_MS = 30 * 60_000;
/** JOB_START_WAIT_MS's default: how long a run may wait for its first step. */
const DEFAULT_START_WAIT_MS = 60 * 60_000;

/**
 * A generation run's workflowRunTimeout: the backstop no deploy can defeat. A run whose build lost
 * its workers (or any run that never finishes) ends TIMED_OUT then, and the reconciler refunds the
 * job and cancels its provider request. The model's deadline counts from the run's first step
 * (its claim of the job), which may come up to `startWaitMs` after the run started (a backlog on
 * the workflows queue); `graceMs` covers what may run past the deadline. A run that starts later
 * than `startWaitMs` fails its job unsubmitted (workflows/job-generation.ts), so a job that submitted
 * always has its deadline and its outputs' storing within its run.
 */
export function jobRunTimeoutMs(deadlineSeconds: number, graceMs = DEFAULT_RUN_TIMEOUT_GRACE_MS, startWaitMs = DEFAULT_START_WAIT_MS): number {
  return startWaitMs + deadlineSeconds * 1000 + graceMs;
}

/** The workflow input of a job's run with its start bound, and the run timeout that goes with it. */
export function boundedRun(
  input: GenerationInput,
  opts: Pick<StartOptions, 'runTimeoutGraceMs' | 'startWaitMs'>,
): { input: GenerationInput; runTimeoutMs: number } {
  const startWaitMs = opts.startWaitMs ?? DEFAULT_START_WAIT_MS;
  // A reuse job may wait for an identical job as long as the model's deadline before it runs itself.
  const deadlines = input.reuse ? 2 : 1;
  return {
    input: { ...input, startWithinMs: startWaitMs },
    runTimeoutMs: jobRunTimeoutMs(input.deadlineSeconds * deadlines, opts.runTimeoutGraceMs, startWaitMs),
  };
}

interface StartOptions {
  runTimeoutGraceMs?: number;
  /** JOB_START_WAIT_MS: how long the run may wait for its first step (part of its run timeout). */
  startWaitMs?: number;
  /** FAIR_SHARE: false starts with a priority key and no fairness key (first in, first out per priority). */
  fairShare?: boolean;
}

/** Starts the job's workflow; starting one that already runs (or ran) is harmless. */
export function startJobWorkflow(client: Client, job: JobToStart, opts: StartOptions = {}): Promise<'started' | 'already_started'> {
  // A span of its own, so a start without a request (the reconciler's) still has a trace to name.
  return withSpan(
    'start job workflow',
    { 'mediagen.job_id': job.id, 'mediagen.job_kind': job.kind, 'mediagen.model': job.model, 'mediagen.workspace_id': job.workspaceId },
    () => startTraced(client, job, opts),
  );
}

async function startTraced(client: Client, job: JobToStart, opts: StartOptions): Promise<'started' | 'already_started'> {
  // The trace id in the memo: the Web UI shows it, and an operator searches the trace viewer for it.
  const traceId = currentTraceId();
  const run = boundedRun(job.input, opts);
  try {
    await client.workflow.start(kindOf(job.kind).workflowType, {
      ...(traceId ? { memo: { traceId } } : {}),
      workflowId: job.id,
      taskQueue: taskQueues(job.input.taskQueuePrefix).workflows,
      args: [run.input],
      priority: taskPriority(job, { fairness: opts.fairShare }),
      typedSearchAttributes: new TypedSearchAttributes([
        { key: searchAttributes.workspaceId, value: job.workspaceId },
        { key: searchAttributes.projectId, value: job.projectId },
        { key: searchAttributes.jobKind, value: job.kind },
        { key: searchAttributes.mediaModel, value: job.model },
        { key: searchAttributes.jobStatus, value: job.status },
        { key: searchAttributes.servingProvider, value: job.input.provider },
        { key: searchAttributes.jobPriority, value: job.priority },
      ]),
      staticSummary: jobSummary(job),
      staticDetails: `Job ${job.id} of workspace ${job.workspaceId}, project ${job.projectId}.`,
      workflowRunTimeout: run.runTimeoutMs,
      // The workflow id is the job id for ever: a second start of a closed job is refused, not re-run.
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
    });
    return 'started';
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return 'already_started';
    throw err;
  }
}

/** The workflow's live progress, or null when Temporal does not answer within `timeoutMs`. */
export async function queryJobProgress(client: Client, jobId: string, timeoutMs: number): Promise<GenerationProgress | null> {
  // The deadline bounds the gRPC call itself, so no query outlives the request that asked.
  return client.withDeadline(Date.now() + timeoutMs, () => client.workflow.getHandle(jobId).query<GenerationProgress>(progressQueryName)).catch(() => null);
}

export type CancelOutcome = WorkflowCancelOutcome;

/** Requests cancellation of the job's workflow and says what it found. */
export async function cancelJobWorkflow(client: Client, jobId: string): Promise<CancelOutcome> {
  const handle = client.workflow.getHandle(jobId);
  // A cancel request on a closed run is not always refused, so look first; a run that closes
  // between the two calls settles itself or is settled by the reconciler.
  let desc;
  try {
    desc = await handle.describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return { state: 'not_found' };
    throw err;
  }
  const status = desc.status.name;
  if (status === 'RUNNING') {
    await handle.cancel();
    return { state: 'cancel_requested' };
  }
  if (status === 'COMPLETED') return { state: 'completed' };
  return { state: 'closed', runId: desc.runId };
}

/**
 * The latest run of the job's workflow and its status as Temporal names it (RUNNING, COMPLETED,
 * FAILED, CANCELLED, TERMINATED, TIMED_OUT…), from a describe: read from the execution itself,
 * so strongly consistent, unlike visibility. Null when no workflow has this id.
 */
export async function describeJobRun(client: Client, jobId: string, timeoutMs: number): Promise<{ runId: string; status: string } | null> {
  try {
    const d = await client.withDeadline(Date.now() + timeoutMs, () => client.workflow.getHandle(jobId).describe());
    return { runId: d.runId, status: d.status.name };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return null;
    throw err;
  }
}

/**
 * Starts the workflow that cancels the provider request of a job no workflow will clean up (its
 * run was terminated), or the one its own run hands off (`handoff`: a route it gave up, its
 * recorded request past its deadline): the cancel runs on the provider's own queue, retried within
 * its time bound. Started by the client, it runs on the deployment's current build (its type is
 * AUTO_UPGRADE). One per job and purpose at a time; a later one (after another terminate) may start
 * once it closed. It waits in the job's workspace share and at the job's priority, like the job did.
 */
export async function startProviderCancel(
  client: Client,
  job: Job,
  taskQueuePrefix: string,
  opts: Pick<StartOptions, 'fairShare'> = {},
  handoff?: ProviderCancelHandoff,
): Promise<void> {
  const start = jobToStart(job, taskQueuePrefix);
  const input = start.input;
  const provider = handoff?.provider ?? input.provider;
  try {
    await client.workflow.start(providerCancelWorkflowType, {
      workflowId: handoff?.workflowId ?? `${job.id}-provider-cancel`,
      taskQueue: taskQueues(taskQueuePrefix).workflows,
      args: [{ jobId: job.id, provider, model: job.model, taskQueuePrefix, ...(handoff?.ref ? { ref: handoff.ref } : {}) }],
      priority: taskPriority(start, { fairness: opts.fairShare }),
      staticSummary: handoff?.summary ?? `Cancel the provider request of ${job.id}`,
      workflowRunTimeout: PROVIDER_CANCEL_RUN_TIMEOUT_MS,
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
  }
}

/**
 * The job service's Temporal port (jobs/service.ts) over this client, each call bounded by
 * `timeoutMs` (a gRPC deadline, so the client's own retries stop too while Temporal is down).
 */
export function jobWorkflowPort(client: Client, opts: { taskQueuePrefix: string; timeoutMs: number } & StartOptions): JobWorkflowPort {
  const bounded = <T>(fn: () => Promise<T>) => client.withDeadline(Date.now() + opts.timeoutMs, fn);
  const startOpts: StartOptions = { runTimeoutGraceMs: opts.runTimeoutGraceMs, startWaitMs: opts.startWaitMs, fairShare: opts.fairShare };
  return {
    start: (job) => bounded(() => startJobWorkflow(client, jobToStart(job, opts.taskQueuePrefix), startOpts)),
    cancel: (jobId) => bounded(() => cancelJobWorkflow(client, jobId)),
    cancelProviderRequest: (job, handoff) => bounded(() => startProviderCancel(client, job, opts.taskQueuePrefix, startOpts, handoff)),
  };
}

export interface LiveProgress {
  /** The workflow's `progress` query answer, or null when Temporal did not answer in time. */
  get(jobId: string): Promise<GenerationProgress | null>;
}

const LIVE_PROGRESS_CACHE_MAX = 10_000;

interface LiveEntry {
  value: Promise<GenerationProgress | null>;
  /** When the query answered; null while it is in flight. */
  settledAt: number | null;
}

/**
 * `?live=true` status reads: at most one `progress` query per job in flight on this replica
 * (concurrent requests share it), its answer reused for `cacheMs`, each query bounded by
 * `timeoutMs`. A query that timed out is not reused: the caller answers from Postgres and the next
 * request asks again.
 */
export function createLiveProgress(client: Client, opts: { timeoutMs: number; cacheMs: number; now?: () => number }): LiveProgress {
  const now = opts.now ?? (() => performance.now());
  const entries = new Map<string, LiveEntry>();
  const fresh = (e: LiveEntry, t: number) => e.settledAt === null || t - e.settledAt < opts.cacheMs;
  return {
    get(jobId) {
      const t = now();
      const hit = entries.get(jobId);
      if (hit && fresh(hit, t)) return hit.value;
      if (entries.size >= LIVE_PROGRESS_CACHE_MAX) {
        for (const [id, e] of entries) if (!fresh(e, t)) entries.delete(id);
        if (entries.size >= LIVE_PROGRESS_CACHE_MAX) entries.delete(entries.keys().next().value!);
      }
      const entry: LiveEntry = { settledAt: null, value: Promise.resolve(null) };
      entry.value = queryJobProgress(client, jobId, opts.timeoutMs).then((p) => {
        if (p === null) {
          if (entries.get(jobId) === entry) entries.delete(jobId);
        } else {
          entry.settledAt = now();
        }
        return p;
      });
      entries.set(jobId, entry);
      return entry.value;
    },
  };
}
