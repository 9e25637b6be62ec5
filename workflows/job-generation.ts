// The one generation workflow every job kind runs:
//   claim the job and build the provider request → a route with a speech step (talking actor) has
//   the script spoken on the speech provider's queue → submit (the reference made durable at once) and
//   check once → while the provider works: wait for it in awaitProvider steps, each polling it from
//   the worker until there is news (done, failed, its progress changed, the model's deadline) → one
//   check on the provider's queue stores the outputs → mark completed with them (charged its price).
// On failure or cancellation: mark failed and refund first, then cancel the provider request.
//
// Round trips: the Postgres steps are LOCAL activities, run by the workflow worker inside the
// workflow task that schedules them (no task queue hop, no extra workflow task); the provider
// steps stay on the provider's queue so its fleet caps its concurrency. A job the provider finishes
// within submit (the local renderer) costs two workflow tasks and one activity task.
// A provider poll that changes nothing the job shows costs no Temporal action: it happens inside
// an awaitProvider step, which heartbeats at most every 20 s (docs/operations/capacity.md).
//
// Operators: every database step claims the job for the run it belongs to (db/repos/jobs.ts), so a
// Reset to any workflow task of a history ends with a completed job charged once, whichever step the
// new run runs first; a provider step of a new run that finds no live request for the job (a
// revived job's request was canceled with its failure) answers `resubmit` and the workflow submits
// again. The model's deadline counts from the claim of the run, not from the replayed clock.
//
// Failover: a job created with two or more live routes (input.routes) first asks the job service
// which route its circuit breakers admit; when a provider step gives its route up (an outage past
// the failover budget, our account's quota or credentials at that provider), the job records the
// attempt (with that route's request, so a retried step still has it), hands the cancel of that
// request to the provider-cancel workflow without waiting for it, and submits on the next route.
// A route is given up only after the provider stayed unreachable past the failover budget, and never
// while the provider last reported the request running (activities/jobs.ts givesUp).
// The customer's own faults (content policy, invalid input) fail the job as on any route. The job
// keeps its create price whichever route serves it. Jobs are pinned to the build that started them (Worker Versioning), so a change of shape
// here needs no patch: the replay test holds histories of the current shape.
// Start bound (input.startWithinMs, JOB_START_WAIT_MS): the run timeout counts from the run's start,
// the model's deadline from its claim, so a run whose first step came after its start bound (a
// backlog on the workflows queue, no worker polling) fails its job before any request, refunded in
// full; one that started in time has its deadline and its outputs' storing within its run timeout.
// Customer's deadline (input.cancelAt, a create's deadline_seconds; job-deadline.ts): a job not
// submitted by then is never submitted (failed, refunded in full); one working then has its steps
// canceled and is failed with error code deadline_exceeded, refunded as its customer's cancel would
// be, its provider request canceled. A job without one runs exactly as before (no timer, no scope),
// so the saved histories replay unchanged.
// Reuse (input.reuse, docs/api/reuse.md): before its claim the run asks which job holds its
// request's key; it runs as below when it takes the key, waits (woken by a signal, or deciding again
// every REUSE_RECHECK_MS) while an identical job is in flight, and completes from that job's copied
// outputs once it completed. A job that holds the key wakes its followers when it ends. A run
// without reuse makes none of these steps, so its history is as before.
// Deterministic code only: activities are seen by type, time comes from the workflow clock.
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { JobIoActivities, JobProviderActivities, ProviderCheck, ProviderStepOptions } from './activity-types.js';
import type { ProviderRef, ProviderRequest } from '../shared/provider-types.js';
import type { JobOutput, RouteChoice } from '../shared/job-model.js';
import { failureTypes } from '../shared/failure-types.js';
import { searchAttributes, taskQueues, type GenerationInput, type GenerationProgress, type JobStatus } from './definitions.js';
import {
  AWAIT_PROVIDER_PATCH,
  awaitActivity,
  checkActivity,
  failureMessage,
  FIRST_POLL_MS,
  inputActivity,
  localDbStep,
  MAX_POLL_MS,
  progressQuery,
  PROVIDER_WAIT_WINDOW_MS,
  ROUTE_SLOT_GRANT_PATCH,
  routeSlotGrantedSignal,
  runClock,
  submitActivity,
} from './job-steps.js';
import { customerDeadline } from './job-deadline.js';
import { jobProviderCancels } from './job-provider-cancels.js';
import { jobReuse } from './job-reuse.js';

export { progressQuery } from './job-steps.js';

