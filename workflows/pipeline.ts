// The one generation pipeline every job kind runs:
//   start generating (charged, request built) → submit and check once → while the provider works:
//   record its reference, check again on durable timers until done, failed or the model's deadline
//   → mark completed with the outputs the final check stored (settling credits).
// On failure or cancellation: cancel the provider request, mark failed and refund.
//
// Round trips: the Postgres steps are LOCAL activities, run by the workflow worker inside the
// workflow task that schedules them (no task queue hop, no extra workflow task); the provider
// steps stay on the provider's queue so its fleet caps its concurrency. A job the provider finishes
// within submit (the local renderer) costs two workflow tasks and one activity task.
//
// Jobs started before this shape (LOCAL_DB_STEPS) replay and finish on pipeline-v1.ts.
// Deterministic code only: activities are seen by type, time comes from the workflow clock.
import {
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { JobIoActivities, JobProviderActivities, ProviderCheck } from './activity-types.js';
import type { ProviderRef } from '../shared/provider-types.js';
import { failureTypes } from '../shared/failure-types.js';
import { searchAttributes, taskQueues, type GenerationInput, type GenerationProgress, type JobStatus } from './definitions.js';
import { checkActivity, failureMessage, FIRST_POLL_MS, inputActivity, localDbStep, MAX_POLL_MS, pollActivity, progressQuery, submitActivity } from './pipeline-common.js';
import { runGenerationV1 } from './pipeline-v1.js';

export { progressQuery } from './pipeline-common.js';

/**
 * The patch that made the Postgres steps local and folded the first check and output storing into
 * the provider steps. Its marker is in every history started on this build; histories without it
 * run pipeline-v1.ts. Retire in two deployments: deprecatePatch(LOCAL_DB_STEPS) with v1 removed once
 * no job started before this build runs, then remove the call once none started before that.
 */
export const LOCAL_DB_STEPS = 'local-db-steps';

export async function runGeneration(input: GenerationInput): Promise<{ outputs: number }> {
  if (!patched(LOCAL_DB_STEPS)) return runGenerationV1(input);

  const queues = taskQueues(input.taskQueuePrefix);
  const providerQueue = queues.provider(input.provider);
  // Option presets per step; every call adds a summary the Web UI shows for the step.
  const onInputs = { ...inputActivity, taskQueue: queues.fetch };
  const onSubmit = { ...submitActivity, taskQueue: providerQueue };
  const onCheck = { ...checkActivity, taskQueue: providerQueue };
  const onCancel = { ...pollActivity, taskQueue: providerQueue };
  const db = proxyLocalActivities<JobIoActivities>(localDbStep);
  const inputs = proxyActivities<JobIoActivities>(onInputs);
  const provider = proxyActivities<JobProviderActivities>(onCheck);
  const via = `${input.provider === 'local' ? 'the local renderer' : input.provider} (${input.model})`;

  const progress: GenerationProgress = { phase: 'queued', attempt: workflowInfo().attempt, percent: null, queuePosition: null };
  setHandler(progressQuery, () => progress);
  const setStatus = (status: JobStatus) => upsertSearchAttributes([{ key: searchAttributes.jobStatus, value: status }]);

  let ref: ProviderRef | undefined;
  const startedAt = Date.now(); // workflow clock: deterministic, and resets restart it
  const deadline = startedAt + input.deadlineSeconds * 1000;

  try {
    const started = await db.startGenerating.executeWithOptions({ ...localDbStep, summary: 'Mark the job generating (re-charging it after a reset) and build the provider request' }, [input.jobId]);
    setStatus('generating');

    let request = started.request;
    if (!request) {
      progress.phase = 'fetching_inputs';
      request = await inputs.prepareProviderRequest.executeWithOptions({ ...onInputs, summary: 'Fetch the URL inputs into storage and build the provider request' }, [input.jobId]);
    }

    progress.phase = 'submitting';
    let check: ProviderCheck;
    ({ ref, ...check } = await provider.submitAndCheck.executeWithOptions({ ...onSubmit, summary: `Submit to ${via} and check it once` }, [input.provider, request]));

    let wait = FIRST_POLL_MS;
    if (!check.stored) {
      await db.recordProviderRef.executeWithOptions({ ...localDbStep, summary: 'Record the provider request reference' }, [input.jobId, ref]);
      progress.phase = 'generating';
    }
    while (!check.stored) {
      progress.percent = check.percent ?? progress.percent;
      progress.queuePosition = check.state === 'queued' ? (check.queuePosition ?? null) : null;
      if (check.state === 'failed') {
        throw ApplicationFailure.nonRetryable(check.message ?? 'the provider reported the generation as failed', failureTypes.generationFailed);
      }
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        throw ApplicationFailure.nonRetryable(`the provider did not finish within ${input.deadlineSeconds} s`, failureTypes.deadlineExceeded);
      }
      await sleep(Math.min(check.nextPollMs ?? wait, remaining));
      wait = Math.min(Math.round(wait * 1.5), MAX_POLL_MS);
      check = await provider.checkProvider.executeWithOptions({ ...onCheck, summary: `Check ${via}; store the outputs when it is done` }, [input.provider, input.jobId, input.model, ref]);
    }

    const outputs = check.stored;
    if (outputs.length === 0) throw ApplicationFailure.nonRetryable('the provider returned no output', failureTypes.generationFailed);
    await db.completeJob.executeWithOptions({ ...localDbStep, summary: 'Mark the job completed and settle its credits' }, [input.jobId, outputs, ref]);
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
          await provider.cancelProvider.executeWithOptions({ ...onCancel, summary: `Cancel the request at ${via}` }, [input.provider, input.model, ref]);
        } catch (cancelErr) {
          log.warn('provider cancel failed', { jobId: input.jobId, error: failureMessage(cancelErr) });
        }
      }
      await db.failJob.executeWithOptions({ ...localDbStep, summary: 'Mark the job failed and refund it' }, [input.jobId, canceled ? 'canceled' : 'generation_failed', message]);
    });
    progress.phase = canceled ? 'canceled' : 'failed';
    setStatus('failed');
    if (canceled) throw err;
    throw ApplicationFailure.nonRetryable(message, failureTypes.generationFailed);
  }
}
