// What both builds of the generation pipeline share (pipeline.ts, and pipeline-v1.ts that finishes
// jobs started before the local-step patch): the progress query, the named activity option presets
// and the failure message helper. Deterministic code only.
import { defineQuery, type ActivityOptions, type LocalActivityOptions } from '@temporalio/workflow';
import { nonRetryableFailureTypes } from '../shared/failure-types.js';
import { progressQueryName, type GenerationProgress } from './definitions.js';

export const progressQuery = defineQuery<GenerationProgress>(progressQueryName);

// Named activity option presets: explicit timeouts and retry policies.
const retryTransient = {
  initialInterval: '1s',
  backoffCoefficient: 2,
  maximumInterval: '30s',
  nonRetryableErrorTypes: nonRetryableFailureTypes,
};

/** Short Postgres reads and writes. */
export const dbActivity: ActivityOptions = {
  startToCloseTimeout: '30s',
  retry: { ...retryTransient, maximumAttempts: 20 },
};
/**
 * The same Postgres steps run as local activities in the workflow worker: no task queue hop and no
 * extra workflow task. A retry that must wait longer than 2 s waits on a workflow timer instead of
 * holding the workflow task open.
 */
export const localDbStep: LocalActivityOptions = {
  startToCloseTimeout: '30s',
  localRetryThreshold: '2s',
  retry: { ...retryTransient, maximumAttempts: 20 },
};
/** Input preparation: may fetch remote files. */
export const inputActivity: ActivityOptions = {
  startToCloseTimeout: '5m',
  heartbeatTimeout: '60s',
  retry: { ...retryTransient, maximumAttempts: 5 },
};
/** Provider submission: the local renderer renders here, heartbeating. */
export const submitActivity: ActivityOptions = {
  startToCloseTimeout: '15m',
  heartbeatTimeout: '60s',
  retry: { ...retryTransient, initialInterval: '2s', maximumAttempts: 6 },
};
/** One provider status check. */
export const pollActivity: ActivityOptions = {
  startToCloseTimeout: '60s',
  retry: { ...retryTransient, initialInterval: '2s', maximumAttempts: 8 },
};
/**
 * One provider status check that, when the provider is done, streams the outputs into our store in
 * the same activity: as long as storing may take, heartbeating so a hung call is still caught.
 */
export const checkActivity: ActivityOptions = {
  startToCloseTimeout: '20m',
  heartbeatTimeout: '60s',
  retry: { ...retryTransient, initialInterval: '2s', maximumAttempts: 8 },
};
/** Streaming outputs into our store. */
export const outputActivity: ActivityOptions = {
  startToCloseTimeout: '20m',
  heartbeatTimeout: '60s',
  retry: { ...retryTransient, maximumAttempts: 6 },
};

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
