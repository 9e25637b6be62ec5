// The job service's ports and inputs (jobs/service.ts): what it needs from the process that builds
// it, what a create is quoted from, and what the Temporal side answers.
import type { Logger } from 'pino';
import type { Database } from '../db/index.js';
import type { Job } from '../db/schema.js';
import type { ProviderCircuits } from '../db/provider-circuits.js';
import type { Storage } from '../shared/storage.js';
import type { ModelRoute } from '../shared/catalog.js';
import type { JobPriority } from '../shared/job-model.js';
import type { ProviderCancelHandoff } from '../shared/provider-types.js';
import type { resolveJobRoute } from '../shared/routing.js';
import type { JobParamsOf, StoredJobParams } from '../shared/job-params.js';
import type { JobKind } from '../kinds/index.js';

/** The configuration that says which providers serve each model here. */
type RoutingConfig = Parameters<typeof resolveJobRoute>[0];

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
   * clean up (its run was terminated): a small workflow on the provider's queue does it, started on
   * the deployment's current build. `handoff`: the request a job's own run hands off instead.
   */
  cancelProviderRequest(job: Job, handoff?: ProviderCancelHandoff): Promise<void>;
}

export interface JobServiceDeps {
  db: Database;
  storage: Storage;
  /** Which providers serve each model here (quote); absent where nothing is quoted. */
  config?: RoutingConfig;
  /** Absent where no Temporal call is made (a worker without the reconciler role). */
  workflows?: JobWorkflowPort;
  /** The providers' circuit breakers (routeJob); absent where no job is routed (the gateway). */
  circuits?: ProviderCircuits;
  logger?: Pick<Logger, 'warn' | 'info'>;
  /**
   * Wakes the workflow of a job a release granted a route slot (a signal; worker/slot-grants.ts).
   * Absent: the job asks again on its own after SLOT_GRANT_FALLBACK_MS.
   */
  wakeSlotGrantee?: (jobId: string) => Promise<void>;
  /**
   * Wakes the workflow of a job waiting for the identical job it follows (a signal; worker/slot-grants.ts).
   * Absent: the follower decides again on its own after REUSE_RECHECK_MS.
   */
  wakeReuseFollower?: (jobId: string) => Promise<void>;
  /** What time it is for budget periods (default the system clock); tests move it past a period's end. */
  clock?: () => Date;
}

/** A create as the gateway prepared it: its model's route and the kind's typed params. */
export interface QuoteRequest {
  workspaceId: string;
  projectId: string;
  model: string;
  route: ModelRoute;
  params: JobParamsOf<JobKind>;
  /** The job's priority (default normal): a low job may be cheaper (shared/catalog.ts priceAt). */
  priority?: JobPriority;
}

export interface Quote {
  /** The params stored with the job: the request's, with the route it is served by (decided here, once). */
  params: StoredJobParams;
  price: number;
  /** What a cancel after the submit does not refund: the provider's cost (0 on the free local renderer). */
  nonRefundable: number;
}

/** How a start went: the workflow started, it existed already, or the start failed (left for the reconciler). */
export type StartOutcome = 'started' | 'already_started' | 'failed';
