// `client.webhookEndpoints`: the workspace's webhook endpoints — the receivers it manages itself,
// each with the event types it subscribes to and its own signing secret (verify its deliveries
// with `verifyWebhook(secret, …)`). Changes need an owner key; the secret is shown by `create` and
// `rotateSecret` only.
import type { operations } from './openapi.js';
import type { RequestOptions, SendOptions } from './types.js';

type BodyOf<Op> = Op extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;
type DataOf<Op> = Op extends { responses: { 200: { content: { 'application/json': { data: infer D } } } } } ? D : never;

/** POST /v1/webhook-endpoints: url, event_types (exact names or job.*, pipeline.*, budget.*, balance.*), description, enabled. */
export type WebhookEndpointCreate = BodyOf<operations['post_webhook_endpoints']>;
/** POST /v1/webhook-endpoints/{id}: the fields to change. */
export type WebhookEndpointUpdate = BodyOf<operations['post_webhook_endpoints_by_id']>;
/** An endpoint as listed (never its secret). */
export type WebhookEndpoint = DataOf<operations['get_webhook_endpoints_by_id']>;
/** An endpoint with its signing secret: the answer of create and rotateSecret only. */
export type WebhookEndpointWithSecret = DataOf<operations['post_webhook_endpoints']>;
/** The test ping's delivery and event ids. */
export type WebhookEndpointPing = DataOf<operations['post_webhook_endpoints_by_id_test']>;

interface Requester {
  request<T>(method: string, path: string, opts?: SendOptions): Promise<T>;
}

export function webhookEndpointsApi(client: Requester) {
  const at = (id: string) => `/v1/webhook-endpoints/${encodeURIComponent(id)}`;
  const data = async <T>(method: string, path: string, o?: SendOptions) => (await client.request<{ data: T }>(method, path, o)).data;
  return {
    /** POST /v1/webhook-endpoints: the new endpoint with its secret (shown this once). */
    create: (body: WebhookEndpointCreate, o?: RequestOptions) => data<WebhookEndpointWithSecret>('POST', '/v1/webhook-endpoints', { ...o, body }),
    /** GET /v1/webhook-endpoints: every endpoint of the workspace, oldest first. */
    list: (o?: RequestOptions) => data<WebhookEndpoint[]>('GET', '/v1/webhook-endpoints', o),
    /** GET /v1/webhook-endpoints/{id}. */
    get: (id: string, o?: RequestOptions) => data<WebhookEndpoint>('GET', at(id), o),
    /** POST /v1/webhook-endpoints/{id}: changes url, event_types, description or enabled. */
    update: (id: string, body: WebhookEndpointUpdate, o?: RequestOptions) => data<WebhookEndpoint>('POST', at(id), { ...o, body }),
    /** DELETE /v1/webhook-endpoints/{id}. */
    delete: (id: string, o?: RequestOptions) => data<{ id: string; deleted: true }>('DELETE', at(id), o),
    /** POST /v1/webhook-endpoints/{id}/rotate-secret: a new secret; the old one keeps signing for `overlap_seconds` (default a day). */
    rotateSecret: (id: string, body: { overlap_seconds?: number } = {}, o?: RequestOptions) =>
      data<WebhookEndpointWithSecret>('POST', `${at(id)}/rotate-secret`, { ...o, body }),
    /** POST /v1/webhook-endpoints/{id}/test: a signed webhook.ping, delivered like any event. */
    test: (id: string, o?: RequestOptions) => data<WebhookEndpointPing>('POST', `${at(id)}/test`, { ...o, body: {} }),
  };
}
