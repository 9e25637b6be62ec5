// What the generation workflow (job-generation.ts) and the provider-cancel workflow share: the progress
// query, the named activity option presets and the failure message helper. Deterministic code only.
import { defineQuery, defineSignal, workflowInfo, type ActivityOptions, type LocalActivityOptions } from '@temporalio/workflow';
import type { RunClaim } from '../shared/job-model.js';
import { nonRetryableFailureTypes } from '../shared/failure-types.js';
import { providerStepRetry } from '../shared/provider-retry.js';
import {
  progressQueryName,
  PROVIDER_CANCEL_WITHIN_MS,
  reuseSourceEndedSignalName,
  routeSlotGrantedSignalName,
  type GenerationProgress,
} from './definitions.js';

export const progressQuery = defineQuery<GenerationProgress>(progressQueryName);
/** A release granted the job a route slot: its waiting submit asks again now. */
export const routeSlotGrantedSignal = defineSignal(routeSlotGrantedSignalName);
/** The identical job a reuse follower waits for ended: it decides again now. */
export const reuseSourceEndedSignal = defineSignal(reuseSourceEndedSignalName);
/** How often a reuse follower decides again without a wake (one lost with a worker, a source the reconciler failed). */
export const REUSE_RECHECK_MS = 60_000;
/** The patch under which a job waits for a route slot in the workflow, woken by a grant, instead of retrying its submit. */
export const ROUTE_SLOT_GRANT_PATCH = 'route-slot-grant';
/** The patch under which a job waits for its provider in one awaitProvider step per piece of news, instead of a timer and a checkProvider per poll. */
export const AWAIT_PROVIDER_PATCH = 'await-provider';

// Named activity option presets: explicit timeouts and retry policies.
const retryTransient = {
  initialInterval: '1s',
  backoffCoefficient: 2,
  maximumInterval: '30s',
  nonRetryableErrorTypes: nonRetryableFailureTypes,
};

/**
 * The Postgres steps, as local activities of the workflow worker: no task queue hop and no extra
 * workflow task. They retry for as long as Postgres is away (no attempt cap; the interval stops
 * growing at a minute), since giving up would fail jobs whose generation is paid for and stored. A
 * retry that must wait longer than 2 s waits on a workflow timer instead of holding the task open.
 */
export const localDbStep: LocalActivityOptions = {
  startToCloseTimeout: '30s',
  localRetryThreshold: '2s',
  retry: { ...retryTransient, maximumInterval: '60s' },
};
/** A reuse follower's copy of its source's outputs (io queue): storage copies, retried for half an hour of outages. */
export const reuseCopyActivity: ActivityOptions = {
  startToCloseTimeout: '10m',
  scheduleToCloseTimeout: '30m',
  retry: { ...retryTransient },
};
/** Input preparation: may fetch remote files; retried for half an hour of outages. */
export const inputActivity: ActivityOptions = {
  startToCloseTimeout: '5m',
  scheduleToCloseTimeout: '30m',
  heartbeatTimeout: '30s',
  retry: { ...retryTransient },
};
/**
 * A provider step's heartbeat timeout. Provider calls heartbeat on an interval while they run
 * (activities/jobs.ts), so only a dead or frozen worker misses it: the step moves to another
 * worker after this long, and finds the request the first attempt recorded.
 */
const PROVIDER_HEARTBEAT_TIMEOUT = '30s';
/** The provider steps' retries (shared/provider-retry.ts: the steps measure an outage from it). */
const providerRetry = {
  ...retryTransient,
  initialInterval: providerStepRetry.initialMs,
  backoffCoefficient: providerStepRetry.coefficient,
  maximumInterval: providerStepRetry.maxIntervalMs,
};
/** Provider submission (the local renderer renders here). Bounded by time, see providerStepWithin. */
export const submitActivity: ActivityOptions = {
  startToCloseTimeout: '15m',
  heartbeatTimeout: PROVIDER_HEARTBEAT_TIMEOUT,
  retry: providerRetry,
};
/**
 * One provider status check that, when the provider is done, streams the outputs into our store in
 * the same activity: as long as storing may take, heartbeating so a hung call is still caught.
 * Bounded by time, see providerStepWithin.
 */
export const checkActivity: ActivityOptions = {
  startToCloseTimeout: '20m',
  heartbeatTimeout: PROVIDER_HEARTBEAT_TIMEOUT,
  retry: providerRetry,
};
/**
 * How long one awaitProvider step polls in the worker before it returns to the workflow with nothing
 * new: it bounds what a deploy's draining worker holds, not a worker's loss (its heartbeat timeout
 * finds that).
 */
export const PROVIDER_WAIT_WINDOW_MS = 5 * 60_000;
/** A provider wait polled in the worker (activities/jobs/await.ts): its window, and its last poll's time. */
export const awaitActivity: ActivityOptions = {
  ...checkActivity,
  startToCloseTimeout: PROVIDER_WAIT_WINDOW_MS + 5 * 60_000,
};
/** Canceling a provider request: after the refund, retried for at most five minutes. */
export const cancelActivity: ActivityOptions = {
  startToCloseTimeout: '60s',
  scheduleToCloseTimeout: PROVIDER_CANCEL_WITHIN_MS,
  retry: { ...retryTransient, initialInterval: '2s' },
};

/** Storing a finished generation's outputs may run past the model's deadline by this much. */
const STORE_OUTPUTS_GRACE_MS = 20 * 60_000;

/**
 * A provider step's time bound: what is left of the model's deadline, plus the time storing the
 * outputs may take. Its retries (a 5xx, a throttled status endpoint, a storage outage) go on until
 * then; past it the step fails and so does the job, refunded.
 */
function providerStepWithin(remainingMs: number): Pick<ActivityOptions, 'scheduleToCloseTimeout'> {
  return { scheduleToCloseTimeout: Math.max(remainingMs, 0) + STORE_OUTPUTS_GRACE_MS };
}

/**
 * The model's deadline of one run, counted from the moment this run claimed the job, as its steps
 * answer it: a run an operator's reset revived replays the clock of the run it replaces, which may
 * have failed hours ago. While only another run's claims have been seen (the replayed part of a
 * reset run), no deadline has started; steps that answer no claim at all leave it at the run's start.
 * Provider steps retry for as long as that deadline leaves (`within`), not for a number of attempts:
 * an outage of the provider's status endpoint is waited out. Workflow code only (its clock).
 */
export function runClock(deadlineSeconds: number) {
  const startedAt = Date.now(); // workflow clock: deterministic
  let claimedAt: number | undefined;
  let replayedClaim = false;
  const noteClaim = (claim: RunClaim | undefined) => {
    if (!claim) return;
    if (claim.runId === workflowInfo().runId) claimedAt = claim.at;
    else replayedClaim = true;
  };
  const deadline = () => (claimedAt ?? (replayedClaim ? Date.now() : startedAt)) + deadlineSeconds * 1000;
  const within = () => providerStepWithin(deadline() - Date.now());
  return { startedAt, noteClaim, deadline, within };
}

export const FIRST_POLL_MS = 1_000;
export const MAX_POLL_MS = 30_000;

/** The most specific message of a failure chain (activity failure → application failure). */
export function failureMessage(err: unknown): string {
  let e: unknown = err;
  let message = 'generation failed';
  while (e instanceof Error) {
    if (e.message) message = e.message;
    e = (e as { cause?: unknown }).cause;
  }
  return message;
}
