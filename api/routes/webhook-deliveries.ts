// Webhook deliveries a customer can inspect and replay (extension):
// - GET /v1/webhook-deliveries: the workspace's events, newest first, with each attempt (status
//   code, error class, latency, next retry); filters job_id, event, status; keyset pagination
//   (`cursor` = `whd.<created_at µs>.<id>`, top-level `next_cursor`).
// - GET /v1/webhook-deliveries/{id}: one event (its id is the `webhook-id` header).
// - POST /v1/webhook-deliveries/{id}/redeliver: sends a finished event again, signed afresh (a new
//   timestamp) with the same `webhook-id`, through a delivery workflow of its own
//   (`<id>/redeliver-<n>`); its requests are further attempts of the same event. Rate class
//   `redeliver`; 409 delivery_in_flight while the event is not finished.
// The receiver's URL is shown without user info, query or token-like path segments
// (shared/webhooks/attempts.ts redactedWebhookUrl): the URL a customer gave may carry a credential.
import { z } from 'zod';
import { DEFAULT_PAGE_LIMIT, pageLimitQuery } from '../validate.js';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { AppDeps } from '../deps.js';
import { authOf, type Auth } from '../auth.js';
import { Endpoints } from '../endpoint.js';
import { ApiError, invalidRequest, notFound } from '../errors.js';
import * as repo from '../../db/repos/webhook-deliveries.js';
import { getDelivery } from '../../db/repos/webhooks.js';
import { jobShares } from '../../db/repos/fair-share.js';
import type { WebhookAttempt } from '../../db/schema.js';
import { attemptErrorClasses, deliveryStatuses, deliveryStatusOf, redactedWebhookUrl } from '../../shared/webhooks/attempts.js';
import { taskPriority } from '../../shared/task-priority.js';
import { hostOf, redeliveryWorkflowId, startWebhookDelivery } from '../../workflows/webhook-client.js';

const CURSOR_REFUSED = 'not a cursor returned by this endpoint';
const cursorPattern = /^whd\.([0-9]{1,16})\.([A-Za-z0-9_-]{1,200})$/;
const deliveryId = /^whk_[A-Za-z0-9_-]{1,200}$/;

const timestamp = z.string().describe('ISO 8601');

const attemptSchema = z.strictObject({
  number: z.number().int().describe('1, 2, …: across the first delivery and every redelivery'),
  started_at: timestamp,
  status_code: z.number().int().nullable().describe("the receiver's HTTP status; null when none came"),
  error_class: z
    .enum(attemptErrorClasses)
    .nullable()
    .describe(
      'null: delivered (2xx). timeout: no answer in time; connection: the connection failed; refused: the URL was refused before sending; no_secret: the workspace had no usable signing secret; http_4xx / http_5xx / http_other: the answer. Null too while the attempt is under way.',
    ),
  latency_ms: z.number().int().nullable().describe('from sending the request to its answer or failure; null when nothing was sent'),
  next_retry_at: timestamp.nullable().describe('when the retry after this attempt is due; null when none was scheduled'),
});

const deliverySchema = z.strictObject({
  id: z.string().describe("the delivery's id: the event id for a per-request webhook_url, `<event id>_<endpoint id>` for an endpoint's"),
  event_id: z
    .string()
    .describe('the event it delivers: the `webhook-id` header of every request, the same for the per-request URL and every endpoint that gets the event'),
  endpoint_id: z.string().nullable().describe('the webhook endpoint it goes to (wep_…); null: a per-request webhook_url or an alert URL'),
  job_id: z.string().nullable().describe('the job the event is about; null for an event about no job (a budget alert)'),
  event: z.string().describe('the event type, e.g. job.completed'),
  url: z.string().describe("the receiver's URL without user info, query or token-like path segments"),
  host: z.string().describe("the receiver's host (and port)"),
  status: z
    .enum(deliveryStatuses)
    .describe('pending: not finished (waiting, retrying or redelivering); delivered; failed: given up; superseded: made moot by a later event of its job'),
  attempts: z.array(attemptSchema).describe('each request sent, oldest first; waits for an open circuit are not attempts'),
  next_retry_at: timestamp.nullable().describe('when the next attempt is due; null when none is scheduled'),
  circuit_open_until: timestamp
    .nullable()
    .describe("set while the delivery waits for its destination's circuit breaker (repeated failures there): nothing is sent until then"),
  redeliveries: z.number().int().describe('redeliveries asked for'),
  created_at: timestamp,
  delivered_at: timestamp.nullable(),
  failed_at: timestamp.nullable(),
});

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function presentAttempt(a: WebhookAttempt): z.infer<typeof attemptSchema> {
  return {
    number: a.number,
    started_at: a.started_at.toISOString(),
    status_code: a.status_code,
    error_class: a.error_class as z.infer<typeof attemptSchema>['error_class'],
    latency_ms: a.latency_ms,
    next_retry_at: iso(a.next_retry_at),
  };
}

function presentDelivery(r: repo.DeliveryRow, attempts: WebhookAttempt[]): z.infer<typeof deliverySchema> {
  const status = deliveryStatusOf(r);
  return {
    id: r.id,
    event_id: r.event_id,
    endpoint_id: r.endpoint_id,
    job_id: r.job_id,
    event: r.type,
    url: redactedWebhookUrl(r.url),
    host: hostOf(r.url),
    status,
    attempts: attempts.map(presentAttempt),
    next_retry_at: status === 'pending' ? iso(r.next_retry_at) : null,
    circuit_open_until: status === 'pending' ? iso(r.circuit_open_until) : null,
    redeliveries: r.redeliveries,
    created_at: r.created_at.toISOString(),
    delivered_at: iso(r.delivered_at),
    failed_at: iso(r.failed_at),
  };
}

