// fal's answers, classed from fal's own documentation:
//  - Request Error Types (https://fal.ai/docs/documentation/model-apis/request-errors): a flat
//    { detail, error_type } body, the type also in the X-Fal-Error-Type header, and on a failed
//    request's COMPLETED status. Infrastructure failures: request_timeout / startup_timeout (504),
//    runner_scheduling_failure, runner_connection_timeout, runner_disconnected,
//    runner_connection_refused, runner_connection_error (503), runner_incomplete_response (502),
//    runner_server_error and internal_error (500). Request-level: client_disconnected and
//    client_cancelled (499), bad_request (400).
//  - Model Errors (https://fal.ai/docs/documentation/model-apis/errors): `detail: [{ loc, msg, type }]`
//    (422 validation, content_policy_violation, image_too_large, …: the input's, not retryable) and the
//    X-Fal-Retryable header.
//  - Reliability (https://fal.ai/docs/documentation/model-apis/inference/reliability): the queue already
//    retried a request failing with 503/504/connection errors up to 10 times, and "failed requests that
//    return 5xx status codes are not billed".
// So an infrastructure failure is retried here too and then moves the job to its next route (the
// request failed unbilled: `ended`), never a final failure; fal-js also retries the result call on
// 429/502/503/504 whatever the type (fal.ts falResultRetryStatuses).
import { errorTable, type ErrorFacts, type ErrorTable } from '../../activities/providers/error-table.js';

const requestErrors = 'https://fal.ai/docs/documentation/model-apis/request-errors';
const modelErrors = 'https://fal.ai/docs/documentation/model-apis/errors';

/** fal's infrastructure-level error types (Request Error Types). */
export const falInfrastructureErrorTypes = [
  'request_timeout',
  'startup_timeout',
  'runner_scheduling_failure',
  'runner_connection_timeout',
  'runner_disconnected',
  'runner_connection_refused',
  'runner_connection_error',
  'runner_incomplete_response',
  'runner_server_error',
  'internal_error',
] as const;

export const falErrors: ErrorTable = errorTable([
  { status: 429, class: 'retry', says: 'rate limited', source: 'fal-js retry.ts DEFAULT_RETRYABLE_STATUS_CODES' },
  { code: falInfrastructureErrorTypes, class: 'retry', ended: true, says: 'provider error', source: requestErrors },
  { code: ['client_disconnected', 'client_cancelled'], class: 'final', says: 'request dropped', source: requestErrors },
  { code: 'bad_request', class: 'customer', says: 'request rejected', source: requestErrors },
  { code: 'content_policy_violation', class: 'customer', says: "rejected by the provider's content policy", source: modelErrors },
  { header: ['x-fal-retryable', /^true$/i], class: 'retry', ended: true, says: 'provider error', source: modelErrors },
  // The endpoint is unknown to fal's queue: the model is gone from this route. Before the generic 4xx
  // row below: fal's 404 for an unknown endpoint may carry an error type, and a gone model is the
  // route's, never the customer's.
  { status: 404, call: 'submit', class: 'failover', reason: 'route', says: 'the model is not served on this route', source: 'fal Queue API' },
  // A model's 4xx error type (validation, file and format checks): the input's.
  { status: '4xx', code: /./, class: 'customer', says: 'request rejected', source: modelErrors },
  // A request fal no longer knows: it will not deliver; retried, then another route.
  { status: 404, call: 'check', class: 'retry', ended: true, says: 'the request is unknown to the provider' },
  // A result answering 500 without a type: the run failed on fal's side (500 is never fal's edge), unbilled.
  { status: 500, call: 'check', class: 'retry', ended: true, says: 'provider error', source: requestErrors },
]);

/** fal's error type of an answer: the X-Fal-Error-Type header, `error_type`, or a model error's `detail[].type`. */
export function falErrorType(headers: Headers | undefined, bodyText: string): string | undefined {
  const header = headers?.get('x-fal-error-type')?.trim();
  if (header) return header;
  try {
    const body = JSON.parse(bodyText) as { error_type?: unknown; detail?: unknown } | null;
    if (typeof body?.error_type === 'string' && body.error_type) return body.error_type;
    const first = Array.isArray(body?.detail) ? (body.detail[0] as { type?: unknown } | undefined) : undefined;
    return typeof first?.type === 'string' && first.type ? first.type : undefined;
  } catch {
    return undefined;
  }
}

/** The facts of one fal answer. */
export function falFacts(res: Pick<Response, 'status' | 'headers'>, text: string, call: 'submit' | 'check'): ErrorFacts {
  return { status: res.status, code: falErrorType(res.headers, text), text, headers: res.headers, call };
}
