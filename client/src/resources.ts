// The client's list resources that are one request each: discovery (projects, actors, voices,
// models, queue) and the workspace's own records (audit log, budgets, balance). MediaGenClient exposes each
// as a property (`mg.projects.list()`, `mg.auditEvents.list()`, …).
import type {
  ActorsQuery,
  ApiKeyCreate,
  AuditEventsQuery,
  BalanceAlerts,
  Page,
  ProjectsQuery,
  QueueQuery,
  RequestOptions,
  SendOptions,
  VoicesQuery,
} from './types.js';
import { query } from './util.js';

interface Requester {
  request<T>(method: string, path: string, opts?: SendOptions): Promise<T>;
}

export const projectsApi = (c: Requester) => ({
  list: (q?: ProjectsQuery, o?: RequestOptions) => c.request<Page<'get_projects'>>('GET', `/v1/projects${query(q)}`, o),
});

export const actorsApi = (c: Requester) => ({
  list: (q?: ActorsQuery, o?: RequestOptions) => c.request<Page<'get_actors'>>('GET', `/v1/actors${query(q)}`, o),
});

export const voicesApi = (c: Requester) => ({
  list: (q?: VoicesQuery, o?: RequestOptions) => c.request<Page<'get_voices'>>('GET', `/v1/voices${query(q)}`, o),
});

export const modelsApi = (c: Requester) => ({
  /** GET /v1/models: every public model, what it accepts, its price and how this deployment serves it. */
  list: (o?: RequestOptions) => c.request<Page<'get_models'>>('GET', '/v1/models', o),
});

export const queueApi = (c: Requester) => ({
  /** GET /v1/queue: per model and priority, the jobs waiting (this workspace's and everyone's), the recent waits and the estimated wait of a new job. */
  get: (q?: QueueQuery, o?: RequestOptions) => c.request<Page<'get_queue'>>('GET', `/v1/queue${query(q)}`, o),
});

export const auditEventsApi = (c: Requester) => ({
  /** GET /v1/audit-events: the workspace's audit log, newest first (owner keys only: others get 403 owner_key_required). */
  list: (q?: AuditEventsQuery, o?: RequestOptions) => c.request<Page<'get_audit_events'>>('GET', `/v1/audit-events${query(q)}`, o),
});

export const budgetsApi = (c: Requester) => ({
  /** GET /v1/budgets: each budget of the workspace's keys and projects, its spend this period, what is left and when it resets. */
  list: (o?: RequestOptions) => c.request<Page<'get_budgets'>>('GET', '/v1/budgets', o),
});

export const apiKeysApi = (c: Requester) => ({
  /** POST /v1/api-keys (owner keys with the admin scope): mints a key with no more than the requesting key; `data.key` is its secret, shown once. */
  create: (body: ApiKeyCreate, o?: RequestOptions) => c.request<Page<'post_api_keys'>>('POST', '/v1/api-keys', { ...o, body }),
  /** GET /v1/api-keys (owner keys with the admin scope): every key of the workspace with its rules, never a secret. */
  list: (o?: RequestOptions) => c.request<Page<'get_api_keys'>>('GET', '/v1/api-keys', o),
  /** DELETE /v1/api-keys/{id} (owner keys with the admin scope): revokes the key on every gateway at once. */
  revoke: (id: string, o?: RequestOptions) => c.request<Page<'delete_api_keys_by_id'>>('DELETE', `/v1/api-keys/${encodeURIComponent(id)}`, o),
});

export const balanceApi = (c: Requester) => ({
  /** GET /v1/balance: available credits, those held by jobs in flight, granted and spent this month, and the low-balance thresholds. */
  get: (o?: RequestOptions) => c.request<Page<'get_balance'>>('GET', '/v1/balance', o),
  /** PUT /v1/balance/alerts: replaces the low-balance thresholds and the URL of their balance.low events (owner keys only; `{ thresholds: [] }` turns them off). */
  setAlerts: (alerts: BalanceAlerts, o?: RequestOptions) => c.request<Page<'put_balance_alerts'>>('PUT', '/v1/balance/alerts', { ...o, body: alerts }),
});
