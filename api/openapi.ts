// GET /v1/openapi.json: an OpenAPI 3.1 document generated from every router's Operation list, so
// the zod schemas that validate requests are also the published contract. Built once, on the first
// request (no auth: mounted before the /v1 authentication).
import type { Router } from 'express';
import { Endpoints } from './endpoint.js';

import type { AppDeps } from './deps.js';
import type { Operation } from './operations.js';
import { converter, openApiPath, statesDeploymentBounds } from './openapi-schema.js';
import { components, errorDescriptions, errorHeaders, rateLimitHeaders, resolveErrorResponse } from './openapi-components.js';
import { NO_NUL_PATTERN } from './validate.js';
import { healthEndpoints } from './routes/health.js';
import { discoveryEndpoints } from './routes/discovery.js';
import { uploadEndpoints } from './routes/uploads.js';
import { jobEndpoints } from './routes/jobs/router.js';
import { eventEndpoints } from './routes/events.js';
import { workspaceEventEndpoints } from './routes/workspace-events.js';
import { kindDescriptors } from '../kinds/index.js';
import { webhookDocument, webhookEventDocs } from './webhooks.js';
import { jobListEndpoints } from './routes/job-lists.js';
import { modelEndpoints } from './routes/models.js';
import { queueEndpoints } from './routes/queue.js';
import { retentionEndpoints } from './routes/retention.js';
import { auditEndpoints } from './routes/audit.js';
import { webhookDeliveryEndpoints } from './routes/webhook-deliveries.js';
import { webhookEndpointEndpoints } from './routes/webhook-endpoints.js';
import { usageEndpoints } from './routes/usage.js';
import { budgetEndpoints } from './routes/budgets.js';
import { balanceEndpoints } from './routes/balance.js';
import { apiKeyEndpoints } from './routes/api-keys.js';
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

/** The deployment's settings the document states: the bounds a request is checked against at run time. */
interface DocumentSettings {
  serverUrl?: string;
  /** UPLOAD_MAX_RETENTION_SECONDS: the most an upload's `expires_in_seconds` may ask for (default 90 days). */
  uploadMaxRetentionSeconds?: number;
  /** PIPELINE_MAX_STEPS: the most steps a pipeline may have (absent: the schema's own bound). */
  pipelineMaxSteps?: number;
}

/** Converts a zod schema into the document, moving its named parts into components.schemas. */
type Convert = ReturnType<typeof converter>;

/** What converting one operation needs from the document being built. */
interface DocumentContext {
  operations: Operation[];
  comps: JsonObject;
  convert: Convert;
}

