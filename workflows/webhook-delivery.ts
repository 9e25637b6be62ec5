// webhookDelivery: delivers one job event (one row of the webhook outbox) to its receiver. Started
// by the worker's webhook dispatcher with workflow id = event id (= the `webhook-id` header), so an
// event is delivered by one workflow however often it is dispatched. It runs apart from the job's
// workflow: a receiver that never answers delays nothing and touches no credits.
// Each attempt is one `deliverWebhook` activity on the webhooks queue (summary: event type and id): the
// Web UI's pending activity shows the attempt count and the last failure (status code or timeout).
// That queue has its own fleet role, so receivers that hang hold none of the io queue's slots.
import { ApplicationFailure, proxyActivities, sleep } from '@temporalio/workflow';
import { taskQueues } from './definitions.js';
import { setVersioningBehavior } from './versioning.js';
import type { WebhookActivities, WebhookAttemptResult } from './activity-types.js';

export { webhookDeliveryWorkflowType } from './definitions.js';

export interface WebhookDeliveryInput {
  deliveryId: string;
  /** `job.completed`, …: for the activity summary. */
  type: string;
  /** The receiver's host (never the full URL, which may carry a token); kept out of summaries, which hold ids only. */
  host: string;
  taskQueuePrefix: string;
  /** Timeout of one attempt (the POST's own timeout plus a margin for signing and the row). */
  attemptTimeoutMs: number;
  /** maxAttempts (WEBHOOK_RETRY_MAX_ATTEMPTS): at most this many attempts in this run; absent or 0: only forMs bounds them. */
  retry: { initialMs: number; maxIntervalMs: number; forMs: number; maxAttempts?: number };
}

/** Literals of activities/webhooks.ts `webhookFailureTypes` (this sandboxed module imports no activity code). */
const nonRetryableWebhookFailureTypes = ['WebhookRefused', 'WebhookGone'];

/** The attempt number a failed attempt reports in its details (activities/webhooks.ts `fail`). */
function attemptOf(err: unknown): number {
  const details = (err as { cause?: { details?: unknown[] } } | undefined)?.cause?.details;
  const attempt = (details?.[0] as { attempt?: unknown } | undefined)?.attempt;
  return typeof attempt === 'number' ? attempt : 1;
}

export async function webhookDelivery(input: WebhookDeliveryInput): Promise<WebhookAttemptResult> {
  const onQueue = { taskQueue: taskQueues(input.taskQueuePrefix).webhooks, startToCloseTimeout: input.attemptTimeoutMs };
  const deliveries = proxyActivities<WebhookActivities>(onQueue);
  // Retries for about a day in all, then the event is given up. Time spent waiting for an open
  // circuit is part of that day, but the attempts skipped meanwhile are not attempts: the backoff
  // resumes where the last real attempt left it.
  const giveUpAt = Date.now() + input.retry.forMs;
  let attempts = 0;
  let message = 'retries ran out';
  for (;;) {
    const remainingMs = giveUpAt - Date.now();
    if (remainingMs <= 0) break;
    const maxAttempts = input.retry.maxAttempts ?? 0;
    if (maxAttempts > 0 && attempts >= maxAttempts) break;
    const options = {
      ...onQueue,
      scheduleToCloseTimeout: remainingMs,
      retry: {
        // After n failed attempts the next wait is initial × 2^n, as if one activity had run them all.
        initialInterval: Math.min(input.retry.initialMs * 2 ** attempts, input.retry.maxIntervalMs),
        backoffCoefficient: 2,
        maximumInterval: input.retry.maxIntervalMs,
        nonRetryableErrorTypes: nonRetryableWebhookFailureTypes,
        ...(maxAttempts > 0 ? { maximumAttempts: maxAttempts - attempts } : {}),
      },
      summary: `Deliver ${input.type} (event ${input.deliveryId})`,
    };
    let result: WebhookAttemptResult;
    try {
      result = await deliveries.deliverWebhook.executeWithOptions(options, [input.deliveryId]);
    } catch (err) {
      attempts += attemptOf(err);
      message = err instanceof Error ? ((err.cause as Error | undefined)?.message ?? err.message) : String(err);
      break;
    }
    if (result.circuitWaitMs === undefined) return { ...result, attempt: attempts + result.attempt };
    // This activity run's earlier attempts were real; the one that found the circuit open was not.
    attempts += result.attempt - 1;
    message = `the destination's circuit stayed open`;
    await sleep(Math.min(result.circuitWaitMs, Math.max(1, giveUpAt - Date.now())));
  }
  // Giving up is recorded whatever it takes (Postgres away for a while): a delivery left unfinished
  // would hold one of its workspace's in-flight places for good.
  await proxyActivities<WebhookActivities>({ taskQueue: onQueue.taskQueue, startToCloseTimeout: '30s', retry: { maximumInterval: '1m' } }).abandonWebhook(
    input.deliveryId,
    message,
    attempts,
  );
  throw ApplicationFailure.nonRetryable(`webhook ${input.deliveryId} not delivered: ${message}`, 'WebhookUndelivered');
}

// Auto-upgrade: a delivery may retry for a day (WEBHOOK_RETRY_FOR_MS), longer than a build should
// have to stay up, so it moves to the current build at its next workflow task, and its attempts
// (activity retries, no workflow task between them) run on the current build's webhooks fleet. Its
// commands (deliverWebhook, a timer and deliverWebhook again while the destination's circuit is
// open, abandonWebhook on failure) must stay replay-compatible across builds: change them with
// patched().
setVersioningBehavior('AUTO_UPGRADE', webhookDelivery);
