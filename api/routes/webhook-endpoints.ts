// Webhook endpoints the customer manages (extension, docs/api/webhook-endpoints.md):
// - POST /v1/webhook-endpoints: a receiver URL (the per-request webhook_url's rules), the event
//   types it subscribes to (exact names or job.*, pipeline.*, budget.*, balance.*) and an enabled
//   flag; answers its signing secret, the only time it is shown.
// - GET /v1/webhook-endpoints, GET /v1/webhook-endpoints/{id}: the endpoints, never a secret.
// - POST /v1/webhook-endpoints/{id}: changes url, description, event_types or enabled.
// - DELETE /v1/webhook-endpoints/{id}: removes it; deliveries not sent yet are not sent.
// - POST /v1/webhook-endpoints/{id}/rotate-secret: a new secret; the replaced one keeps signing for
//   `overlap_seconds` (both signatures in webhook-signature meanwhile).
// - POST /v1/webhook-endpoints/{id}/test: a signed `webhook.ping` through the delivery machinery.
// Every change needs an owner key (403 owner_key_required) and is an audit event; reads take any key.
import { z } from 'zod';
import type { AppDeps } from '../deps.js';
import { authOf, type Auth } from '../auth.js';
import { Endpoints } from '../endpoint.js';
import { ApiError, invalidRequest, notFound } from '../errors.js';
import { webhookRequestFields } from '../webhooks.js';
import * as repo from '../../db/repos/webhook-endpoints.js';
import { keyActor } from '../../shared/audit.js';
import { checkWebhookUrl } from '../../shared/webhooks/target.js';
import { FetchError } from '../../shared/fetch-remote.js';
import { secretsEncryptionKey } from '../../shared/webhooks/signing.js';
import type { Config } from '../../shared/config.js';
import {
  DEFAULT_ROTATION_OVERLAP_SECONDS,
  eventTypePatterns,
  MAX_ENDPOINT_EVENT_TYPES,
  MAX_ROTATION_OVERLAP_SECONDS,
  MAX_WEBHOOK_ENDPOINTS,
  subscribableEventNames,
} from '../../shared/webhooks/endpoints.js';

const endpointIdPattern = /^wep_[0-9a-z]{24}$/;
const timestamp = z.string().describe('ISO 8601');

const eventTypesField = z
  .array(
    z
      .string()
      .max(60)
      // A pattern, not a refinement: the document states which values are accepted.
      .regex(
        new RegExp(`^(${[...subscribableEventNames, ...eventTypePatterns].map((n) => n.replace(/[.*]/g, (c) => `\\${c}`)).join('|')})$`),
        `an event type (${subscribableEventNames.join(', ')}) or a pattern (${eventTypePatterns.join(', ')})`,
      ),
  )
  .min(1)
  .max(MAX_ENDPOINT_EVENT_TYPES)
  .describe(
    `the events this endpoint receives, 1 to ${MAX_ENDPOINT_EVENT_TYPES}: exact names (${subscribableEventNames.join(', ')}) or patterns (${eventTypePatterns.join(', ')}); ` +
      "every job and pipeline of the workspace counts, whether or not it named a webhook_url. A job's events are its moves to generating, completed and failed.",
  );

const urlField = webhookRequestFields.webhook_url
  .unwrap()
  .describe("where the events are POSTed: the rules of a create's webhook_url (https, a public host, the default port)");
const descriptionField = z.string().max(500).nullable().describe('a note for the workspace; null: none');

const endpointSchema = z.strictObject({
  id: z.string().describe('wep_…'),
  url: z.string(),
  description: z.string().nullable(),
  event_types: z.array(z.string()).describe('the subscriptions: exact event names or patterns'),
  enabled: z.boolean().describe('false: the endpoint receives nothing (not even events written while it was disabled)'),
  previous_secret_expires_at: timestamp
    .nullable()
    .describe("during a rotation's overlap, until when the replaced secret still signs (two signatures in webhook-signature); null otherwise"),
  created_at: timestamp,
  updated_at: timestamp,
});

const withSecret = endpointSchema.extend({
  secret: z.string().describe('the signing secret (whsec_…), for verifying webhook-signature: shown this once, stored only encrypted'),
});

const createBody = z.strictObject({
  url: urlField,
  event_types: eventTypesField,
  description: descriptionField.optional(),
  enabled: z.boolean().optional().describe('default true'),
});

const updateBody = z
  .strictObject({
    url: urlField.optional(),
    event_types: eventTypesField.optional(),
    description: descriptionField.optional(),
    enabled: z.boolean().optional(),
  })
  .describe('the fields to change; those absent stay as they are');

const rotateBody = z.strictObject({
  overlap_seconds: z
    .number()
    .int()
    .min(0)
    .max(MAX_ROTATION_OVERLAP_SECONDS)
    .optional()
    .describe(
      `how long the replaced secret keeps signing beside the new one, 0 to ${MAX_ROTATION_OVERLAP_SECONDS} seconds (default ${DEFAULT_ROTATION_OVERLAP_SECONDS}); 0: it stops now. A secret still in an earlier overlap stops now.`,
    ),
});

