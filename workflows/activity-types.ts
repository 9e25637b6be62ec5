// The activities the generation workflows call, as the workflows see them (by type only). The
// worker's activities (activities/jobs.ts) implement these interfaces; the workflows never import
// activities/.
import type { JobOutput, ProviderName } from '../shared/job-model.js';
import type { PollResult, ProviderOutput, ProviderRef, ProviderRequest } from '../shared/provider-types.js';

/** Postgres and input work: on the io queue, or as local activities of the workflow worker (workflows/pipeline.ts). */
export interface JobIoActivities {
  /** pending → generating (or failed → generating after an operator reset, re-charging). */
  markJobGenerating(jobId: string): Promise<void>;
  /**
   * markJobGenerating, with the provider request built in the same step unless the job's inputs
   * must be fetched from URLs first (`request` null: prepareProviderRequest on the fetch queue).
   * Run as a local activity.
   */
  startGenerating(jobId: string): Promise<{ request: ProviderRequest | null }>;
  /** Resolves the job's inputs into stored objects and builds the provider request. */
  prepareProviderRequest(jobId: string): Promise<ProviderRequest>;
  /** Stores the provider's request reference; the workflow now waits for the provider. */
  recordProviderRef(jobId: string, ref: ProviderRef | null): Promise<void>;
  /** generating → completed with its outputs (and the provider reference, when given), settling the charge. */
  completeJob(jobId: string, outputs: JobOutput[], ref?: ProviderRef): Promise<void>;
  /** → failed, refunded and its media removed; a completed job stays completed. */
  failJob(jobId: string, code: 'generation_failed' | 'canceled', message: string): Promise<void>;
  /** Settles the job's credits by its current status; answers the difference written. */
  settleCredits(jobId: string): Promise<number>;
}

/** A provider status check: the poll's answer, and the outputs as stored once it succeeded. */
export type ProviderCheck = Omit<PollResult, 'outputs'> & { stored: JobOutput[] | null };

/** Provider calls and output streaming, on the provider's own queue. */
export interface JobProviderActivities {
  /** Submit (idempotency key: the job id) and check once; a provider done already has its outputs stored. */
  submitAndCheck(provider: ProviderName, req: ProviderRequest): Promise<ProviderCheck & { ref: ProviderRef }>;
  /** One status check of the job's request; the outputs are stored when the provider is done. */
  checkProvider(provider: ProviderName, jobId: string, model: string, ref: ProviderRef): Promise<ProviderCheck>;
  submitToProvider(provider: ProviderName, req: ProviderRequest): Promise<ProviderRef>;
  pollProvider(provider: ProviderName, model: string, ref: ProviderRef): Promise<PollResult>;
  cancelProvider(provider: ProviderName, model: string, ref: ProviderRef): Promise<void>;
  storeOutputs(provider: ProviderName, jobId: string, outputs: ProviderOutput[]): Promise<JobOutput[]>;
}

/** Webhook delivery (activities/webhooks.ts), on the webhooks queue. */
export interface WebhookActivities {
  /** One signed POST of the event; throws (retried by the workflow's policy) unless the receiver answered 2xx. `superseded`: not sent, a later event of the job replaces it. */
  deliverWebhook(deliveryId: string): Promise<{ status: number; attempt: number; superseded?: boolean }>;
  /** Retries ran out: the event is recorded as given up. */
  abandonWebhook(deliveryId: string, message: string): Promise<void>;
}
