// Verifying the gateway's webhook deliveries (Standard Webhooks: webhook-id, webhook-timestamp,
// webhook-signature, HMAC-SHA256 with the workspace's signing secret). Import from
// `@mediagen/client/webhooks`; works in Node and browsers/edge runtimes.
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { MediaGenError } from './errors.js';
import type { webhooks } from './openapi.js';

export interface WebhookEvent<T = unknown> {
  /** e.g. `job.completed`, `job.failed`, `job.generating`, `budget.threshold_reached`, `pipeline.completed` */
  type: string;
  /** The job record, as its status endpoint returns it (for a budget alert: the budget's spend; for a pipeline event: the pipeline and step). */
  data: T;
}

/** Any event as the gateway's OpenAPI document (`webhooks`) describes it: `type` tells which. */
export type TypedWebhookEvent = { [K in keyof webhooks]: webhooks[K]['post']['requestBody']['content']['application/json'] }[keyof webhooks];

/** A job event (`job.generating`, `job.completed`, `job.failed`): data is the job record. */
export type JobWebhookEvent = Extract<TypedWebhookEvent, { type: `job.${string}` }>;

/** A budget alert (`budget.threshold_reached`), sent to the budget's alert URL: data is the budget's spend. */
export type BudgetWebhookEvent = Extract<TypedWebhookEvent, { type: 'budget.threshold_reached' }>;

/** A low-balance alert (`balance.low`), sent to the URL set with PUT /v1/balance/alerts: data is the balance after the charge that crossed the threshold. */
export type BalanceWebhookEvent = Extract<TypedWebhookEvent, { type: 'balance.low' }>;

/** A pipeline event (`pipeline.completed`, `pipeline.failed`, `pipeline.step.completed`, `pipeline.step.failed`): data is the pipeline and, for a step event, the step. */
export type PipelineWebhookEvent = Extract<TypedWebhookEvent, { type: `pipeline.${string}` }>;

/**
 * Checks a delivery's signature and timestamp (5 minutes tolerance) against the workspace's signing
 * secret (`whsec_…`) and returns the parsed event; throws MediaGenError `invalid_signature`
 * otherwise. Pass the raw body exactly as received, before any JSON parsing.
 */
export function verifyWebhook<T = unknown>(secret: string, rawBody: string, headers: Headers | Record<string, string | string[] | undefined>): WebhookEvent<T> {
  const get = (name: string): string => {
    if (headers instanceof Headers) return headers.get(name) ?? '';
    const v = headers[name] ?? headers[name.toLowerCase()];
    return Array.isArray(v) ? (v[0] ?? '') : (v ?? '');
  };
  try {
    return new Webhook(secret).verify(rawBody, {
      'webhook-id': get('webhook-id'),
      'webhook-timestamp': get('webhook-timestamp'),
      'webhook-signature': get('webhook-signature'),
    }) as WebhookEvent<T>;
  } catch (cause) {
    if (cause instanceof WebhookVerificationError)
      throw new MediaGenError({ status: 0, code: 'invalid_signature', message: `webhook verification failed: ${cause.message}`, cause });
    throw cause;
  }
}