const listQuery = z.object({
  limit: pageLimitQuery(),
  cursor: z.string().regex(cursorPattern, CURSOR_REFUSED).optional().describe('the next_cursor of the previous page'),
  job_id: z.string().min(1).max(200).optional().describe("only this job's events"),
  endpoint_id: z.string().min(1).max(200).optional().describe("only this webhook endpoint's deliveries"),
  event: z
    .string()
    .regex(/^[a-z_]{1,40}(\.[a-z_]{1,40}){1,2}$/, 'an event type, e.g. job.completed')
    .optional()
    .describe('only events of this type, e.g. job.completed'),
  status: z.enum(deliveryStatuses).optional().describe('only events in this status'),
});

async function loadOne(deps: AppDeps, workspaceId: string, id: string) {
  const row = deliveryId.test(id) ? await repo.getWorkspaceDelivery(deps.db, workspaceId, id) : undefined;
  if (!row) throw notFound(`webhook delivery ${id.slice(0, 200)}`);
  const attempts = await repo.attemptsOf(deps.db, [row.id]);
  return presentDelivery(row, attempts.get(row.id)!);
}

export const webhookDeliveryEndpoints = new Endpoints<AppDeps>()
  .add({
    method: 'get',
    path: '/v1/webhook-deliveries',
    summary: "List the workspace's webhook deliveries with their attempts (extension)",
    description: 'Newest first. Each event with every request sent for it: status code, error class, latency and the next retry.',
    tags: ['Webhooks'],
    scope: 'read',
    rateClass: 'poll',
    query: listQuery,
    response: z.array(deliverySchema),
    responseExtra: { next_cursor: z.string().nullable().describe('pass as `cursor` to get the next page; null on the last page') },
    errors: [400, 401, 429, 500],
    async handler({ res, query: q, services: deps }) {
      const { workspaceId } = authOf(res);
      let after: repo.DeliveryListKey | null = null;
      if (q.cursor) {
        const m = cursorPattern.exec(q.cursor);
        if (!m) throw invalidRequest(`cursor: ${CURSOR_REFUSED}`);
        after = { createdAtMicros: m[1]!, id: m[2]! };
      }
      const page = await repo.listDeliveriesPage(deps.db, workspaceId, {
        limit: q.limit ?? DEFAULT_PAGE_LIMIT,
        after,
        filters: { jobId: q.job_id, endpointId: q.endpoint_id, type: q.event, status: q.status },
      });
      const attempts = await repo.attemptsOf(
        deps.db,
        page.rows.map((r) => r.id),
      );
      res.json({
        data: page.rows.map((r) => presentDelivery(r, attempts.get(r.id)!)),
        next_cursor: page.next ? `whd.${page.next.createdAtMicros}.${page.next.id}` : null,
      });
    },
  })
  .add({
    method: 'get',
    path: '/v1/webhook-deliveries/:id',
    summary: 'Get one webhook delivery with its attempts (extension)',
    description: "The id is the event's `webhook-id`. Another workspace's event is 404.",
    tags: ['Webhooks'],
    scope: 'read',
    rateClass: 'poll',
    response: deliverySchema,
    errors: [401, 404, 429, 500],
    async handler({ req, res, services: deps }) {
      const { workspaceId } = authOf(res);
      res.json({ data: await loadOne(deps, workspaceId, String(req.params.id)) });
    },
  })
  .add({
    method: 'post',
    path: '/v1/webhook-deliveries/:id/redeliver',
    summary: 'Send a finished webhook event again (extension)',
    description:
      'Signed afresh (a new webhook-timestamp) with the same webhook-id, so a receiver that already has it can drop the copy; its requests are further attempts of the event, retried like the first delivery. ' +
      'Rate class `redeliver` (RATE_LIMIT_REDELIVER_PER_MIN per key). 409 delivery_in_flight while the event is not finished (waiting, retrying or being redelivered).',
    tags: ['Webhooks'],
    scope: 'admin',
    rateClass: 'redeliver',
    response: deliverySchema,
    errors: [401, 404, 409, 429, 500, 503],
    async handler({ req, res, services: deps }) {
      const { workspaceId } = authOf(res);
      const id = String(req.params.id);
      if (!deliveryId.test(id)) throw notFound(`webhook delivery ${id.slice(0, 200)}`);
      const begun = await repo.beginRedelivery(deps.db, workspaceId, id);
      if ('refused' in begun) {
        if (begun.refused === 'not_found') throw notFound(`webhook delivery ${id}`);
        throw new ApiError(409, 'delivery_in_flight', `webhook delivery ${id} is not finished yet; redeliver it once it is delivered or failed`);
      }
      const row = begun.started;
      const snapshot = (await getDelivery(deps.db, id))?.job;
      const share = row.job_id ? (await jobShares(deps.db, [row.job_id])).get(row.job_id) : undefined;
      try {
        await startWebhookDelivery(
          deps.temporal,
          deps.config,
          { ...row, project_id: snapshot?.project_id === undefined ? null : String(snapshot.project_id) },
          {
            workflowId: redeliveryWorkflowId(id, row.redeliveries),
            priority: taskPriority(share ?? { workspaceId, priority: 'normal', fairnessWeight: 1 }, { fairness: deps.config.FAIR_SHARE }),
            redelivery: row.redeliveries,
          },
        );
      } catch (err) {
        // Its number was taken (a start that answered too late): that workflow delivers it.
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) {
          await repo.redeliveryNotStarted(deps.db, id, 'the redelivery could not be started; ask again');
          throw err;
        }
      }
      res.json({ data: await loadOne(deps, workspaceId, id) });
    },
  });

export const createWebhookDeliveriesRouter = (deps: AppDeps, auth: Auth) => webhookDeliveryEndpoints.router(deps, auth);
