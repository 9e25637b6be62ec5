// GET /v1/openapi.json: an OpenAPI 3.1 document generated from every router's Operation list, so
// the zod schemas that validate requests are also the published contract. Built once, on the first
// request (no auth: mounted before the /v1 authentication).
import type { Router } from 'express';
import { Endpoints } from './endpoint.js';

import type { AppDeps } from './deps.js';
import type { Operation } from './operations.js';
import { errorCodes } from './errors.js';
import { jobStatuses } from '../shared/job-model.js';
import { uploadStatuses } from '../shared/uploads.js';
import { batchStatuses } from '../shared/batches.js';
import { converter, openApiPath, statesDeploymentBounds } from './openapi-schema.js';
import { NO_NUL_PATTERN } from './validate.js';
import { healthEndpoints } from './routes/health.js';
import { discoveryEndpoints } from './routes/discovery.js';
import { uploadEndpoints } from './routes/uploads.js';
import { jobEndpoints } from './routes/jobs/router.js';
import { eventEndpoints } from './routes/events.js';
import { workspaceEventEndpoints } from './routes/workspace-events.js';
import { kindDescriptors } from '../shared/kinds/index.js';
import { webhookDocument, webhookEventDocs } from './webhooks.js';
import { jobListEndpoints } from './routes/job-lists.js';
import { modelEndpoints } from './routes/models.js';
import { queueEndpoints } from './routes/queue.js';
import { deprecationHeaders } from './model-lifecycle.js';
import { retentionEndpoints } from './routes/retention.js';
import { auditEndpoints } from './routes/audit.js';
import { webhookDeliveryEndpoints } from './routes/webhook-deliveries.js';
import { webhookEndpointEndpoints } from './routes/webhook-endpoints.js';
import { usageEndpoints } from './routes/usage.js';
import { budgetEndpoints } from './routes/budgets.js';
import { balanceEndpoints } from './routes/balance.js';
import { apiKeyEndpoints } from './routes/api-keys.js';
import { paymentRequiredErrorSchema } from './routes/budget-errors.js';
import { timelineEndpoints } from './routes/timeline.js';
import { pipelineEndpoints } from './routes/pipelines/router.js';
import { batchEndpoints } from './routes/batches/router.js';
import { bulkActionEndpoints } from './routes/bulk-actions.js';

type JsonObject = Record<string, unknown>;

const API_VERSION = '1.0.0';

/** GET /v1/openapi.json, declared once (its document is built on the first request, then kept). */
const openApiEndpoints = new Endpoints<{ document(): string }>().add({
  method: 'get',
  path: '/v1/openapi.json',
  summary: 'This OpenAPI 3.1 document',
  tags: ['Meta'],
  scope: null,
  rateClass: null,
  raw: 'json',
  errors: [],
  handler({ res, services }) {
    res.type('application/json').send(services.document());
  },
});

/** Every operation the gateway serves, in document order. */
export function allOperations(): Operation[] {
  return [
    ...discoveryEndpoints.operations,
    ...uploadEndpoints.operations,
    ...jobEndpoints.operations,
    ...jobListEndpoints.operations,
    ...pipelineEndpoints.operations,
    ...batchEndpoints.operations,
    ...bulkActionEndpoints.operations,
    ...modelEndpoints.operations,
    ...queueEndpoints.operations,
    ...retentionEndpoints.operations,
    ...auditEndpoints.operations,
    ...webhookDeliveryEndpoints.operations,
    ...webhookEndpointEndpoints.operations,
    ...usageEndpoints.operations,
    ...budgetEndpoints.operations,
    ...balanceEndpoints.operations,
    ...apiKeyEndpoints.operations,
    ...timelineEndpoints.operations,
    ...eventEndpoints.operations,
    ...workspaceEventEndpoints.operations,
    ...healthEndpoints.operations,
    ...openApiEndpoints.operations,
  ];
}

