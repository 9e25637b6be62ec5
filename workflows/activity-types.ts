// The activities the generation workflows call, as the workflows see them (by type only). The
// worker's activities (activities/jobs.ts) implement these interfaces; the workflows never import
// activities/.
import type { JobOutput, ProviderName } from '../shared/job-model.js';
import type { PollResult, ProviderOutput, ProviderRef, ProviderRequest } from '../shared/provider-types.js';

/** Postgres and input work, on the io queue. */
export interface JobIoActivities {
  /** pending → generating (or failed → generating after an operator reset, re-charging). */
  markJobGenerating(jobId: string): Promise<void>;
  /** Resolves the job's inputs into stored objects and builds the provider request. */
  prepareProviderRequest(jobId: string): Promise<ProviderRequest>;
  /** Stores the provider's request reference; the workflow now waits for the provider. */
  recordProviderRef(jobId: string, ref: ProviderRef | null): Promise<void>;
  /** generating → completed with its outputs, settling the charge. */
  completeJob(jobId: string, outputs: JobOutput[]): Promise<void>;
  /** → failed, refunded and its media removed; a completed job stays completed. */
  failJob(jobId: string, code: 'generation_failed' | 'canceled', message: string): Promise<void>;
  /** Settles the job's credits by its current status; answers the difference written. */
  settleCredits(jobId: string): Promise<number>;
}

/** Provider calls and output streaming, on the provider's own queue. */
export interface JobProviderActivities {
  submitToProvider(provider: ProviderName, req: ProviderRequest): Promise<ProviderRef>;
  pollProvider(provider: ProviderName, model: string, ref: ProviderRef): Promise<PollResult>;
  cancelProvider(provider: ProviderName, model: string, ref: ProviderRef): Promise<void>;
  storeOutputs(provider: ProviderName, jobId: string, outputs: ProviderOutput[]): Promise<JobOutput[]>;
}
