// The one generation pipeline every job kind runs:
//   claim the job and build the provider request → submit (the reference made durable at once) and
//   check once → while the provider works: check again on durable timers until done, failed or the
//   model's deadline → mark completed with the outputs the final check stored (charged its price).
// On failure or cancellation: mark failed and refund first, then cancel the provider request.
//
// Round trips: the Postgres steps are LOCAL activities, run by the workflow worker inside the
// workflow task that schedules them (no task queue hop, no extra workflow task); the provider
// steps stay on the provider's queue so its fleet caps its concurrency. A job the provider finishes
// within submit (the local renderer) costs two workflow tasks and one activity task.
//
// Operators: every database step claims the job for the run it belongs to (db/repos/jobs.ts), so a
// Reset to any workflow task of a history ends with a completed job charged once, whichever step the
// new run runs first; a provider step of a new run that finds no live request for the job (a
// revived job's request was canceled with its failure) answers `resubmit` and the pipeline submits
// again. Jobs are pinned to the build that started them (Worker Versioning), so a change of shape
// here needs no patch: the replay test holds histories of the current shape.
// Deterministic code only: activities are seen by type, time comes from the workflow clock.
import { ApplicationFailure, CancellationScope, isCancellation, log, proxyActivities, proxyLocalActivities, setHandler, sleep, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { JobIoActivities, JobProviderActivities, ProviderCheck } from './activity-types.js';
import type { ProviderRef, ProviderRequest } from '../shared/provider-types.js';
import { failureTypes } from '../shared/failure-types.js';
import { searchAttributes, taskQueues, type GenerationInput, type GenerationProgress, type JobStatus } from './definitions.js';
import { cancelActivity, checkActivity, failureMessage, FIRST_POLL_MS, inputActivity, localDbStep, MAX_POLL_MS, progressQuery, providerStepWithin, submitActivity } from './pipeline-common.js';

export { progressQuery } from './pipeline-common.js';

export async function runGeneration(input: GenerationInput): Promise<{ outputs: number }> {
  const queues = taskQueues(input.taskQueuePrefix);
  const providerQueue = queues.provider(input.provider);
  const onInputs = { ...inputActivity, taskQueue: queues.fetch };
  const onCancel = { ...cancelActivity, taskQueue: providerQueue };
  const db = proxyLocalActivities<JobIoActivities>(localDbStep);
  const inputs = proxyActivities<JobIoActivities>(onInputs);
  const provider = proxyActivities<JobProviderActivities>({ ...checkActivity, taskQueue: providerQueue });
  const via = `${input.provider === 'local' ? 'the local renderer' : input.provider} (${input.model})`;

  const progress: GenerationProgress = { phase: 'queued', attempt: workflowInfo().attempt, percent: null, queuePosition: null };
  setHandler(progressQuery, () => progress);
  const setStatus = (status: JobStatus) => upsertSearchAttributes([{ key: searchAttributes.jobStatus, value: status }]);

  const startedAt = Date.now(); // workflow clock: deterministic, and resets restart it
  const deadline = startedAt + input.deadlineSeconds * 1000;
  // Provider steps retry for as long as the model's deadline leaves (plus the time to store the
  // outputs), not for a number of attempts: an outage of the provider's status endpoint is waited out.
  const within = () => providerStepWithin(deadline - Date.now());

  let ref: ProviderRef | undefined;
  // Set before the first submit: from then on a request may exist at the provider, whatever the step answered.
  let submitted = false;

  try {
    const started = await db.startGenerating.executeWithOptions({ ...localDbStep, summary: 'Claim the job for this run (re-charging it after a reset) and build the provider request' }, [input.jobId]);
    setStatus('generating');

    let request: ProviderRequest | null = started.request;
    if (!request) {
      progress.phase = 'fetching_inputs';
      request = await inputs.prepareProviderRequest.executeWithOptions({ ...onInputs, summary: 'Fetch the URL inputs into storage and build the provider request' }, [input.jobId]);
    }
    const submit = async (): Promise<ProviderCheck> => {
      progress.phase = 'submitting';
      // A scope canceled already schedules nothing.
      submitted ||= !CancellationScope.current().consideredCancelled;
      const { ref: submittedRef, ...first } = await provider.submitAndCheck.executeWithOptions(
        { ...submitActivity, ...within(), taskQueue: providerQueue, summary: `Submit to ${via} (once: a retry polls the recorded request) and check it` },
        [input.provider, request!],
      );
      ref = submittedRef;
      return first;
    };

    let check = await submit();
    let wait = FIRST_POLL_MS;
    if (!check.stored) progress.phase = 'generating';
    while (!check.stored) {
      if (check.resubmit) {
        check = await submit();
        continue;
      }
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
      check = await provider.checkProvider.executeWithOptions(
        { ...checkActivity, ...within(), taskQueue: providerQueue, summary: `Check ${via}; store the outputs when it is done` },
        [input.provider, input.jobId, input.model, ref!],
      );
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
    // Clean-up runs even though the workflow is being canceled: the refund first, then the
    // provider cancel (bounded in time), so a provider outage never holds a customer's credits.
    const after = await CancellationScope.nonCancellable(async () => {
      const failed = await db.failJob.executeWithOptions({ ...localDbStep, summary: 'Mark the job failed and refund it' }, [input.jobId, canceled ? 'canceled' : 'generation_failed', message]);
      // Only the run that failed the job cancels its request: a job failed before (a reset run
      // replaying into a canceled job) had its request canceled by whoever failed it.
      if (failed.failedHere && submitted) {
        try {
          await provider.cancelProvider.executeWithOptions({ ...onCancel, summary: `Cancel the request at ${via}` }, [input.provider, input.model, input.jobId, ref]);
        } catch (cancelErr) {
          log.warn('provider cancel failed', { jobId: input.jobId, error: failureMessage(cancelErr) });
        }
      }
      return failed;
    });
    // The job completed after all (its completion committed before a lost workflow task, then a
    // cancel arrived): Temporal says what Postgres says, and the run completes.
    if (after.status === 'completed') {
      progress.phase = 'completed';
      progress.percent = 100;
      setStatus('completed');
      return { outputs: after.outputs };
    }
    progress.phase = canceled ? 'canceled' : 'failed';
    setStatus('failed');
    if (canceled) throw err;
    throw ApplicationFailure.nonRetryable(message, failureTypes.generationFailed);
  }
}
