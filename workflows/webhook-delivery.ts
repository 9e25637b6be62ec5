// webhookDelivery: delivers one job event (one row of the webhook outbox) to its receiver. Started
// by the worker's webhook dispatcher with workflow id = event id (= the `webhook-id` header), so an
// event is delivered by one workflow however often it is dispatched. It runs apart from the job's
// workflow: a receiver that never answers delays nothing and touches no credits.
// Each attempt is one `deliverWebhook` activity on the webhooks queue (summary: event and host): the
// Web UI's pending activity shows the attempt count and the last failure (status code or timeout).
// That queue has its own fleet role, so receivers that hang hold none of the io queue's slots.
import { ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import { taskQueues } from './definitions.js';
import { setVersioningBehavior } from './versioning.js';
import type { WebhookActivities } from './activity-types.js';

export const webhookDeliveryWorkflowType = 'webhookDelivery';

export interface WebhookDeliveryInput {
  deliveryId: string;
  /** `job.completed`, …: for the activity summary. */
  type: string;
  /** The receiver's host (never the full URL, which may carry a token): for the summary. */
  host: string;
  taskQueuePrefix: string;
  /** Timeout of one attempt (the POST's own timeout plus a margin for signing and the row). */
  attemptTimeoutMs: number;
  retry: { initialMs: number; maxIntervalMs: number; forMs: number };
}

/** Literals of activities/webhooks.ts `webhookFailureTypes` (this sandboxed module imports no activity code). */
const nonRetryableWebhookFailureTypes = ['WebhookRefused', 'WebhookGone'];

export async function webhookDelivery(input: WebhookDeliveryInput): Promise<{ status: number; attempt: number; superseded?: boolean }> {
  const onQueue = {
    taskQueue: taskQueues(input.taskQueuePrefix).webhooks,
    startToCloseTimeout: input.attemptTimeoutMs,
    // Retries for about a day in all, then the event is given up.
    scheduleToCloseTimeout: input.retry.forMs,
    retry: {
      initialInterval: input.retry.initialMs,
      backoffCoefficient: 2,
      maximumInterval: input.retry.maxIntervalMs,
      nonRetryableErrorTypes: nonRetryableWebhookFailureTypes,
    },
  };
  const deliveries = proxyActivities<WebhookActivities>(onQueue);
  try {
    return await deliveries.deliverWebhook.executeWithOptions({ ...onQueue, summary: `Deliver ${input.type} to ${input.host}` }, [input.deliveryId]);
  } catch (err) {
    const message = err instanceof Error ? ((err.cause as Error | undefined)?.message ?? err.message) : String(err);
    await proxyActivities<WebhookActivities>({ taskQueue: onQueue.taskQueue, startToCloseTimeout: '30s', retry: { maximumAttempts: 20 } }).abandonWebhook(input.deliveryId, message);
    throw ApplicationFailure.nonRetryable(`webhook ${input.deliveryId} not delivered: ${message}`, 'WebhookUndelivered');
  }
}

// Auto-upgrade: a delivery may retry for a day (WEBHOOK_RETRY_FOR_MS), longer than a build should
// have to stay up, so it moves to the current build at its next workflow task, and its attempts
// (activity retries, no workflow task between them) run on the current build's webhooks fleet. It has
// only two workflow tasks (start, and the activity's end), and its commands (deliverWebhook, then
// abandonWebhook on failure) must stay replay-compatible across builds: change them with patched().
setVersioningBehavior('AUTO_UPGRADE', webhookDelivery);