const pingSchema = z.strictObject({
  delivery_id: z.string().describe('the delivery: GET /v1/webhook-deliveries/{delivery_id} shows its attempts'),
  event_id: z.string().describe('the webhook-id header the ping carries'),
});

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function present(e: repo.WebhookEndpoint): z.infer<typeof endpointSchema> {
  const overlap = e.previous_expires_at && e.previous_expires_at.getTime() > Date.now() ? e.previous_expires_at : null;
  return {
    id: e.id,
    url: e.url,
    description: e.description,
    event_types: e.event_types,
    enabled: e.enabled,
    previous_secret_expires_at: iso(overlap),
    created_at: e.created_at.toISOString(),
    updated_at: e.updated_at.toISOString(),
  };
}

function ownerOf(res: Parameters<typeof authOf>[0]) {
  const a = authOf(res);
  if (!a.owner)
    throw new ApiError(
      403,
      'owner_key_required',
      'webhook endpoints can be changed only with an owner key: a key created by a member who is an owner of the workspace',
    );
  return a;
}

function checkUrl(url: string, config: Pick<Config, 'WEBHOOK_ALLOW_LOOPBACK'>): void {
  try {
    checkWebhookUrl(url, config.WEBHOOK_ALLOW_LOOPBACK);
  } catch (err) {
    if (err instanceof FetchError) throw invalidRequest(`url: ${err.message}`);
    throw err;
  }
}

/** The key endpoint secrets are encrypted with; a production gateway without its own WEBHOOK_SECRETS_KEY refuses (503) rather than store secrets the webhooks fleet cannot open. */
function secretsKey(config: Config): Buffer {
  if (config.NODE_ENV === 'production' && !config.WEBHOOK_SECRETS_KEY)
    throw new ApiError(503, 'service_unavailable', 'webhook endpoint secrets cannot be stored: this gateway has no WEBHOOK_SECRETS_KEY (an operator sets it)');
  return secretsEncryptionKey(config);
}

const dedupe = (types: string[]) => [...new Set(types)];

async function loadOwn(deps: AppDeps, workspaceId: string, id: string): Promise<repo.WebhookEndpoint> {
  const e = endpointIdPattern.test(id) ? await repo.getEndpoint(deps.db, workspaceId, id) : undefined;
  if (!e) throw notFound(`webhook endpoint ${id.slice(0, 100)}`);
  return e;
}

const ownerNote = 'Owner keys only (403 owner_key_required); an audit event records it.';