const errorDescriptions: Record<number, string> = {
  400: 'Invalid request (`invalid_request`), unsupported model (`invalid_model`), or a bulk action whose filter matches more jobs than one action takes (`too_many_jobs`)',
  401: 'API key missing, malformed, unknown, revoked or expired (`unauthorized`)',
  402: 'Not enough credits (`insufficient_credits`; the message states the required and available amounts), or, on creates, the price would pass a budget of the key or the project (`budget_exceeded`, with `scope`, `scope_id`, `period`, `limit`, `remaining` and `resets_at`)',
  403: "Project outside the key's workspace (`forbidden`), an owner-only operation with a key whose creator is not an owner of the workspace (`owner_key_required`), or a refusal by the key's own rules (`key_scope_denied`, with `rule`: the missing scope, or allowed_models, allowed_kinds, allowed_ips)",
  404: 'Resource does not exist or is not visible to the key (`not_found`)',
  405: 'Method not allowed on this path (`method_not_allowed`)',
  408: 'The upload arrived slower than the minimum transfer rate (`request_timeout`); what it stored was removed',
  409: 'Media not ready (`not_ready`, with `status`), generation failed (`generation_failed`, with `status`), the job or pipeline cannot change (`not_cancelable`; a pipeline resumed that is not failed: `not_resumable`), a request with the same Idempotency-Key is still running (`idempotency_in_progress`), a direct upload with nothing stored yet (`not_ready`, status `pending`) or one that can no longer be completed (`upload_refused`, status `failed`)',
  410: "The job's outputs were deleted or expired (`gone`), or, on a create, the model was retired (`model_retired`: the message names its replacement)",
  413: "Request body too large (`payload_too_large`), or the upload does not fit in the workspace's storage quota (`storage_quota_exceeded`, the message names the quota)",
  415: 'Unsupported media type (`unsupported_media_type`)',
  422: 'The Idempotency-Key was already used for a different request: another endpoint or body (`idempotency_key_reused`)',
  429: 'Rate limit exceeded (`rate_limited`; also too many uploads of one key at once), a cap on open event streams reached (`too_many_streams`, the message names the cap), or, on creates, too many cancels after a submit (`cancel_churn_limited`); wait `retry_after_ms` milliseconds',
  500: 'Unexpected failure (`internal_error`); the message carries a request id',
  503: 'A dependency is unavailable (`service_unavailable`)',
};

const rateLimitHeaders = {
  'RateLimit-Limit': { $ref: '#/components/headers/RateLimit-Limit' },
  'RateLimit-Remaining': { $ref: '#/components/headers/RateLimit-Remaining' },
  'RateLimit-Reset': { $ref: '#/components/headers/RateLimit-Reset' },
};

