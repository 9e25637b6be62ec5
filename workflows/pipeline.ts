// The one generation pipeline every job kind runs:
//   mark generating → prepare inputs → submit → poll with durable timers until done, failed or the
//   model's deadline → stream outputs into storage → mark completed (settling credits).
// On failure or cancellation: cancel the provider request, mark failed and refund.
// Deterministic code only: activities are seen by type, time comes from the workflow clock.
import {
  ApplicationFailure,
  CancellationScope,
  defineQuery,
  isCancellation,
  log,
  proxyActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { JobIoActivities, JobProviderActivities } from './activity-types.js';
import type { PollResult, ProviderRef } from '../shared/provider-types.js';
import { failureTypes, nonRetryableFailureTypes } from '../shared/failure-types.js';
import { progressQueryName, searchAttributes, taskQueues, type GenerationInput, type GenerationProgress, type JobStatus } from './definitions.js';

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
/** Streaming outputs into our store. */
export const outputActivity: ActivityOptions = {
  startToCloseTimeout: '20m',
  heartbeatTimeout: '60s',
  retry: { ...retryTransient, maximumAttempts: 6 },
};

const FIRST_POLL_MS = 1_000;
const MAX_POLL_MS = 30_000;

export async function runGeneration(input: GenerationInput): Promise<{ outputs: number }> {
  const queues = taskQueues(input.taskQueuePrefix);
  const providerQueue = queues.provider(input.provider);
  // Option presets per step; every call adds a summary the Web UI shows for the activity.
  const onIo = { ...dbActivity, taskQueue: queues.io };
  const onInputs = { ...inputActivity, taskQueue: queues.fetch };
  const onSubmit = { ...submitActivity, taskQueue: providerQueue };
  const onPoll = { ...pollActivity, taskQueue: providerQueue };
  const onOutputs = { ...outputActivity, taskQueue: providerQueue };
  const io = proxyActivities<JobIoActivities>(onIo);
  const provider = proxyActivities<JobProviderActivities>(onPoll);
  const via = `${input.provider === 'local' ? 'the local renderer' : input.provider} (${input.model})`;

  const progress: GenerationProgress = { phase: 'queued', attempt: workflowInfo().attempt, percent: null, queuePosition: null };
  setHandler(progressQuery, () => progress);
  const setStatus = (status: JobStatus) => upsertSearchAttributes([{ key: searchAttributes.jobStatus, value: status }]);

  let ref: ProviderRef | undefined;
  const startedAt = Date.now(); // workflow clock: deterministic, and resets restart it
  const deadline = startedAt + input.deadlineSeconds * 1000;

  try {
    await io.markJobGenerating.executeWithOptions({ ...onIo, summary: 'Mark the job generating (re-charging it after a reset)' }, [input.jobId]);
    setStatus('generating');

    progress.phase = 'fetching_inputs';
    const request = await io.prepareProviderRequest.executeWithOptions({ ...onInputs, summary: 'Resolve inputs into stored files and build the provider request' }, [input.jobId]);

    progress.phase = 'submitting';
    ref = await provider.submitToProvider.executeWithOptions({ ...onSubmit, summary: `Submit to ${via}` }, [input.provider, request]);
    await io.recordProviderRef.executeWithOptions({ ...onIo, summary: 'Record the provider request reference' }, [input.jobId, ref]);

    progress.phase = 'generating';
    let result: PollResult;
    let wait = FIRST_POLL_MS;
    for (;;) {
      result = await provider.pollProvider.executeWithOptions({ ...onPoll, summary: `Check ${via}` }, [input.provider, input.model, ref]);
      progress.percent = result.percent ?? progress.percent;
      progress.queuePosition = result.state === 'queued' ? (result.queuePosition ?? null) : null;
      if (result.state === 'succeeded') break;
      if (result.state === 'failed') {
        throw ApplicationFailure.nonRetryable(result.message ?? 'the provider reported the generation as failed', failureTypes.generationFailed);
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        throw ApplicationFailure.nonRetryable(`the provider did not finish within ${input.deadlineSeconds} s`, failureTypes.deadlineExceeded);
      }
      await sleep(Math.min(result.nextPollMs ?? wait, remaining));
      wait = Math.min(Math.round(wait * 1.5), MAX_POLL_MS);
    }

    progress.phase = 'storing_outputs';
    const outputs = await provider.storeOutputs.executeWithOptions({ ...onOutputs, summary: 'Stream the outputs into object storage' }, [input.provider, input.jobId, result.outputs ?? []]);
    if (outputs.length === 0) throw ApplicationFailure.nonRetryable('the provider returned no output', failureTypes.generationFailed);

    await io.completeJob.executeWithOptions({ ...onIo, summary: 'Mark the job completed and settle its credits' }, [input.jobId, outputs]);
    progress.phase = 'completed';
    progress.percent = 100;
    setStatus('completed');
    return { outputs: outputs.length };
  } catch (err) {
    const canceled = isCancellation(err);
    const message = canceled ? 'the job was canceled' : failureMessage(err);
    // Clean-up must run even though the workflow is being canceled.
    await CancellationScope.nonCancellable(async () => {
      if (ref) {
        try {
          await provider.cancelProvider.executeWithOptions({ ...onPoll, summary: `Cancel the request at ${via}` }, [input.provider, input.model, ref]);
        } catch (cancelErr) {
          log.warn('provider cancel failed', { jobId: input.jobId, error: failureMessage(cancelErr) });
        }
      }
      await io.failJob.executeWithOptions({ ...onIo, summary: 'Mark the job failed and refund it' }, [input.jobId, canceled ? 'canceled' : 'generation_failed', message]);
    });
    progress.phase = canceled ? 'canceled' : 'failed';
    setStatus('failed');
    if (canceled) throw err;
    throw ApplicationFailure.nonRetryable(message, failureTypes.generationFailed);
  }
}

/** The most specific message of a failure chain (activity failure → application failure). */
function failureMessage(err: unknown): string {
  let e: unknown = err;
  let message = 'generation failed';
  while (e instanceof Error) {
    if (e.message) message = e.message;
    e = (e as { cause?: unknown }).cause;
  }
  return message;
}
