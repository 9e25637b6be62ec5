// Webhooks on the gateway side: the `webhook_url` / `webhook_events` fields every create endpoint
// accepts, their checks, and the events the OpenAPI document lists under `webhooks` (the record's
// webhook fields are shared/job-record.ts). Delivery itself runs in the workers (activities/webhooks.ts).
import { z } from 'zod';
import type { Config } from '../shared/config.js';
import type { Queryable } from '../db/index.js';
import { webhookEventNames, type WebhookEventName } from '../shared/job-model.js';
import { hasActiveWebhookSecret } from '../db/repos/webhooks.js';
import { FetchError } from '../shared/fetch-remote.js';
import { checkWebhookUrl } from '../shared/webhooks/target.js';
import { budgetThresholdEventSchema } from '../shared/budgets.js';
import { BALANCE_LOW_EVENT, balanceLowEventSchema } from '../shared/balance.js';
import { pipelineEventDataSchema, pipelineWebhookEventNames, type PipelineWebhookEventName } from '../shared/pipelines.js';
import { BATCH_COMPLETED_EVENT, batchEventDataSchema } from '../shared/batches.js';
import { ApiError } from './errors.js';
import type { converter } from './openapi-schema.js';

const DEFAULT_EVENTS: WebhookEventName[] = ['completed', 'failed'];

// The create bodies' webhook fields live with the kinds (kinds/define.ts); re-exported for the gateway.
export { webhookFieldRules, webhookRequestFields } from '../kinds/define.js';

interface RequestedWebhook {
  url: string;
  events: WebhookEventName[];
}

/**
 * The webhook a create asked for (null: none), checked: the URL rules of upload-from-url (the
 * delivery checks the resolved addresses again), and a signing secret the workspace already has —
 * a delivery nobody can verify helps no one.
 */
export async function requestedWebhook(
  db: Queryable,
  workspaceId: string,
  body: { webhook_url?: string; webhook_events?: WebhookEventName[] },
  config: Pick<Config, 'WEBHOOK_ALLOW_LOOPBACK'>,
): Promise<RequestedWebhook | null> {
  if (body.webhook_url === undefined) {
    if (body.webhook_events !== undefined) throw new ApiError(400, 'invalid_request', 'webhook_events: needs webhook_url');
    return null;
  }
  try {
    checkWebhookUrl(body.webhook_url, config.WEBHOOK_ALLOW_LOOPBACK);
  } catch (err) {
    if (err instanceof FetchError) throw new ApiError(400, 'invalid_request', `webhook_url: ${err.message}`);
    throw err;
  }
  if (!(await hasActiveWebhookSecret(db, workspaceId))) {
    throw new ApiError(
      400,
      'invalid_request',
      'webhook_url: this workspace has no webhook signing secret yet; an owner creates one with the admin CLI (webhook secret rotate)',
    );
  }
  const events = body.webhook_events ? webhookEventNames.filter((e) => body.webhook_events!.includes(e)) : DEFAULT_EVENTS;
  return { url: body.webhook_url, events };
}

/**
 * The document's `webhooks`: one entry per event, its body `{ type, data }`: for the job events data
 * is any job record (the same schemas GET answers with), for a budget alert the budget's spend.
 */
export function webhookEventDocs(records: readonly z.ZodType[]): { name: string; summary: string; description?: string; payload: z.ZodType }[] {
  const data = z
    .union(records as [z.ZodType, z.ZodType, ...z.ZodType[]])
    .describe('the job record, as GET /v1/{kind}/{id} answered at the moment of the event');
  const summaries: Record<WebhookEventName, string> = {
    generating: 'The job started (or, after an operator reset, started again)',
    completed: 'The job completed; its URL endpoint now answers',
    failed: 'The job failed or was canceled',
  };
  const jobEvents = webhookEventNames.map((e) => ({
    name: `job.${e}`,
    summary: summaries[e],
    ...(e === 'failed' ? { description: 'error.code is generation_failed or canceled; the job was refunded.' } : {}),
    payload: z.strictObject({ type: z.literal(`job.${e}`), data }),
  }));
  const budgetAlert = {
    name: 'budget.threshold_reached',
    summary: "A budget's spend reached one of its alert thresholds",
    description: "POSTed to the budget's alert URL (set by the operator), once per threshold and period; data is the budget's spend, not a job.",
    payload: budgetThresholdEventSchema,
  };
  const balanceLow = {
    name: BALANCE_LOW_EVENT,
    summary: 'A charge took the available credits below a low-balance threshold',
    description:
      'POSTed to the URL set with PUT /v1/balance/alerts, once per crossing: a charge that takes the available credits from at or above the threshold to below it. ' +
      'A grant or refund back to at or above it arms it again. data is the balance, not a job.',
    payload: balanceLowEventSchema,
  };
  const pipelineSummaries: Record<PipelineWebhookEventName, string> = {
    'pipeline.completed': 'A pipeline completed: every step did',
    'pipeline.failed': 'A pipeline failed at a step, or was canceled (error.code canceled)',
    'pipeline.step.completed': "A pipeline's step completed; its outputs are checkpointed",
    'pipeline.step.failed': "A pipeline's step failed (its job was refunded as any job is)",
  };
  const pipelineEvents = pipelineWebhookEventNames.map((e) => ({
    name: e,
    summary: pipelineSummaries[e],
    description: "POSTed to the pipeline's webhook_url when asked for in its webhook_events (default pipeline.completed and pipeline.failed).",
    payload: z.strictObject({ type: z.literal(e), data: pipelineEventDataSchema }),
  }));
  const batchCompleted = {
    name: BATCH_COMPLETED_EVENT,
    summary: 'Every item of a batch ended; its manifest is ready',
    description:
      "POSTed to the batch's webhook_url once each time every item ended: status completed, or canceled when a cancel stopped it (a retry of failed items that ends again sends one more).",
    payload: z.strictObject({ type: z.literal(BATCH_COMPLETED_EVENT), data: batchEventDataSchema }),
  };
  return [...jobEvents, budgetAlert, balanceLow, ...pipelineEvents, batchCompleted];
}

/** The `webhooks` of the document: each event a POST to the job's webhook_url (or a budget's alert URL), signed (Standard Webhooks). */
export function webhookDocument(events: ReturnType<typeof webhookEventDocs>, convert: ReturnType<typeof converter>): Record<string, unknown> {
  const header = (name: string, description: string) => ({ name, in: 'header', required: true, description, schema: { type: 'string' } });
  const parameters = [
    header('webhook-id', 'the event id: the same on every retry of this event, so receivers can drop duplicates'),
    header('webhook-timestamp', 'unix seconds of this attempt; refuse deliveries more than 5 minutes off'),
    header(
      'webhook-signature',
      'space-separated `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<raw body>">`, one per active secret of the workspace (two during a rotation)',
    ),
  ];
  return Object.fromEntries(
    events.map((e) => [
      e.name,
      {
        post: {
          summary: e.summary,
          ...(e.description ? { description: e.description } : {}),
          parameters,
          requestBody: { required: true, content: { 'application/json': { schema: convert(e.payload, 'output') } } },
          responses: { '200': { description: 'Any 2xx answer (within 10 s) counts as delivered; anything else is retried with backoff for about a day' } },
        },
      },
    ]),
  );
}
