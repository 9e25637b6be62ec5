// Starting a webhook delivery workflow (workflows/webhook-delivery.ts): the worker's dispatcher
// starts an event's first delivery (workflow id = event id), the gateway a redelivery a customer
// asks for (`<event id>/redeliver-<n>`). Both with REJECT_DUPLICATE: one workflow per id, ever.
import type { Client } from '@temporalio/client';
import { TypedSearchAttributes, type Priority } from '@temporalio/common';
import type { Config } from '../shared/config.js';
import { searchAttributes, taskQueues, webhookDeliveryWorkflowType } from './definitions.js';
import type { WebhookDeliveryInput } from './webhook-delivery.js';

type DeliveryConfig = Pick<
  Config,
  | 'TASK_QUEUE_PREFIX'
  | 'WEBHOOK_TIMEOUT_MS'
  | 'WEBHOOK_RETRY_INITIAL_MS'
  | 'WEBHOOK_RETRY_MAX_INTERVAL_MS'
  | 'WEBHOOK_RETRY_FOR_MS'
  | 'WEBHOOK_RETRY_MAX_ATTEMPTS'
>;

interface DeliveryToStart {
  id: string;
  job_id: string | null;
  workspace_id: string;
  type: string;
  url: string;
  project_id: string | null;
}

/** The receiver's host, for the sealed delivery input (never the full URL, which may carry a token). */
export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'an invalid URL';
  }
}

export function redeliveryWorkflowId(deliveryId: string, n: number): string {
  return `${deliveryId}/redeliver-${n}`;
}

/** Starts the delivery workflow; throws WorkflowExecutionAlreadyStartedError when its id was used. */
export async function startWebhookDelivery(
  client: Client,
  config: DeliveryConfig,
  row: DeliveryToStart,
  opts: { workflowId: string; priority: Priority; redelivery?: number },
): Promise<void> {
  const input: WebhookDeliveryInput = {
    deliveryId: row.id,
    type: row.type,
    host: hostOf(row.url),
    taskQueuePrefix: config.TASK_QUEUE_PREFIX,
    attemptTimeoutMs: config.WEBHOOK_TIMEOUT_MS + 5_000,
    retry: {
      initialMs: config.WEBHOOK_RETRY_INITIAL_MS,
      maxIntervalMs: config.WEBHOOK_RETRY_MAX_INTERVAL_MS,
      forMs: config.WEBHOOK_RETRY_FOR_MS,
      ...(config.WEBHOOK_RETRY_MAX_ATTEMPTS > 0 ? { maxAttempts: config.WEBHOOK_RETRY_MAX_ATTEMPTS } : {}),
    },
  };
  const what = opts.redelivery ? `redelivery ${opts.redelivery} of webhook` : 'webhook';
  await client.workflow.start(webhookDeliveryWorkflowType, {
    workflowId: opts.workflowId,
    taskQueue: taskQueues(config.TASK_QUEUE_PREFIX).workflows,
    args: [input],
    priority: opts.priority,
    typedSearchAttributes: new TypedSearchAttributes([
      { key: searchAttributes.workspaceId, value: row.workspace_id },
      ...(row.project_id ? [{ key: searchAttributes.projectId, value: row.project_id }] : []),
    ]),
    // Ids and the event type only: the receiver's host is the customer's and stays in the sealed input.
    staticSummary: `${what} ${row.type}${row.job_id ? ` of ${row.job_id}` : ''}`,
    staticDetails: `Event ${row.id} (webhook-id)${row.job_id ? ` of job ${row.job_id}` : ''}, workspace ${row.workspace_id}.`,
    // One workflow per id, ever: a delivered (or given up) event is sent again only by a redelivery, under its own id.
    workflowIdReusePolicy: 'REJECT_DUPLICATE',
  });
}