export const webhookEndpointEndpoints = new Endpoints<AppDeps>()
  .add({
    method: 'post',
    path: '/v1/webhook-endpoints',
    summary: 'Create a webhook endpoint (extension; owner keys only)',
    description: `Its signing secret is in this answer only. At most ${MAX_WEBHOOK_ENDPOINTS} per workspace (409 too_many_webhook_endpoints). ${ownerNote}`,
    tags: ['Webhooks'],
    scope: 'admin',
    rateClass: 'generate',
    body: createBody,
    response: withSecret,
    errors: [400, 401, 403, 409, 415, 429, 500, 503],
    async handler({ res, body, services: deps }) {
      const { workspaceId, apiKeyId } = ownerOf(res);
      checkUrl(body.url, deps.config);
      const key = secretsKey(deps.config);
      try {
        const { endpoint, secret } = await repo.createEndpoint(deps.db, {
          workspaceId,
          url: body.url,
          description: body.description ?? null,
          eventTypes: dedupe(body.event_types),
          enabled: body.enabled ?? true,
          actor: keyActor(apiKeyId),
          key,
        });
        res.json({ data: { ...present(endpoint), secret } });
      } catch (err) {
        if (err instanceof repo.TooManyEndpointsError) throw new ApiError(409, 'too_many_webhook_endpoints', err.message);
        throw err;
      }
    },
  })
  .add({
    method: 'get',
    path: '/v1/webhook-endpoints',
    summary: "List the workspace's webhook endpoints (extension)",
    description: 'Oldest first; never a secret.',
    tags: ['Webhooks'],
    scope: 'read',
    rateClass: 'poll',
    response: z.array(endpointSchema),
    errors: [401, 429, 500],
    async handler({ res, services: deps }) {
      const { workspaceId } = authOf(res);
      res.json({ data: (await repo.listEndpoints(deps.db, workspaceId)).map(present) });
    },
  })
  .add({
    method: 'get',
    path: '/v1/webhook-endpoints/:id',
    summary: 'Get one webhook endpoint (extension)',
    tags: ['Webhooks'],
    scope: 'read',
    rateClass: 'poll',
    response: endpointSchema,
    errors: [401, 404, 429, 500],
    async handler({ req, res, services: deps }) {
      const { workspaceId } = authOf(res);
      res.json({ data: present(await loadOwn(deps, workspaceId, String(req.params.id))) });
    },
  })
  .add({
    method: 'post',
    path: '/v1/webhook-endpoints/:id',
    summary: 'Change a webhook endpoint (extension; owner keys only)',
    description: `Events written while it is disabled are never sent to it. ${ownerNote}`,
    tags: ['Webhooks'],
    scope: 'admin',
    rateClass: 'generate',
    body: updateBody,
    response: endpointSchema,
    errors: [400, 401, 403, 404, 415, 429, 500],
    async handler({ req, res, body, services: deps }) {
      const { workspaceId, apiKeyId } = ownerOf(res);
      const id = String(req.params.id);
      if (body.url !== undefined) checkUrl(body.url, deps.config);
      const patch = {
        url: body.url,
        description: body.description,
        eventTypes: body.event_types === undefined ? undefined : dedupe(body.event_types),
        enabled: body.enabled,
      };
      const updated = endpointIdPattern.test(id) ? await repo.updateEndpoint(deps.db, workspaceId, id, patch, keyActor(apiKeyId)) : undefined;
      if (!updated) throw notFound(`webhook endpoint ${id.slice(0, 100)}`);
      res.json({ data: present(updated) });
    },
  })
  .add({
    method: 'delete',
    path: '/v1/webhook-endpoints/:id',
    summary: 'Delete a webhook endpoint (extension; owner keys only)',
    description: `Its deliveries stay listed (naming it); those not sent yet are not sent. ${ownerNote}`,
    tags: ['Webhooks'],
    scope: 'admin',
    rateClass: 'generate',
    response: z.strictObject({ id: z.string(), deleted: z.literal(true) }),
    errors: [401, 403, 404, 429, 500],
    async handler({ req, res, services: deps }) {
      const { workspaceId, apiKeyId } = ownerOf(res);
      const id = String(req.params.id);
      const gone = endpointIdPattern.test(id) && (await repo.deleteEndpoint(deps.db, workspaceId, id, keyActor(apiKeyId)));
      if (!gone) throw notFound(`webhook endpoint ${id.slice(0, 100)}`);
      res.json({ data: { id, deleted: true } });
    },
  })
  .add({
    method: 'post',
    path: '/v1/webhook-endpoints/:id/rotate-secret',
    summary: "Rotate a webhook endpoint's signing secret (extension; owner keys only)",
    description:
      'Answers the new secret, the only time it is shown. During the overlap every delivery carries two signatures (space-separated in webhook-signature), ' +
      `so a receiver verifying with either secret accepts it; after it, only the new one. ${ownerNote}`,
    tags: ['Webhooks'],
    scope: 'admin',
    rateClass: 'generate',
    body: rotateBody,
    response: withSecret,
    errors: [400, 401, 403, 404, 415, 429, 500, 503],
    async handler({ req, res, body, services: deps }) {
      const { workspaceId, apiKeyId } = ownerOf(res);
      const id = String(req.params.id);
      const key = secretsKey(deps.config);
      const rotated = endpointIdPattern.test(id)
        ? await repo.rotateEndpointSecret(deps.db, {
            workspaceId,
            id,
            overlapSeconds: body.overlap_seconds ?? DEFAULT_ROTATION_OVERLAP_SECONDS,
            actor: keyActor(apiKeyId),
            key,
          })
        : undefined;
      if (!rotated) throw notFound(`webhook endpoint ${id.slice(0, 100)}`);
      res.json({ data: { ...present(rotated.endpoint), secret: rotated.secret } });
    },
  })
  .add({
    method: 'post',
    path: '/v1/webhook-endpoints/:id/test',
    summary: 'Send a signed webhook.ping to a webhook endpoint (extension; owner keys only)',
    description:
      'Written to the webhook outbox and delivered like any event (signed, retried, listed in GET /v1/webhook-deliveries with its endpoint_id). ' +
      'A disabled endpoint is refused (409 webhook_endpoint_disabled). Rate class `redeliver`.',
    tags: ['Webhooks'],
    scope: 'admin',
    rateClass: 'redeliver',
    response: pingSchema,
    errors: [401, 403, 404, 409, 429, 500],
    async handler({ req, res, services: deps }) {
      const { workspaceId } = ownerOf(res);
      const endpoint = await loadOwn(deps, workspaceId, String(req.params.id));
      if (!endpoint.enabled) throw new ApiError(409, 'webhook_endpoint_disabled', `webhook endpoint ${endpoint.id} is disabled: enable it to test it`);
      const ping = await repo.enqueuePing(deps.db, endpoint);
      res.json({ data: { delivery_id: ping.deliveryId, event_id: ping.eventId } });
    },
  });

export const createWebhookEndpointsRouter = (deps: AppDeps, auth: Auth) => webhookEndpointEndpoints.router(deps, auth);
