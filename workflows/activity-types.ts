// The activities the generation workflows call, as the workflows see them (by type only). The
// worker's activities (activities/jobs.ts) implement these interfaces; the workflows never import
// activities/.
import type { JobOutput, JobStatus, ProviderAttempt, ProviderName, RouteChoice, RunClaim } from '../shared/job-model.js';
import type { PollResult, ProviderCancelHandoff, ProviderRef, ProviderRequest, SpeechAudio } from '../shared/provider-types.js';

/** Postgres and input work: local activities of the workflow worker, and input fetching on the fetch queue. */
export interface JobIoActivities {
  /**
   * Claims the job for this run (pending → generating, or a reset run taking it over, re-charging a
   * refunded job), with the provider request built in the same step unless the job's inputs must
   * be fetched from URLs first (`request` null: prepareProviderRequest on the fetch queue).
   */
  startGenerating(jobId: string): Promise<{ request: ProviderRequest | null; claim?: RunClaim }>;
  /** Resolves the job's inputs into stored objects and builds the provider request (claiming the job first in a reset run). */
  prepareProviderRequest(jobId: string): Promise<ProviderRequest>;
  /** → completed with its outputs (and the provider reference, when given), claiming the job first in a reset run. */
  completeJob(jobId: string, outputs: JobOutput[], ref?: ProviderRef): Promise<void>;
  /**
   * → failed, refunded and its media removed. Answers what the job is now: `completed` when it
   * completed after all (its completion committed, then its workflow task was lost), with its
   * outputs' count; `failedHere` when this run failed it (so its provider request is this run's to cancel).
   */
  failJob(
    jobId: string,
    code: 'generation_failed' | 'canceled' | 'deadline_exceeded',
    message: string,
  ): Promise<{ status: JobStatus; outputs: number; failedHere: boolean }>;
  /**
   * The route a job with failover routes uses next (jobs/failover.ts routeJob): at the start, the
   * first one its circuit breaker admits; after `gaveUp`, the next one (null: none left), with the
   * given-up request to cancel. Claims the job first in a reset run.
   */
  routeJob(jobId: string, gaveUp: ProviderAttempt | null): Promise<{ route: RouteChoice | null; previousRef: ProviderRef | null; claim?: RunClaim }>;
  /**
   * Starts the workflow that cancels a request the run hands off, through the client, so it runs on
   * the deployment's current build rather than the run's pinned one; does not wait for it.
   */
  handOffProviderCancel(jobId: string, handoff: ProviderCancelHandoff): Promise<void>;
  /**
   * A reuse job's first step (jobs/reuse.ts decideReuse): take the request's key and run (`lead`),
   * wait for the identical job that holds it (`wait`), or be answered from its outputs (`adopt`).
   */
  reuseStep(jobId: string): Promise<{ lead: true } | { wait: string } | { adopt: string }>;
  /**
   * Copies the outputs of the job's source into its own and completes it at the reuse price
   * (claiming it); `miss` when the source is no longer usable (deleted, expired): decide again.
   */
  adoptReused(jobId: string): Promise<{ adopted: number } | { miss: true }>;
  /** Wakes the jobs waiting for this one (its reuse followers) after it ended; answers how many. */
  wakeReuseFollowers(jobId: string): Promise<number>;
}

/** How a provider step runs: `failover` when the job has another route to move to (a give-up ends the step at once). */
export interface ProviderStepOptions {
  failover?: boolean;
  /** The state the provider last reported of the request (a check's), which decides whether an outage may give the route up. */
  reported?: PollResult['state'];
  /** The customer's deadline (ISO): a submit step does not submit after it (workflows/job-deadline.ts). */
  notAfter?: string;
  /**
   * The workflow waits for a route slot itself: a submit that must wait answers RouteSlotWait (the
   * job registered as a waiter) instead of failing RouteSlotBusy, and the workflow is signaled when a
   * release grants it a slot.
   */
  slotGrant?: true;
}