export async function runGeneration(input: GenerationInput): Promise<{ outputs: number }> {
  const queues = taskQueues(input.taskQueuePrefix);
  const onInputs = { ...inputActivity, taskQueue: queues.fetch };
  const db = proxyLocalActivities<JobIoActivities>(localDbStep);
  const inputs = proxyActivities<JobIoActivities>(onInputs);
  const provider = proxyActivities<JobProviderActivities>({ ...checkActivity, taskQueue: queues.provider(input.provider) });
  // The provider serving the job: its first route, or the one a failover moved it to.
  let serving = input.provider;
  const via = () => `${serving === 'local' ? 'the local renderer' : serving} (${input.model})`;
  const failover = input.routes !== undefined;
  // The customer's deadline (job-deadline.ts); none: no timer and no scope, the run as without it.
  const customer = customerDeadline(input.cancelAt);

  const progress: GenerationProgress = { phase: 'queued', attempt: workflowInfo().attempt, percent: null, queuePosition: null };
  setHandler(progressQuery, () => progress);
  // Grants of a route slot received (a counter: a grant that arrives before the wait starts counts).
  let slotGrants = 0;
  setHandler(routeSlotGrantedSignal, () => {
    slotGrants++;
  });
  const setStatus = (status: JobStatus) => upsertSearchAttributes([{ key: searchAttributes.jobStatus, value: status }]);
  const markCompleted = () => {
    progress.phase = 'completed';
    progress.percent = 100;
    setStatus('completed');
  };
  // Reuse (job-reuse.ts): set when the job was answered from an identical job's outputs, how many.
  let adopted: number | undefined;
  const reuse = jobReuse({ input, queues, db, progress });

  // The model's deadline, counted from this run's claim of the job (job-steps.ts runClock).
  const { startedAt, noteClaim, deadline, within } = runClock(input.deadlineSeconds);

  let ref: ProviderRef | undefined;
  // Set before the first submit: from then on a request may exist at the provider, whatever the step answered.
  let submitted = false;
  // Whether this run polls its provider in the worker (AWAIT_PROVIDER_PATCH), decided at its first wait.
  let pollInWorker: boolean | undefined;
  // The routes given up, for the job's error when none is left.
  const gaveUp: string[] = [];

  const { cancelRequestAt, cancelGivenUp, cancelRecordedLater } = jobProviderCancels({ input, queues, db, provider, serving: () => serving });

  /** Moves the job to the route the job service chose (its first, or the next after a give-up). */
  const useRoute = (route: RouteChoice, request: ProviderRequest): ProviderRequest => {
    if (route.provider !== serving) {
      serving = route.provider;
      upsertSearchAttributes([{ key: searchAttributes.servingProvider, value: serving }]);
    }
    return { ...request, providerModelId: route.provider_model_id };
  };

  /** A route's speech step, on the speech provider's queue: the route's request then carries the stored speech. */
  const speakFirst = async (request: ProviderRequest, speech: NonNullable<ProviderRequest['route']['speech']>): Promise<ProviderRequest> => {
    progress.phase = 'submitting';
    const spoken = await provider.speak.executeWithOptions(
      {
        ...submitActivity,
        ...within(),
        ...customer?.submitBound(),
        taskQueue: queues.provider(speech.provider),
        summary: `Speak the script with ${speech.provider} (${speech.modelId}), once: a retry finds the stored speech`,
      },
      customer ? [speech.provider, request, customer.at] : [speech.provider, request],
    );
    return { ...request, speech: spoken };
  };

  /** The job's work up to its outputs stored: what the customer's deadline cancels. */
  const work = async (): Promise<JobOutput[]> => {
    if (customer?.passedAtStart)
      throw ApplicationFailure.nonRetryable(`the job's deadline (${customer.at}) passed before it started`, failureTypes.jobDeadlinePassed);
    // The run timeout leaves the model's deadline and the time to store outputs only to a run that
    // starts within its start bound: one that waited longer never submits what it could not keep.
    // An operator's reset run (not its chain's first run) is exempt: it starts when the operator
    // says, long after the chain did, and its claim restarts the deadline.
    const info = workflowInfo();
    const waitedMs = startedAt - info.startTime.getTime();
    if (input.startWithinMs !== undefined && info.firstExecutionRunId === info.runId && waitedMs > input.startWithinMs)
      throw ApplicationFailure.nonRetryable(
        `the job waited ${Math.round(waitedMs / 1000)} s to start, longer than its ${Math.round(input.startWithinMs / 1000)} s: it was not submitted to a provider`,
        failureTypes.generationFailed,
      );
    if (input.reuse && (adopted = await reuse.followIdenticalJob()) !== undefined) return [];
    const started = await db.startGenerating.executeWithOptions(
      { ...localDbStep, summary: 'Claim the job for this run (re-charging it after a reset) and build the provider request' },
      [input.jobId],
    );
    noteClaim(started.claim);
    setStatus('generating');

    let request: ProviderRequest | null = started.request;
    if (!request) {
      progress.phase = 'fetching_inputs';
      request = await inputs.prepareProviderRequest.executeWithOptions(
        { ...onInputs, summary: 'Fetch the URL inputs into storage and build the provider request' },
        [input.jobId],
      );
    }
    if (failover) {
      // A route whose circuit breaker is open is skipped before anything is asked of it.
      const first = await db.routeJob.executeWithOptions({ ...localDbStep, summary: 'Choose the first route whose circuit breaker admits the job' }, [
        input.jobId,
        null,
      ]);
      noteClaim(first.claim);
      if (first.route) request = useRoute(first.route, request);
    }

    // A route with a speech step (a talking actor) has its script spoken first; the local renderer speaks for itself.
    if (request.route.speech && serving !== 'local') request = await speakFirst(request, request.route.speech);

    /** Submits on the serving route and checks until its outputs are stored (or it fails). */
    const generate = async (req: ProviderRequest): Promise<JobOutput[]> => {
      const providerQueue = queues.provider(serving);
      // A job waits for its route slot here, woken by the release that grants it one; runs recorded
      // without the patch wait by retrying their submit (RouteSlotBusy).
      const grant = patched(ROUTE_SLOT_GRANT_PATCH);
      const submitOpts: ProviderStepOptions = {
        ...(failover ? { failover: true } : {}),
        ...(customer ? { notAfter: customer.at } : {}),
        ...(grant ? { slotGrant: true } : {}),
      };
      const opts: [ProviderStepOptions] | [] = Object.keys(submitOpts).length > 0 ? [submitOpts] : [];
      // A check tells the step what the provider last said of the request: one running is never given up.
      const checkOpts = (reported: ProviderCheck['state']) => (failover ? ([{ failover: true, reported }] as const) : ([] as const));
      const submit = async (): Promise<ProviderCheck> => {
        progress.phase = 'submitting';
        // A scope canceled already schedules nothing.
        submitted ||= !CancellationScope.current().consideredCancelled;
        for (;;) {
          const grantsSeen = slotGrants;
          const answer = await provider.submitAndCheck.executeWithOptions(
            {
              ...submitActivity,
              ...within(),
              ...customer?.submitBound(),
              taskQueue: providerQueue,
              summary: `Submit to ${via()} (once: a retry polls the recorded request) and check it`,
            },
            [serving, req, ...opts],
          );
          if ('slotWait' in answer) {
            // Registered as a waiter of the route: the release that grants it a slot signals.
            const remaining = deadline() - Date.now();
            if (remaining <= 0) {
              throw ApplicationFailure.nonRetryable(
                `no slot of route ${answer.slotWait.route} was free within the model's ${input.deadlineSeconds} s`,
                failureTypes.deadlineExceeded,
              );
            }
            await condition(() => slotGrants > grantsSeen, Math.min(answer.slotWait.askAgainMs, remaining));
            continue;
          }
          const { ref: submittedRef, ...first } = answer;
          ref = submittedRef;
          noteClaim(first.claim);
          return first;
        }
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
        // A wait found the request done: a check on the provider's queue stores its outputs, deadline or not.
        const done = pollInWorker === true && check.state === 'succeeded';
        const remaining = deadline() - Date.now();
        if (!done && remaining <= 0) {
          throw ApplicationFailure.nonRetryable(`the provider did not finish within ${input.deadlineSeconds} s`, failureTypes.deadlineExceeded);
        }
        // The provider is polled in the worker, one step per piece of news; runs recorded without
        // the patch poll on a workflow timer and a checkProvider step each time, and so does the
        // local renderer (development and tests): its waits stay on the workflow's clock, which the
        // time-skipping test server skips, and no provider bills its polls.
        pollInWorker ??= serving !== 'local' && patched(AWAIT_PROVIDER_PATCH);
        if (pollInWorker && !done) {
          const seen = { state: check.state, percent: progress.percent, queuePosition: progress.queuePosition };
          const hint = check.nextPollMs !== undefined ? { nextPollMs: check.nextPollMs } : {};
          const { waitMs, ...next } = await provider.awaitProvider.executeWithOptions(
            { ...awaitActivity, ...within(), taskQueue: queues.providerWaits(serving), summary: `Wait for ${via()}, polling it from the worker` },
            [
              serving,
              input.jobId,
              input.model,
              ref!,
              { waitMs: wait, ...hint, maxWaitMs: MAX_POLL_MS, untilMs: deadline(), windowMs: PROVIDER_WAIT_WINDOW_MS, seen },
              ...checkOpts(check.state),
            ],
          );
          wait = waitMs;
          check = next;
        } else {
          if (!done) {
            await sleep(Math.min(check.nextPollMs ?? wait, remaining));
            wait = Math.min(Math.round(wait * 1.5), MAX_POLL_MS);
          }
          check = await provider.checkProvider.executeWithOptions(
            { ...checkActivity, ...within(), taskQueue: providerQueue, summary: `Check ${via()}; store the outputs when it is done` },
            [serving, input.jobId, input.model, ref!, ...checkOpts(check.state)],
          );
        }
        noteClaim(check.claim);
      }
      return check.stored;
    };

    for (;;) {
      try {
        return await generate(request);
      } catch (err) {
        const reason = failover ? failoverReason(err) : undefined;
        if (reason === undefined) throw err;
        // The route failed in a way another provider can fix: the job records it, forgets its
        // request (canceled here) and moves on; its price stays the one fixed at create.
        gaveUp.push(`${serving}: ${reason}`);
        const next = await db.routeJob.executeWithOptions({ ...localDbStep, summary: `Give up ${via()} and choose the next route` }, [
          input.jobId,
          { provider: serving, error: reason },
        ]);
        noteClaim(next.claim);
        // The row holds the reference of every request made (recorded before anything can fail): none, nothing to cancel.
        if (next.previousRef) await CancellationScope.nonCancellable(() => cancelGivenUp(serving, next.previousRef!));
        submitted = false;
        ref = undefined;
        if (!next.route)
          throw ApplicationFailure.nonRetryable(`every route of ${input.model} failed: ${gaveUp.join('; then ')}`, failureTypes.generationFailed);
        request = useRoute(next.route, request);
        progress.percent = null;
        progress.queuePosition = null;
      }
    }
  };

  try {
    const outputs = customer ? await customer.guard(work) : await work();
    // Finished before the deadline: its timer goes, nothing fails the job later.
    customer?.clear();
    if (adopted !== undefined) {
      markCompleted();
      return { outputs: adopted };
    }
    if (outputs.length === 0) throw ApplicationFailure.nonRetryable('the provider returned no output', failureTypes.generationFailed);
    await db.completeJob.executeWithOptions({ ...localDbStep, summary: 'Mark the job completed and settle its credits' }, [input.jobId, outputs, ref]);
    await reuse.wakeFollowers();
    markCompleted();
    return { outputs: outputs.length };
  } catch (err) {
    const expired = customer?.endedBy(err) ?? false;
    // The deadline kept the submit off: the provider has no request of this attempt.
    const keptOff = expired && customer!.keptOff(err);
    const canceled = !expired && isCancellation(err);
    const message = expired
      ? `the job's deadline (${customer!.at}) passed before it ${keptOff || !submitted ? 'was submitted to a provider' : 'completed; its provider request was canceled'}`
      : canceled
        ? 'the job was canceled'
        : failureMessage(err);
    // Clean-up runs even though the workflow is being canceled: the refund first, then the
    // provider cancel (bounded in time), so a provider outage never holds a customer's credits.
    const after = await CancellationScope.nonCancellable(async () => {
      const failed = await db.failJob.executeWithOptions({ ...localDbStep, summary: 'Mark the job failed and refund it' }, [
        input.jobId,
        expired ? 'deadline_exceeded' : canceled ? 'canceled' : 'generation_failed',
        message,
      ]);
      // Only the run that failed the job cancels its request: a job failed before (a reset run
      // replaying into a canceled job) had its request canceled by whoever failed it.
      // Past its deadline with no request known here (the submit was kept off, or canceled while
      // queued or running): whatever request the row records is canceled by a workflow of its own,
      // so this run ends at once however busy the provider's queue is.
      if (failed.failedHere && submitted && expired && ref === undefined) await cancelRecordedLater();
      else if (failed.failedHere && submitted) await cancelRequestAt(serving, ref);
      await reuse.wakeFollowers();
      return failed;
    });
    // The job completed after all (its completion committed before a lost workflow task, then a
    // cancel arrived): Temporal says what Postgres says, and the run completes.
    if (after.status === 'completed') {
      markCompleted();
      return { outputs: after.outputs };
    }
    progress.phase = canceled ? 'canceled' : 'failed';
    setStatus('failed');
    if (canceled) throw err;
    throw ApplicationFailure.nonRetryable(message, expired ? failureTypes.jobDeadlinePassed : failureTypes.generationFailed);
  }
}

/**
 * Why a provider step's failure lets the job move to another route: the step gave its route up
 * (failureTypes.providerFailover: an outage past the failover budget, our account's quota or
 * credentials). Undefined for everything else, the customer's faults among them.
 */
function failoverReason(err: unknown): string | undefined {
  if (!(err instanceof ActivityFailure)) return undefined;
  const cause = err.cause;
  return cause instanceof ApplicationFailure && cause.type === failureTypes.providerFailover ? cause.message : undefined;
}
