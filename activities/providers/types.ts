// The provider adapter interface of docs/architecture.md: submit(job) → ref, poll(ref) → state, cancel(ref).
// Adapters never put media bytes into a Temporal payload: inputs are object keys in our store
// (handed to providers as presigned URLs) and outputs are either URLs the pipeline streams into
// our store, or keys already written there.
import type { Storage } from '../../shared/storage.js';
import type { ProviderName } from '../../shared/job-model.js';
import type { PollResult, ProviderOutput, ProviderRef, ProviderRequest } from '../../shared/provider-types.js';

export type { InputFile, PollResult, ProviderOutput, ProviderRef, ProviderRequest, VoiceSettings } from '../../shared/provider-types.js';

export interface ProviderContext {
  storage: Storage;
  /** A URL a provider can fetch one of our stored inputs from. */
  inputUrl(key: string): Promise<string>;
  heartbeat(details?: unknown): void;
  signal: AbortSignal;
  /** Retry attempt of the calling activity, from 1. */
  attempt: number;
}

export interface CancelOutcome {
  confirmed: boolean;
}

/** A cancel the provider did not (or could not) confirm. */
export const notConfirmed: CancelOutcome = Object.freeze({ confirmed: false });

export interface ProviderAdapter {
  readonly name: ProviderName;
  /**
   * Its requests cost nothing to repeat and end with the process that made them (the local
   * renderer): the pipeline records their reference with the outcome, not before the first check.
   */
  readonly free?: boolean;
  submit(req: ProviderRequest, ctx: ProviderContext): Promise<ProviderRef>;
  poll(ref: ProviderRef, ctx: ProviderContext): Promise<PollResult>;
  /**
   * Asks the provider to stop the request. `confirmed`: the provider accepted the cancel of a request
   * it had not run, so it charges nothing (only providers whose cancel is honored, shared/routing.ts
   * providerCancel); false when there is no cancel to ask for or the request had already run.
   */
  cancel(ref: ProviderRef, ctx: ProviderContext): Promise<CancelOutcome>;
  /** Extra headers needed to download an output URL (rarely needed). */
  outputHeaders?(output: ProviderOutput): Record<string, string>;
}

/**
 * A provider failure. `retryable` ones (429, 5xx, timeouts) are retried by the activity's retry
 * policy, after `retryAfterMs` when the provider said how long to wait; others fail the job.
 */
export class ProviderError extends Error {
  override name = 'ProviderError';
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;
  readonly status: number | undefined;
  /** Our account's fault at the provider (quota, billing, credentials): another provider can serve the job. */
  readonly account: boolean;
  constructor(message: string, opts: { retryable: boolean; retryAfterMs?: number; status?: number; account?: boolean }) {
    super(message);
    this.retryable = opts.retryable;
    this.account = opts.account ?? false;
    this.retryAfterMs = opts.retryAfterMs;
    this.status = opts.status;
  }
}
