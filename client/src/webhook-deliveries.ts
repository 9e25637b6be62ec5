// `client.webhookDeliveries`: the workspace's webhook events with every attempt, and redelivery of a
// finished one (same webhook-id, signed afresh; verify it with `verifyWebhook` as any delivery).
import type { operations } from './openapi.js';
import type { Page, RequestOptions, SendOptions } from './types.js';
import { query } from './util.js';

type QueryOf<Op> = Op extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

/** GET /v1/webhook-deliveries: filters (job_id, event, status) and paging. */
export type WebhookDeliveriesQuery = QueryOf<operations['get_webhook_deliveries']>;
/** One webhook event with its attempts (status code, error class, latency, next retry). */
export type WebhookDelivery = Page<'get_webhook_deliveries'>['data'][number];

interface Requester {
  request<T>(method: string, path: string, opts?: SendOptions): Promise<T>;
}

export function webhookDeliveriesApi(client: Requester) {
  const at = (id: string) => `/v1/webhook-deliveries/${encodeURIComponent(id)}`;
  return {
    /** GET /v1/webhook-deliveries: newest first, `next_cursor` for the next page. */
    list: (q?: WebhookDeliveriesQuery, o?: RequestOptions) => client.request<Page<'get_webhook_deliveries'>>('GET', `/v1/webhook-deliveries${query(q)}`, o),
    /** GET /v1/webhook-deliveries/{id}: one event (its id is the webhook-id). */
    get: async (id: string, o?: RequestOptions) => (await client.request<{ data: WebhookDelivery }>('GET', at(id), o)).data,
    /** POST /v1/webhook-deliveries/{id}/redeliver: sends a finished event again; 409 delivery_in_flight while it is not finished. */
    redeliver: async (id: string, o?: RequestOptions) => (await client.request<{ data: WebhookDelivery }>('POST', `${at(id)}/redeliver`, o)).data,
  };
}
