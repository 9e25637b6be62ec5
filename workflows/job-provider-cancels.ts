// The provider cancels of one job's run (job-generation.ts): the request of a route the job gave up, and
// whatever request the row records once the customer's deadline passed, each handed to a
// provider-cancel workflow of its own; and a cancel run in place, bounded, that never fails the job.
// Deterministic code only.
import { log, ParentClosePolicy, patched, startChild, type ActivityInterfaceFor } from '@temporalio/workflow';
import type { JobIoActivities, JobProviderActivities } from './activity-types.js';
import type { ProviderCancelHandoff, ProviderRef } from '../shared/provider-types.js';
import type { ProviderName } from '../shared/job-model.js';
import { PROVIDER_CANCEL_RUN_TIMEOUT_MS, providerCancelWorkflowType, type GenerationInput, type ProviderCancelInput, type taskQueues } from './definitions.js';
import { cancelActivity, failureMessage, localDbStep } from './job-steps.js';

/** The patch under which a run hands its provider cancels to a workflow started on the current build, not to a child. */
const CANCEL_ON_CURRENT_BUILD = 'provider-cancel-on-current-build';

/** Starting a provider cancel through the client: a Temporal outage is waited out for two minutes, then the cancel is left (logged). */
const handOffStep = { ...localDbStep, scheduleToCloseTimeout: '2m' } as const;

export function jobProviderCancels(ctx: {
  input: GenerationInput;
  queues: ReturnType<typeof taskQueues>;
  db: ActivityInterfaceFor<JobIoActivities>;
  provider: ActivityInterfaceFor<JobProviderActivities>;
  /** The provider serving the job now (a failover moves it). */
  serving: () => ProviderName;
}) {
  const { input, queues, db, provider, serving } = ctx;
  /** Cancels a request the job no longer uses (a given-up route's), bounded and never failing the job. */
  const cancelRequestAt = async (at: ProviderName, target: ProviderRef | undefined) => {
    try {
      await provider.cancelProvider.executeWithOptions(
        { ...cancelActivity, taskQueue: queues.provider(at), summary: `Cancel the request at ${at} (${input.model})` },
        [at, input.model, input.jobId, target],
      );
    } catch (cancelErr) {
      log.warn('provider cancel failed', { jobId: input.jobId, provider: at, error: failureMessage(cancelErr) });
    }
  };

  /**
   * Hands a provider cancel to a workflow of its own (durable, retried within its bound), not waited
   * for. A local activity starts it through the client, so it runs on the deployment's current
   * build: a child would be pinned to this run's build (a child of a pinned parent inherits its
   * version), whose workers may be gone when it runs. A run recorded without the patch replays its child start.
   */
  const handOffCancel = async (handoff: ProviderCancelHandoff): Promise<void> => {
    if (patched(CANCEL_ON_CURRENT_BUILD)) {
      await db.handOffProviderCancel.executeWithOptions({ ...handOffStep, summary: handoff.summary }, [input.jobId, handoff]);
      return;
    }
    const args: ProviderCancelInput = {
      jobId: input.jobId,
      provider: handoff.provider,
      model: input.model,
      taskQueuePrefix: input.taskQueuePrefix,
      ...(handoff.ref ? { ref: handoff.ref } : {}),
    };
    await startChild(providerCancelWorkflowType, {
      workflowId: handoff.workflowId,
      taskQueue: queues.workflows,
      args: [args],
      parentClosePolicy: ParentClosePolicy.ABANDON,
      workflowRunTimeout: PROVIDER_CANCEL_RUN_TIMEOUT_MS,
      staticSummary: handoff.summary,
    });
  };

  /**
   * Hands the cancel of a given-up route's request to its own workflow without waiting for it: the
   * job submits on its next route at once, however long the route it left takes to answer.
   */
  const cancelGivenUp = async (at: ProviderName, target: ProviderRef) => {
    try {
      await handOffCancel({
        workflowId: `${input.jobId}-given-up-${at}`,
        provider: at,
        ref: target,
        summary: `Cancel the given-up request at ${at} (${input.model})`,
      });
    } catch (err) {
      // Already started for this route (a reset run giving it up again): that one cancels it.
      log.warn('provider cancel of a given-up route not started', { jobId: input.jobId, provider: at, error: failureMessage(err) });
    }
  };

  /** Hands the cancel of whatever request the job row records to its own workflow, without waiting for it. */
  const cancelRecordedLater = async () => {
    try {
      await handOffCancel({
        workflowId: `${input.jobId}-deadline-cancel`,
        provider: serving(),
        summary: `Cancel the recorded request at ${serving()} (${input.model}), if any`,
      });
    } catch (err) {
      log.warn('provider cancel after the deadline not started', { jobId: input.jobId, provider: serving(), error: failureMessage(err) });
    }
  };

  return { cancelRequestAt, cancelGivenUp, cancelRecordedLater };
}