/** The OpenAPI 3.1 document of these operations with the deployment's bounds: served at /v1/openapi.json, and what the client's types come from. */
export function buildOpenApiDocument(operations: Operation[], opts: DocumentSettings = {}): JsonObject {
  const comps = components();
  const convert = converter(comps.schemas as JsonObject);
  const paths: Record<string, JsonObject> = {};
  const tags = new Set<string>();

  for (const op of operations) {
    const { path, params } = openApiPath(op.path);
    op.tags.forEach((t) => tags.add(t));
    (paths[path] ??= {})[op.method] = operationObject(op, params, { operations, comps, convert });
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
 * One operation as OpenAPI states it. Its schemas are converted in a fixed order (query, headers,
 * body, answer) because each conversion adds its named parts to components.schemas in turn.
 */
function operationObject(op: Operation, params: string[], ctx: DocumentContext): JsonObject {
  const parameters = parametersOf(op, params, ctx.convert);
  const requestBody = requestBodyOf(op, ctx.convert);
  const responses = responsesOf(op, ctx);
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
  return operation;
}

/** The path parameters (NUL-free strings), then the query's and the headers', each with its own description lifted out of the schema. */
function parametersOf(op: Operation, params: string[], convert: Convert): JsonObject[] {
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
  return parameters;
}

/** A JSON body, or a multipart form whose `file` part is always required (an upload without bytes is refused). */
function requestBodyOf(op: Operation, convert: Convert): JsonObject | undefined {
  if (op.body) return { required: true, content: { 'application/json': { schema: convert(op.body, 'input') } } };
  if (!op.multipart) return undefined;
  const fields = convert(op.multipart, 'input');
  const properties = {
    ...((fields.properties ?? {}) as JsonObject),
    file: { type: 'string', contentMediaType: 'application/octet-stream', minLength: 1, description: 'the file (not empty)' },
  };
  const required = [...new Set([...(((fields.required as string[] | undefined) ?? []) as string[]), 'file'])];
  return { required: true, content: { 'multipart/form-data': { schema: { ...fields, properties, required } } } };
}

/** The 200 answer (with its headers and the links into a created resource), then one answer per error status the operation can give. */
function responsesOf(op: Operation, ctx: DocumentContext): JsonObject {
  const headers = op.rateClass ? rateLimitHeaders : undefined;
  const okHeaders = op.responseHeaders?.length
    ? { ...headers, ...Object.fromEntries(op.responseHeaders.map((h) => [h, { $ref: `#/components/headers/${h}` }])) }
    : headers;
  const okContent = okContentOf(op, ctx.convert);
  const links = op.creates ? createdResourceLinks(op.creates, ctx.operations) : undefined;
  const responses: JsonObject = {
    '200': { description: 'OK', ...(okHeaders ? { headers: okHeaders } : {}), content: okContent, ...(links ? { links } : {}) },
  };
  for (const status of errorStatuses(op)) responses[String(status)] = errorResponse(op, status, okContent, headers, ctx.comps);
  return responses;
}

/** The 200 answer's content: plain text, an event stream, a raw JSON body, or the usual `{ data }` envelope (and its CSV form where offered). */
function okContentOf(op: Operation, convert: Convert): JsonObject {
  if (op.raw === 'text') return { 'text/plain': { schema: { type: 'string' } } };
  if (op.raw === 'event-stream') return eventStreamContent(op, convert);
  if (op.raw === 'json') return { 'application/json': { schema: op.response ? convert(op.response, 'output') : { type: 'object' } } };
  const properties: JsonObject = { data: op.response ? convert(op.response, 'output') : {} };
  for (const [name, schema] of Object.entries(op.responseExtra ?? {})) properties[name] = convert(schema, 'output');
  const okContent: JsonObject = {
    'application/json': { schema: { type: 'object', required: Object.keys(properties), properties, additionalProperties: false } },
  };
  if (op.csv) okContent['text/csv'] = { schema: { type: 'string', description: op.csv } };
  return okContent;
}

/**
 * The schema of a text/event-stream describes one event (as OpenAPI 3.2's itemSchema does), its
 * data the JSON record, so clients and schemathesis validate each event as it comes.
 */
function eventStreamContent(op: Operation, convert: Convert): JsonObject {
  return {
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
}

/** The error statuses an operation can answer with, in order: its own, and those every authenticated, scoped or bodied route shares. */
function errorStatuses(op: Operation): number[] {
  const statuses = new Set(op.errors);
  // Authenticated routes need Postgres: while it (or Temporal / storage) is down they answer 503.
  if (op.rateClass) [401, 429, 503].forEach((s) => statuses.add(s));
  if (op.scope) statuses.add(403); // key_scope_denied: the key lacks the scope, or is used from outside its allowed_ips
  if (op.body) statuses.add(400);
  statuses.add(500);
  return [...statuses].sort((a, b) => a - b);
}

/** One error status's answer: usually a reference to the shared one, spelled out where it must carry headers. */
function errorResponse(op: Operation, status: number, okContent: JsonObject, headers: JsonObject | undefined, comps: JsonObject): JsonObject {
  // Raw JSON answers (readiness) keep their own body on a non-2xx status.
  if (op.raw === 'json' && status !== 500 && op.response) return { description: errorDescriptions[status] ?? 'Error', content: okContent };
  if (!errorDescriptions[status]) return { description: 'Error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
  // A $ref response cannot carry extra headers, so rate-limited routes spell theirs out.
  // Refusals before the limiter ran (401: no key to count against) carry no RateLimit headers.
  // An outage (503) is answered before the limiter can count: Retry-After only.
  if (status === 503) return { ...resolveErrorResponse(comps, status), headers: errorHeaders(status) };
  if (headers && status !== 401) return { ...resolveErrorResponse(comps, status), headers: { ...headers, ...errorHeaders(status) } };
  return { $ref: `#/components/responses/Error${status}` };
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