function components(): JsonObject {
  const intHeader = (description: string) => ({ description, schema: { type: 'integer', minimum: 0 } });
  const responses: JsonObject = {};
  for (const [status, description] of Object.entries(errorDescriptions)) {
    const schemaName = status === '429' ? 'RateLimitError' : status === '409' ? 'ConflictError' : status === '402' ? 'PaymentRequiredError' : 'Error';
    responses[`Error${status}`] = {
      description,
      ...(status === '429' ? { headers: errorHeaders(429) } : {}),
      content: { 'application/json': { schema: { $ref: `#/components/schemas/${schemaName}` } } },
    };
  }
  return {
    securitySchemes: {
      bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'mg_live_<key id>_<secret>', description: 'Workspace API key' },
    },
    headers: {
      'RateLimit-Limit': intHeader('Requests allowed per minute for this rate-limit class and key'),
      'RateLimit-Remaining': intHeader('Requests left in the current window'),
      'RateLimit-Reset': intHeader('Seconds until the current window resets'),
      'Retry-After': intHeader('Seconds to wait before retrying'),
      'Next-Cursor': { description: 'On a CSV page: the cursor of the next page (absent on the last page)', schema: { type: 'string' } },
      ...deprecationHeaders,
    },
    schemas: {
      Error: {
        type: 'object',
        required: ['error'],
        properties: {
          error: {
            type: 'object',
            required: ['code', 'message'],
            properties: {
              code: { type: 'string', enum: [...errorCodes], description: 'stable machine-readable code' },
              message: { type: 'string', description: 'human-readable explanation' },
            },
            additionalProperties: false,
          },
        },
      },
      RateLimitError: {
        allOf: [
          { $ref: '#/components/schemas/Error' },
          {
            type: 'object',
            required: ['retry_after_ms'],
            properties: {
              error: { type: 'object', properties: { code: { enum: ['rate_limited', 'too_many_streams', 'cancel_churn_limited'] } } },
              retry_after_ms: { type: 'integer', minimum: 1, description: 'milliseconds to wait; a rate-limited request sent after that succeeds' },
            },
          },
        ],
      },
      PaymentRequiredError: paymentRequiredErrorSchema,
      ConflictError: {
        allOf: [
          { $ref: '#/components/schemas/Error' },
          {
            type: 'object',
            properties: {
              status: {
                type: 'string',
                enum: [...new Set([...jobStatuses, ...uploadStatuses, ...batchStatuses])],
                description: "current status of the job (of the upload, with `upload_refused`; of the batch, with a manifest's `not_ready`)",
              },
            },
            if: { properties: { error: { properties: { code: { enum: ['not_ready', 'generation_failed'] } } } } },
            then: { required: ['status'] },
          },
        ],
      },
    },
    responses,
  };
}

/** The deployment's settings the document states: the bounds a request is checked against at run time. */
interface DocumentSettings {
  serverUrl?: string;
  /** UPLOAD_MAX_RETENTION_SECONDS: the most an upload's `expires_in_seconds` may ask for (default 90 days). */
  uploadMaxRetentionSeconds?: number;
  /** PIPELINE_MAX_STEPS: the most steps a pipeline may have (absent: the schema's own bound). */
  pipelineMaxSteps?: number;
}

