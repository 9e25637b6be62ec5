// The provider adapter interface of docs/architecture.md: submit(job) → ref, poll(ref) → state, cancel(ref).
// Adapters never put media bytes into a Temporal payload: inputs are object keys in our store
// (handed to providers as presigned URLs) and outputs are either URLs the pipeline streams into
// our store, or keys already written there.
import type { Storage } from '../../shared/storage.js';
import type { ProviderName } from '../../shared/job-model.js';
import type { PollResult, ProviderOutput, ProviderRef, ProviderRequest, SpeechAudio } from '../../shared/provider-types.js';

export type { InputFile, PollResult, ProviderOutput, ProviderRef, ProviderRequest, SpeechAudio, VoiceSettings } from '../../shared/provider-types.js';

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
  /**
   * A speech provider's step (a route's catalog `speech`): speaks the request's script and stores it
   * at jobs/<jobId>/speech.wav; a repeat finds the stored speech and pays nothing again.
   */
  speak?(req: ProviderRequest, ctx: ProviderContext): Promise<SpeechAudio>;
}

/**
 * A provider failure. `retryable` ones (429, 5xx, timeouts) are retried by the activity's retry
 * policy, after `retryAfterMs` when the provider said how long to wait, and move the job to its next
 * route once the failover budget is spent; `account` and `route` ones move it at once; others fail
 * the job (error-table.ts says which is which, per provider).
 */
export class ProviderError extends Error {
  override name = 'ProviderError';
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;
  readonly status: number | undefined;
  /** Our account's fault at the provider (quota, billing, credentials): another provider can serve the job. */
  readonly account: boolean;
  /** The route cannot serve the model (gone, not enabled for us, not in our region or plan): another provider can. */
  readonly route: boolean;
  /**
   * A retryable failure of the provider's request itself (an infrastructure failure it reported): the
   * request will not deliver later, so the job may move on even after it was reported running.
   */
  readonly ended: boolean;
  constructor(
    message: string,
    opts: { retryable: boolean; retryAfterMs?: number | undefined; status?: number | undefined; account?: boolean; route?: boolean; ended?: boolean },
  ) {
    super(message);
    this.retryable = opts.retryable;
    this.account = opts.account ?? false;
    this.route = opts.route ?? false;
    this.ended = opts.ended ?? false;
    this.retryAfterMs = opts.retryAfterMs;
    this.status = opts.status;
  }

  /** Another route can serve the job now: waiting does not help. */
  get failsOverNow(): boolean {
    return this.account || this.route;
  }
}
