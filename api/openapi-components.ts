// The parts of the OpenAPI document every operation points at: the error answers (one per status,
// each naming its codes), the RateLimit and Retry-After headers, the bearer scheme and the error
// schemas. Kept apart from the per-operation conversion so each file reads as one concern.
import { errorCodes } from './errors.js';
import { jobStatuses } from '../shared/job-model.js';
import { uploadStatuses } from '../shared/uploads.js';
import { batchStatuses } from '../shared/batches.js';
import { deprecationHeaders } from './model-lifecycle.js';
import { paymentRequiredErrorSchema } from './routes/budget-errors.js';

type JsonObject = Record<string, unknown>;

/** What each error status means, with the codes it carries: the text of the shared error answers. */
export const errorDescriptions: Record<number, string> = {
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

/** The headers every rate-limited answer carries, as references to components.headers. */
export const rateLimitHeaders = {
  'RateLimit-Limit': { $ref: '#/components/headers/RateLimit-Limit' },
  'RateLimit-Remaining': { $ref: '#/components/headers/RateLimit-Remaining' },
  'RateLimit-Reset': { $ref: '#/components/headers/RateLimit-Reset' },
};

/** components: the shared error answers, headers, security scheme and error schemas (the converter adds the rest). */
export function components(): JsonObject {
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

/** A copy of a shared error answer, so headers can be added to it (a $ref response cannot carry extra ones). */
export const resolveErrorResponse = (comps: JsonObject, status: number): JsonObject => ({
  ...((comps.responses as JsonObject)[`Error${status}`] as JsonObject),
});

/** Retry-After, on the statuses whose answer says when to try again. */
export const errorHeaders = (status: number): JsonObject =>
  status === 429 || status === 503 ? { 'Retry-After': { $ref: '#/components/headers/Retry-After' } } : {};
