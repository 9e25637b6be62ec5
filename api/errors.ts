// The error vocabulary of the API and the one middleware that turns every failure into
// `{ error: { code, message } }` (plus `retry_after_ms` on 429, `status` on 409 not_ready, and the
// budget's `scope`, `period`, `limit`, `remaining` and `resets_at` on 402 budget_exceeded).
import { Router, type ErrorRequestHandler, type RequestHandler } from 'express';
import type { Operation } from './operations.js';
import type { Logger } from 'pino';
import { redactedError, redactPath, redactText } from '../shared/redact.js';

/** Every error code the API answers, in document order (the OpenAPI Error schema lists them). */
export const errorCodes = [
  'invalid_request',
  'invalid_model',
  'unauthorized',
  'insufficient_credits',
  'budget_exceeded',
  'forbidden',
  'priority_not_allowed',
  'owner_key_required',
  'key_scope_denied',
  'not_found',
  'method_not_allowed',
  'payload_too_large',
  'request_timeout',
  'unsupported_media_type',
  'not_ready',
  'generation_failed',
  'not_cancelable',
  'not_resumable',
  'delivery_in_flight',
  'webhook_endpoint_disabled',
  'too_many_webhook_endpoints',
  'too_many_jobs',
  'upload_refused',
  'upload_unavailable',
  'storage_quota_exceeded',
  'idempotency_in_progress',
  'idempotency_key_reused',
  'gone',
  'model_retired',
  'rate_limited',
  'cancel_churn_limited',
  'too_many_streams',
  'internal_error',
  'service_unavailable',
] as const;
type ErrorCode = (typeof errorCodes)[number];

export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    /** Extra top-level properties of the body (retry_after_ms, status, a refusing budget's fields). */
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export const invalidRequest = (message: string) => new ApiError(400, 'invalid_request', message);
export const notFound = (what: string) => new ApiError(404, 'not_found', `${what} not found`);
export const forbidden = (message: string) => new ApiError(403, 'forbidden', message);

export function errorBody(code: ErrorCode, message: string, extra: Record<string, unknown> = {}) {
  return { error: { code, message }, ...extra };
}

export const notFoundRoute: RequestHandler = (req, _res, next) => {
  next(new ApiError(404, 'not_found', `no route for ${req.method} ${req.path}`));
};

/**
 * The methods each of our paths serves, literal paths before parameterised ones: Express tries
 * routes in order, and `/v1/images/generate` (POST) must not be taken for `/v1/images/:id` (GET).
 */
function allowedMethods(operations: Operation[]): [path: string, allow: string][] {
  const byPath = new Map<string, Set<string>>();
  for (const op of operations) {
    const methods = byPath.get(op.path) ?? new Set<string>();
    methods.add(op.method.toUpperCase());
    if (op.method === 'get') methods.add('HEAD');
    byPath.set(op.path, methods);
  }
  const params = (path: string) => path.split('/').filter((s) => s.startsWith(':')).length;
  return [...byPath].sort(([a], [b]) => params(a) - params(b)).map(([path, methods]) => [path, [...methods].join(', ')]);
}

/**
 * Mounted before authentication (a CORS preflight carries no key): `OPTIONS` on an endpoint of
 * ours answers 204 with an `Allow` header listing exactly the methods its path serves — Express's
 * own answer merged every route that matched, so POST-only routes advertised GET.
 */
export function optionsRoutes(operations: Operation[]): Router {
  const router = Router();
  for (const [path, allow] of allowedMethods(operations)) {
    router.options(path, (_req, res) => {
      res.setHeader('Allow', allow);
      res.status(204).end();
    });
  }
  return router;
}

/**
 * Mounted after every router: a request whose path is an endpoint of ours but whose method is not
 * answers 405 with an `Allow` header (instead of a misleading 404).
 */
export function methodNotAllowed(operations: Operation[]): Router {
  const router = Router();
  for (const [path, allow] of allowedMethods(operations)) {
    router.all(path, (req, res, next) => {
      res.setHeader('Allow', allow);
      next(new ApiError(405, 'method_not_allowed', `${req.method} is not allowed on ${req.path}; use ${allow}`));
    });
  }
  return router;
}

const DEPENDENCY_RETRY_AFTER_SECONDS = 5;

/** Socket-level failures to reach a server (Postgres, MinIO, the Temporal frontend). */
const networkCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE', 'ECONNABORTED']);
/** gRPC UNAVAILABLE and DEADLINE_EXCEEDED (a Temporal call that could not be served in time). */
const grpcOutageCodes = new Set([14, 4]);

/**
 * Whether a failure means a dependency is down or unreachable (answered 503 with Retry-After)
 * rather than a bug (500): network errors, Postgres connection errors and shutdowns (SQLSTATE
 * class 08, 57P01–57P03, too many connections), pool connect timeouts, and Temporal's gRPC
 * UNAVAILABLE / DEADLINE_EXCEEDED. Walks the cause chain and aggregated errors.
 */
function isDependencyOutage(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 5) return false;
  const e = err as { code?: unknown; message?: unknown; name?: unknown; cause?: unknown; errors?: unknown };
  if (typeof e.code === 'string') {
    if (networkCodes.has(e.code)) return true;
    if (/^08/.test(e.code) || ['57P01', '57P02', '57P03', '53300'].includes(e.code)) return true;
  }
  if (typeof e.code === 'number' && grpcOutageCodes.has(e.code) && (e.name === 'ServiceError' || 'details' in e || 'metadata' in e)) return true;
  const message = typeof e.message === 'string' ? e.message : '';
  if (/^(Connection terminated|timeout exceeded when trying to connect)/.test(message)) return true;
  if (Array.isArray(e.errors) && e.errors.some((x) => isDependencyOutage(x, depth + 1))) return true;
  return isDependencyOutage(e.cause, depth + 1);
}

/** Maps body-parser and other well-known failures to clean 4xx; unexpected ones to 500 with a request id. */
export function errorMiddleware(logger: Logger): ErrorRequestHandler {
  return (err, req, res, _next) => {
    let apiError: ApiError;
    if (err instanceof ApiError) {
      apiError = err;
    } else if (err?.type === 'entity.parse.failed') {
      apiError = invalidRequest('request body is not valid JSON');
    } else if (err?.type === 'entity.too.large') {
      apiError = new ApiError(413, 'payload_too_large', `request body exceeds ${err.limit} bytes`);
    } else if (err?.type === 'encoding.unsupported' || err?.type === 'charset.unsupported') {
      apiError = new ApiError(415, 'unsupported_media_type', String(err.message));
    } else if (typeof err?.status === 'number' && err.status >= 400 && err.status < 500 && err.expose) {
      apiError = invalidRequest(String(err.message));
    } else if (isDependencyOutage(err)) {
      // Postgres, Temporal or storage cannot be reached: the client should retry, not report a bug.
      logger.warn(
        { requestId: res.locals.requestId, method: req.method, path: redactPath(req.path), err: redactText((err as Error).message) },
        'dependency unavailable',
      );
      res.setHeader('Retry-After', String(DEPENDENCY_RETRY_AFTER_SECONDS));
      apiError = new ApiError(503, 'service_unavailable', 'the service is temporarily unavailable; retry later');
    } else {
      const requestId = String(res.locals.requestId ?? 'unknown');
      logger.error({ err: redactedError(err), requestId, method: req.method, path: redactPath(req.path) }, 'unhandled error');
      apiError = new ApiError(500, 'internal_error', `internal error (request id ${requestId})`);
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.status(apiError.status).json(errorBody(apiError.code, apiError.message, apiError.extra));
  };
}
