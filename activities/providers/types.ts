// The provider adapter interface of DESIGN.md: submit(job) → ref, poll(ref) → state, cancel(ref).
// Adapters never put media bytes into a Temporal payload: inputs are object keys in our store
// (handed to providers as presigned URLs) and outputs are either URLs the pipeline streams into
// our store, or keys already written there.
import type { Storage } from '../storage.js';
import type { JobKind, ProviderName } from '../../workflows/definitions.js';
import type { ModelRoute } from './catalog.js';

/** An input file already in our object store. */
export interface InputFile {
  role: 'image' | 'video' | 'reference' | 'start_frame' | 'end_frame' | 'actor_image';
  key: string;
  contentType: string;
}

export interface VoiceSettings {
  speed?: number;
  stability?: number;
  similarity?: number;
  style?: number;
}

/** Everything an adapter needs to run one job, normalized from the create request. */
export interface ProviderRequest {
  jobId: string;
  kind: JobKind;
  model: string;
  route: ModelRoute;
  prompt?: string;
  aspectRatio?: string;
  count?: number;
  duration?: number;
  resolution?: string;
  script?: string;
  voice?: { id: string; ttsVoice: string; providerVoiceId: string | null; gender: string };
  voiceOptions?: VoiceSettings;
  inputs: InputFile[];
}

/** JSON-serializable reference to a submitted provider request (kept in the workflow and the job row). */
export type ProviderRef = { provider: ProviderName } & Record<string, unknown>;

export interface ProviderOutput {
  /** Already in our store (the local renderer writes there directly). */
  key?: string;
  /** Or a URL of the provider's to stream from. */
  url?: string;
  contentType?: string;
  size?: number;
}

export interface PollResult {
  state: 'queued' | 'running' | 'succeeded' | 'failed';
  percent?: number;
  queuePosition?: number;
  outputs?: ProviderOutput[];
  /** Provider's reason, for a failed state. */
  message?: string;
  /** Hint for the next poll (provider-specified), in ms. */
  nextPollMs?: number;
}

export interface ProviderContext {
  storage: Storage;
  /** A URL a provider can fetch one of our stored inputs from. */
  inputUrl(key: string): Promise<string>;
  heartbeat(details?: unknown): void;
  signal: AbortSignal;
  /** Retry attempt of the calling activity, from 1. */
  attempt: number;
}

export interface ProviderAdapter {
  readonly name: ProviderName;
  submit(req: ProviderRequest, ctx: ProviderContext): Promise<ProviderRef>;
  poll(ref: ProviderRef, ctx: ProviderContext): Promise<PollResult>;
  cancel(ref: ProviderRef, ctx: ProviderContext): Promise<void>;
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
  constructor(message: string, opts: { retryable: boolean; retryAfterMs?: number; status?: number }) {
    super(message);
    this.retryable = opts.retryable;
    this.retryAfterMs = opts.retryAfterMs;
    this.status = opts.status;
  }
}