export function buildOpenApiDocument(operations: Operation[], opts: DocumentSettings = {}): JsonObject {
  const comps = components();
  const convert = converter(comps.schemas as JsonObject);
  const paths: Record<string, JsonObject> = {};
  const tags = new Set<string>();

  for (const op of operations) {
    const { path, params } = openApiPath(op.path);
    op.tags.forEach((t) => tags.add(t));
    const parameters: JsonObject[] = params.map((name) => ({ name, in: 'path', required: true, schema: { type: 'string', pattern: NO_NUL_PATTERN } }));
    if (op.query) {
      const q = convert(op.query, 'input');
      const required = new Set((q.required as string[] | undefined) ?? []);
      for (const [name, schema] of Object.entries((q.properties ?? {}) as Record<string, JsonObject>)) {
        const { description, ...rest } = schema;
        // An object parameter (metadata) is sent as name[key]=value; an array one (tag) repeats its name.
        const style = rest.type === 'object' ? { style: 'deepObject', explode: true } : {};
        parameters.push({ name, in: 'query', required: required.has(name), ...(description ? { description } : {}), ...style, schema: rest });
      }
    }
    if (op.headers) {
      const h = convert(op.headers, 'input');
      const required = new Set((h.required as string[] | undefined) ?? []);
      for (const [name, schema] of Object.entries((h.properties ?? {}) as Record<string, JsonObject>)) {
        const { description, ...rest } = schema;
        parameters.push({ name, in: 'header', required: required.has(name), ...(description ? { description } : {}), schema: rest });
      }
    }

    let requestBody: JsonObject | undefined;
    if (op.body) {
      requestBody = { required: true, content: { 'application/json': { schema: convert(op.body, 'input') } } };
    } else if (op.multipart) {
      const fields = convert(op.multipart, 'input');
      const properties = {
        ...((fields.properties ?? {}) as JsonObject),
        file: { type: 'string', contentMediaType: 'application/octet-stream', minLength: 1, description: 'the file (not empty)' },
      };
      const required = [...new Set([...(((fields.required as string[] | undefined) ?? []) as string[]), 'file'])];
      requestBody = { required: true, content: { 'multipart/form-data': { schema: { ...fields, properties, required } } } };
    }

    const headers = op.rateClass ? rateLimitHeaders : undefined;
    const okHeaders = op.responseHeaders?.length
      ? { ...headers, ...Object.fromEntries(op.responseHeaders.map((h) => [h, { $ref: `#/components/headers/${h}` }])) }
      : headers;
    let okContent: JsonObject;
    if (op.raw === 'text') {
      okContent = { 'text/plain': { schema: { type: 'string' } } };
    } else if (op.raw === 'event-stream') {
      // The schema of a text/event-stream describes one event (as OpenAPI 3.2's itemSchema does),
      // its data the JSON record, so clients and schemathesis validate each event as it comes.
      okContent = {
        'text/event-stream': {
          schema: {
            type: 'object',
            description:
              "One server-sent event. Each `status` event has an `id` (the job's change counter, for Last-Event-ID) and, as its data, " +
              'the job record GET answers; the stream ends after the completed or failed record. A `: ping` comment is sent every 15 s.',
            required: ['event', 'data'],
            properties: {
              event: op.streamEvents ? { type: 'string', ...op.streamEvents } : { const: 'status' },
              id: { type: 'string', pattern: '^[0-9]+$' },
              data: { type: 'string', contentMediaType: 'application/json', contentSchema: op.response ? convert(op.response, 'output') : { type: 'object' } },
            },
          },
        },
      };
    } else if (op.raw === 'json') {
      okContent = { 'application/json': { schema: op.response ? convert(op.response, 'output') : { type: 'object' } } };
    } else {
      const properties: JsonObject = { data: op.response ? convert(op.response, 'output') : {} };
      for (const [name, schema] of Object.entries(op.responseExtra ?? {})) properties[name] = convert(schema, 'output');
      okContent = { 'application/json': { schema: { type: 'object', required: Object.keys(properties), properties, additionalProperties: false } } };
      if (op.csv) okContent['text/csv'] = { schema: { type: 'string', description: op.csv } };
    }
    const links = op.creates ? createdResourceLinks(op.creates, operations) : undefined;
    const responses: JsonObject = {
      '200': { description: 'OK', ...(okHeaders ? { headers: okHeaders } : {}), content: okContent, ...(links ? { links } : {}) },
    };

    const statuses = new Set(op.errors);
    // Authenticated routes need Postgres: while it (or Temporal / storage) is down they answer 503.
    if (op.rateClass) [401, 429, 503].forEach((s) => statuses.add(s));
    if (op.scope) statuses.add(403); // key_scope_denied: the key lacks the scope, or is used from outside its allowed_ips
    if (op.body) statuses.add(400);
    statuses.add(500);
    for (const status of [...statuses].sort((a, b) => a - b)) {
      if (op.raw === 'json' && status !== 500 && op.response) {
        // Raw JSON answers (readiness) keep their own body on a non-2xx status.
        responses[String(status)] = { description: errorDescriptions[status] ?? 'Error', content: okContent };
      } else if (errorDescriptions[status]) {
        const ref: JsonObject = { $ref: `#/components/responses/Error${status}` };
        // A $ref response cannot carry extra headers, so rate-limited routes spell theirs out.
        // Refusals before the limiter ran (401: no key to count against) carry no RateLimit headers.
        // An outage (503) is answered before the limiter can count: Retry-After only.
        if (status === 503) responses[String(status)] = { ...resolveErrorResponse(comps, status), headers: errorHeaders(status) };
        else
          responses[String(status)] =
            headers && status !== 401 ? { ...resolveErrorResponse(comps, status), headers: { ...headers, ...errorHeaders(status) } } : ref;
      } else {
        responses[String(status)] = { description: 'Error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
      }
    }

    const operation: JsonObject = {
      operationId: operationId(op),
      summary: op.summary,
      ...(op.description ? { description: op.description } : {}),
      tags: op.tags,
      security: op.scope ? [{ bearerAuth: [op.scope] }] : op.rateClass ? [{ bearerAuth: [] }] : [],
      ...(parameters.length ? { parameters } : {}),
      ...(requestBody ? { requestBody } : {}),
      responses,
    };
    if (op.rateClass) operation['x-rate-limit-class'] = op.rateClass;
    if (op.scope) operation['x-scope'] = op.scope;
    (paths[path] ??= {})[op.method] = operation;
  }
  statesDeploymentBounds(paths, opts);

  return {
    openapi: '3.1.0',
    info: {
      title: 'Media Generation API',
      version: API_VERSION,
      description:
        'Asynchronous image, video, replace-actor and talking-actor generation, uploads and discovery. ' +
        'Every /v1 route needs `Authorization: Bearer <API key>`. Rate limits per key: discovery and polling ' +
        '120/min, generation and uploads 30/min; every rate-limited answer carries RateLimit-Limit, ' +
        'RateLimit-Remaining and RateLimit-Reset headers.',
    },
    ...(opts.serverUrl ? { servers: [{ url: opts.serverUrl }] } : {}),
    tags: [...tags].map((name) => ({ name })),
    security: [{ bearerAuth: [] }],
    paths,
    // The job events POSTed to a job's webhook_url (with the record schemas GET answers with) and the budget alert.
    webhooks: webhookDocument(webhookEventDocs([...new Set(kindDescriptors.map((k) => k.record))]), convert),
    components: comps,
  };
}

/**
 * OpenAPI links from a create operation's 200 answer to every operation on the created resource
 * (status, URL, cancel, complete): clients and stateful fuzzers follow `data.id` into them.
 */
function createdResourceLinks(resourcePath: string, operations: Operation[]): JsonObject {
  const { params } = openApiPath(resourcePath);
  if (params.length !== 1) throw new Error(`creates: ${resourcePath} must have exactly one path parameter`);
  const links: JsonObject = {};
  for (const target of operations) {
    if (target.path !== resourcePath && !target.path.startsWith(`${resourcePath}/`)) continue;
    const id = operationId(target);
    links[id] = {
      operationId: id,
      parameters: { [`path.${params[0]}`]: '$response.body#/data/id' },
      description: `${target.method.toUpperCase()} ${openApiPath(target.path).path} of the created resource`,
    };
  }
  return links;
}

const resolveErrorResponse = (comps: JsonObject, status: number): JsonObject => ({ ...((comps.responses as JsonObject)[`Error${status}`] as JsonObject) });

const errorHeaders = (status: number): JsonObject => (status === 429 || status === 503 ? { 'Retry-After': { $ref: '#/components/headers/Retry-After' } } : {});

function operationId(op: Operation): string {
  const words = op.path
    .replace(/^\/v1\//, '')
    .split(/[/.-]/)
    .filter(Boolean)
    .map((w) => (w.startsWith(':') ? `by_${w.slice(1)}` : w));
  return [op.method, ...words].join('_');
}

export function createOpenApiRouter(deps: AppDeps): Router {
  let document: string | null = null;
  return openApiEndpoints.router({
    document: () =>
      (document ??= JSON.stringify(
        buildOpenApiDocument(allOperations(), {
          serverUrl: deps.config.PUBLIC_BASE_URL,
          uploadMaxRetentionSeconds: deps.config.UPLOAD_MAX_RETENTION_SECONDS,
          pipelineMaxSteps: deps.config.PIPELINE_MAX_STEPS,
        }),
      )),
  });
}
