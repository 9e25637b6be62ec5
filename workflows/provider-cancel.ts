// Cancels the provider request of a job whose own workflow cannot (its run was terminated, which
// skips workflow code): started by the reconciler and the cancel route after they refunded the job,
// and by a job's own workflow for the request of a route it gave up (that request's reference given).
// The cancel runs on the provider's queue, where the provider's keys are, retried within its time
// bound; the job id keeps one such workflow per job at a time. Every start goes through the client
// (never a child of a pinned job run), so it begins on the deployment's current build, and its type
// is AUTO_UPGRADE: a run whose build goes away moves to the current one. Its code must therefore
// stay compatible across builds: any change of its commands goes under patched().
import { proxyActivities } from '@temporalio/workflow';
import type { JobProviderActivities } from './activity-types.js';
import { taskQueues, type ProviderCancelInput } from './definitions.js';
import { cancelActivity } from './job-steps.js';
import { setVersioningBehavior } from './versioning.js';

export async function cancelProviderRequest(input: ProviderCancelInput): Promise<void> {
  const provider = proxyActivities<JobProviderActivities>({ ...cancelActivity, taskQueue: taskQueues(input.taskQueuePrefix).provider(input.provider) });
  await provider.cancelProvider(input.provider, input.model, input.jobId, input.ref);
}

setVersioningBehavior('AUTO_UPGRADE', cancelProviderRequest);
