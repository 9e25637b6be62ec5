// The data a job's activities and its workflow exchange with provider adapters: the normalized
// request, the reference to a submitted request, poll results and outputs. JSON-serializable (they
// travel in Temporal payloads), and pure types, so workflow code may see them.
import type { ProviderName } from './job-model.js';
import type { JobKindName as JobKind } from './job-model.js';
import type { ModelRoute } from './catalog.js';
import type { ImageTarget } from './output-format.js';

/** An input file already in our object store. */
export interface InputFile {
  /** `background`: a video our side composites the output over (a talking actor's), never sent to a provider. */
  role: 'image' | 'video' | 'reference' | 'start_frame' | 'end_frame' | 'actor_image' | 'background';
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
  /** The provider's own model id, fixed when the job was created (absent on older jobs: use the route's). */
  providerModelId?: string | undefined;
  prompt?: string;
  aspectRatio?: string;
  count?: number;
  duration?: number;
  resolution?: string;
  /** Generation controls the create asked for (shared/generation-controls.ts): only on a route whose catalog `controls` list them. */
  seed?: number;
  negativePrompt?: string;
  audio?: boolean;
  /**
   * An image job's asked output format (shared/output-format.ts), when not PNG: the output store
   * re-encodes into it; no provider is sent it. The local renderer keeps it in its reference, so its
   * checks need no database read.
   */
  imageTarget?: ImageTarget;
  script?: string;
  voice?: { id: string; ttsVoice: string; providerVoiceId: string | null; gender: string };
  voiceOptions?: VoiceSettings;
  inputs: InputFile[];
  /** The speech its route's speech step stored (talking actor), once that step ran. */
  speech?: SpeechAudio;
}

/** Speech a speech step stored: its object key (a 16-bit mono PCM WAV) and how long it lasts. */
export interface SpeechAudio {
  key: string;
  seconds: number;
}

/** JSON-serializable reference to a submitted provider request (kept in the workflow and the job row). */
export type ProviderRef = { provider: ProviderName } & Record<string, unknown>;

/**
 * A provider cancel a job's run hands to a workflow of its own without waiting for it: the request
 * of a route it gave up (`ref`), or whatever request its row records (no `ref`) once its deadline passed.
 */
export interface ProviderCancelHandoff {
  /** The cancel workflow's id: one per job and purpose. */
  workflowId: string;
  provider: ProviderName;
  ref?: ProviderRef;
  /** Its one-line summary in the Web UI. */
  summary: string;
}

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
