// Names shared by the gateway, the workers and the workflows: task queues, search attributes and
// the workflow input. Pure data — safe inside the workflow sandbox (the job kinds' workflow types
// are their descriptors', kinds/, which the sandbox does not load).
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { JobPhase, ProviderName, RouteChoice } from '../shared/job-model.js';
import type { JobKind } from '../kinds/index.js';
import type { ProviderRef } from '../shared/provider-types.js';

export { providerNames, type JobStatus, type ProviderName } from '../shared/job-model.js';
export type { JobKind } from '../kinds/index.js';

/**
 * The workflow that delivers one webhook event (workflows/webhook-delivery.ts): its id is the event
 * id for the first delivery, `<event id>/redeliver-<n>` for the n-th redelivery a customer asks for.
 */
export const webhookDeliveryWorkflowType = 'webhookDelivery';

/** The workflow that cancels a closed job's provider request (workflows/provider-cancel.ts). */
export const providerCancelWorkflowType = 'cancelProviderRequest';

/** How long a provider cancel is retried (its step's ScheduleToClose timeout, workflows/job-steps.ts cancelActivity). */
export const PROVIDER_CANCEL_WITHIN_MS = 5 * 60_000;

/**
 * The provider-cancel workflow's run timeout, whoever starts it: its one step's retry bound, plus as
 * long again for its workflow tasks to be served (a backlog on the workflows queue, a worker
 * restart). A run no worker serves ends then, instead of waiting for ever; the request it could not
 * cancel ends at the provider on its own (its own deadline, its result unfetched).
 */
export const PROVIDER_CANCEL_RUN_TIMEOUT_MS = 2 * PROVIDER_CANCEL_WITHIN_MS;

/** What the provider-cancel workflow is started with. */
export interface ProviderCancelInput {
  jobId: string;
  provider: ProviderName;
  model: string;
  taskQueuePrefix: string;
  /** The request to cancel (a route the job gave up); absent: the one recorded on the job row. */
  ref?: ProviderRef;
}

interface TaskQueues {
  workflows: string;
  io: string;
  /** Remote fetches (upload-from-url, URL job inputs): slow servers never hold another fleet's slots. */
  fetch: string;
  /** Webhook deliveries: a receiver that never answers holds only this queue's slots. */
  webhooks: string;
  provider(name: ProviderName): string;
  /**
   * A provider's waits (awaitProvider): served by the provider's fleet with many slots of their own,
   * so a generation being waited for never holds one of the PROVIDER_CONCURRENCY slots of its calls.
   */
  providerWaits(name: ProviderName): string;
}

/** Fleets run apart: workflow workers, I/O activities, remote fetches, and one queue per provider. */
export function taskQueues(prefix: string): TaskQueues {
  return {
    workflows: `${prefix}-workflows`,
    io: `${prefix}-io`,
    fetch: `${prefix}-fetch`,
    webhooks: `${prefix}-webhooks`,
    provider: (name) => `${prefix}-provider-${name}`,
    providerWaits: (name) => `${prefix}-provider-${name}-waits`,
  };
}

export const searchAttributes = {
  workspaceId: defineSearchAttributeKey('WorkspaceId', SearchAttributeType.KEYWORD),
  projectId: defineSearchAttributeKey('ProjectId', SearchAttributeType.KEYWORD),
  jobKind: defineSearchAttributeKey('JobKind', SearchAttributeType.KEYWORD),
  mediaModel: defineSearchAttributeKey('MediaModel', SearchAttributeType.KEYWORD),
  jobStatus: defineSearchAttributeKey('JobStatus', SearchAttributeType.KEYWORD),
  /** The provider serving the job now (its first route, or the one failover moved it to). */
  servingProvider: defineSearchAttributeKey('ServingProvider', SearchAttributeType.KEYWORD),
  /** The job's priority (high, normal, low), set at start. */
  jobPriority: defineSearchAttributeKey('JobPriority', SearchAttributeType.KEYWORD),
};

/** What a generation workflow is started with; everything else is read from Postgres by activities. */
export interface GenerationInput {
  jobId: string;
  kind: JobKind;
  model: string;
  /** The provider adapter serving this job, fixed at create time from the routing catalog. */
  provider: ProviderName;
  /**
   * The live routes the job may fail over across, in order (failover on and two or more routes);
   * absent: the job stays on `provider`.
   */
  routes?: RouteChoice[];
  /** Seconds the provider may take before the job fails (the model's deadline). */
  deadlineSeconds: number;
  /**
   * The customer's deadline (ISO time, `deadline_seconds` at create): a job not yet submitted by then
   * is never submitted; one running then is canceled at its provider. Absent: none.
   */
  cancelAt?: string;
  /**
   * How long the run may wait for its first step (JOB_START_WAIT_MS): one that gets it later fails
   * the job unsubmitted, since its run timeout (this + the deadline + the grace) no longer leaves it
   * the model's deadline and the time to store outputs. Absent: no such bound (runs started before it).
   */
  startWithinMs?: number;
  /** Queue prefix so separate deployments (and test suites) share one Temporal namespace. */
  taskQueuePrefix: string;
  /**
   * The create opted into reuse (docs/api/reuse.md): the run first follows an identical job of the
   * workspace (waits for it, or is answered from its outputs) or takes the request's key and runs.
   * Absent: the run is exactly as before reuse existed.
   */
  reuse?: true;
}

/** Name of every job workflow's `progress` query (job-generation.ts defines it; clients query it by name). */
export const progressQueryName = 'progress';
/** Name of the signal that wakes a job waiting for a route slot: a release granted it one (activities/jobs/slots.ts). */
export const routeSlotGrantedSignalName = 'routeSlotGranted';
/** Name of the signal that wakes a job waiting for the identical job it follows: that job ended (activities/jobs/reuse.ts). */
export const reuseSourceEndedSignalName = 'reuseSourceEnded';

/** Answer of the `progress` query. */
export interface GenerationProgress {
  phase: JobPhase;
  attempt: number;
  percent: number | null;
  queuePosition: number | null;
}