/** A submit refused for want of a route slot: the job waits at `route` for a grant, or asks again after `askAgainMs`. */
export interface RouteSlotWait {
  slotWait: { route: string; slots: number; askAgainMs: number };
}

/**
 * A provider status check: the poll's answer, and the outputs as stored once it succeeded.
 * `resubmit`: the job has no live request (a reset revived it after its request was canceled).
 * `claim`: the run holding the job, for its deadline (absent for a free provider, which never reads the row).
 */
export type ProviderCheck = Omit<PollResult, 'outputs'> & { stored: JobOutput[] | null; resubmit?: true; claim?: RunClaim };

/**
 * How an awaitProvider step waits: the backoff before its first poll (`nextPollMs`, the adapter's
 * hint, else `waitMs`, which grows ×1.5 per poll up to `maxWaitMs`), the model's deadline (epoch ms)
 * and the step's window, after either of which it returns its last check; and the progress the
 * workflow shows, whose change ends the step.
 */
export interface ProviderWait {
  waitMs: number;
  nextPollMs?: number;
  maxWaitMs: number;
  untilMs: number;
  windowMs: number;
  seen: { state: PollResult['state']; percent: number | null; queuePosition: number | null };
}

/** Provider calls and output streaming, on the provider's own queue. */
export interface JobProviderActivities {
  /**
   * A route's speech step, on the speech provider's queue (a talking actor's script spoken by
   * ElevenLabs): the speech stored once per job, found again by a retry; not after `notAfter` (ISO).
   */
  speak(provider: ProviderName, req: ProviderRequest, notAfter?: string): Promise<SpeechAudio>;
  /**
   * Submits once per job and run: the reference is recorded (job row and heartbeat) before
   * anything that can fail, and a retry that finds it polls it instead of paying again. Checks
   * once; a provider done already has its outputs stored.
   */
  submitAndCheck(provider: ProviderName, req: ProviderRequest, opts?: ProviderStepOptions): Promise<(ProviderCheck & { ref: ProviderRef }) | RouteSlotWait>;
  /** One status check of the job's recorded request; the outputs are stored when the provider is done. */
  checkProvider(provider: ProviderName, jobId: string, model: string, ref: ProviderRef, opts?: ProviderStepOptions): Promise<ProviderCheck>;
  /**
   * Polls the job's recorded request in the worker, each poll as checkProvider's, until there is news
   * for the workflow (stored, failed, resubmit, its progress changed) or the deadline or window is
   * reached (activities/jobs/await.ts): the check, and the backoff the next step starts from.
   */
  awaitProvider(
    provider: ProviderName,
    jobId: string,
    model: string,
    ref: ProviderRef,
    wait: ProviderWait,
    opts?: ProviderStepOptions,
  ): Promise<ProviderCheck & { waitMs: number }>;
  /** Cancels the job's recorded request (or `ref`, for a provider whose requests are not recorded); none: nothing to do. */
  cancelProvider(provider: ProviderName, model: string, jobId: string, ref: ProviderRef | undefined): Promise<void>;
}

/** One delivery attempt's answer (activities/webhooks.ts). */
export interface WebhookAttemptResult {
  status: number;
  attempt: number;
  /** Not sent: a later event of the job replaces it. */
  superseded?: boolean;
  /** Not sent, and no attempt made: the destination's circuit is open; ask again after this long. */
  circuitWaitMs?: number;
}

/** Webhook delivery (activities/webhooks.ts), on the webhooks queue. */
export interface WebhookActivities {
  /** One signed POST of the event; throws (retried by the workflow's policy) unless the receiver answered 2xx. */
  deliverWebhook(deliveryId: string): Promise<WebhookAttemptResult>;
  /** Retries ran out: the event is recorded as given up, with the attempts made. */
  abandonWebhook(deliveryId: string, message: string, attempts?: number): Promise<void>;
}
