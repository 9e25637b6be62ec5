// The generation pipeline as it was before the local-step patch (LOCAL_DB_STEPS in pipeline.ts):
// every Postgres step a remote activity on the io queue, submit, record the reference, poll and store
// as separate activities. Jobs started on that build replay and finish through this code, unchanged
// command for command (test/workflows/histories/v1 holds histories the old build recorded; the
// replay test runs them). Remove it with the patch's deprecatePatch step once no such job runs.
//
// It was:
//   mark generating → prepare inputs → submit → poll with durable timers until done, failed or the
//   model's deadline → stream outputs into storage → mark completed (settling credits).
// On failure or cancellation: cancel the provider request, mark failed and refund.
// Deterministic code only: activities are seen by type, time comes from the workflow clock.
import { ApplicationFailure, CancellationScope, isCancellation, log, proxyActivities, setHandler, sleep, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { JobIoActivities, JobProviderActivities } from './activity-types.js';
import type { PollResult, ProviderRef } from '../shared/provider-types.js';
import { failureTypes } from '../shared/failure-types.js';
import { searchAttributes, taskQueues, type GenerationInput, type GenerationProgress, type JobStatus } from './definitions.js';
import { dbActivity, failureMessage, FIRST_POLL_MS, inputActivity, MAX_POLL_MS, outputActivity, pollActivity, progressQuery, submitActivity } from './pipeline-common.js';

export async function runGenerationV1(input: GenerationInput): Promise<{ outputs: number }> {
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
