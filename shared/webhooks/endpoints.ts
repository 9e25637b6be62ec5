// The events a webhook endpoint (POST /v1/webhook-endpoints) can subscribe to, and how a
// subscription matches an event; db/migrations/0110_webhook_endpoints.ts matches the same way in SQL
// (an exact name, or `<family>.*` for the event's first dot-separated part).
//
// Subscribable: every event the service writes to the webhook outbox — a job's moves to generating,
// completed and failed (the moves the per-request webhook_events name; a job's other statuses write
// no event), a pipeline's four events, a budget's threshold alert and the balance alert. An endpoint
// subscribed to one gets it for every job and pipeline of its workspace, whether or not it asked for
// a webhook_url. `webhook.ping` (POST /v1/webhook-endpoints/{id}/test) goes only to the endpoint tested.
import { webhookEventNames } from '../job-model.js';
import { pipelineWebhookEventNames } from '../pipelines.js';
import { BALANCE_LOW_EVENT } from '../balance.js';

export const BUDGET_THRESHOLD_EVENT_NAME = 'budget.threshold_reached';
export const PING_EVENT = 'webhook.ping';

export const subscribableEventNames: readonly string[] = [
  ...webhookEventNames.map((e) => `job.${e}`),
  ...pipelineWebhookEventNames,
  BUDGET_THRESHOLD_EVENT_NAME,
  BALANCE_LOW_EVENT,
];

export const eventTypePatterns = ['job.*', 'pipeline.*', 'budget.*', 'balance.*'] as const;

export const MAX_ENDPOINT_EVENT_TYPES = 20;
export const MAX_WEBHOOK_ENDPOINTS = 20;
/** The longest overlap a rotation may give the replaced secret: 7 days. */
export const MAX_ROTATION_OVERLAP_SECONDS = 7 * 24 * 3600;
export const DEFAULT_ROTATION_OVERLAP_SECONDS = 24 * 3600;

/** Whether an endpoint subscribed to `filters` gets an event of `type`. */
export function subscribes(filters: readonly string[], type: string): boolean {
  return filters.includes(type) || filters.includes(`${type.split('.')[0]}.*`);
}
