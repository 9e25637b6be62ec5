// BytePlus ModelArk ("Ark") answers, classed from Ark's public error codes (BytePlus ModelArk
// "Error codes", docs.byteplus.com/en/docs/ModelArk/1299023; the Volcano Engine Ark page of the same
// id, volcengine.com/docs/82379/1299023): an HTTP error is { error: { code, message, param, type } },
// and a failed task carries { code, message } in `error`.
//  - 400 MissingParameter / InvalidParameter: the request's. The *SensitiveContentDetected codes
//    (input or output text, image, video) and risk-detection codes: the content policy, the customer's.
//  - 401 AuthenticationError, 403 AccessDenied, 403 AccountOverdueError, 429 QuotaExceeded and
//    SetLimitExceeded (the account's own spend limit): our account.
//  - 404 InvalidEndpointOrModel.NotFound, 404 ModelNotOpen (the model not activated for our account),
//    InvalidEndpointOrModel.ModelIDAccessDisabled, 400 InvalidEndpoint.ClosedEndpoint: the route.
//  - 429 RateLimitExceeded.* and ServerOverloaded, 500 InternalServiceError: Ark's side, retried.
import { errorTable, type ErrorFacts, type ErrorTable } from '../../activities/providers/error-table.js';

const errorCodes = 'https://docs.byteplus.com/en/docs/ModelArk/1299023';

export const byteplusErrors: ErrorTable = errorTable([
  { code: /Sensitive|RiskDetection/i, class: 'customer', says: "rejected by the provider's content policy", source: errorCodes },
  {
    code: /^(QuotaExceeded|AccountOverdue(Error)?|Overdue|InsufficientBalance|SetLimitExceeded)\b/,
    class: 'failover',
    reason: 'account',
    says: 'the provider account cannot serve this',
    hint: 'check its quota and billing',
    source: errorCodes,
  },
  {
    code: /^(ModelNotOpen|InvalidEndpointOrModel\.(NotFound|ModelIDAccessDisabled)|InvalidEndpoint\.(NotFound|ClosedEndpoint))$/,
    class: 'failover',
    reason: 'route',
    says: 'the model is not served on this route',
    hint: 'check the enabled models and endpoints',
    source: errorCodes,
  },
  {
    code: /^(AuthenticationError|AccessDenied)\b/,
    class: 'failover',
    reason: 'account',
    says: 'the provider refused our credentials',
    hint: 'check the API key configuration',
    source: errorCodes,
  },
  { code: /^(RateLimitExceeded|ServerOverloaded)\b/, class: 'retry', says: 'rate limited', source: errorCodes },
  { code: /InternalServiceError|InternalError|ServiceUnavailable|Timeout/i, class: 'retry', says: 'provider error', source: errorCodes },
  { code: /^(MissingParameter|InvalidParameter)\b/, class: 'customer', says: 'request rejected', source: errorCodes },
]);

/** Ark's error of a body: { error: { code, message } } or the error object itself. */
function arkErrorOf(text: string): { code?: unknown; message?: unknown } | undefined {
  try {
    const body = JSON.parse(text) as { error?: unknown } | null;
    const err = (body && typeof body === 'object' && 'error' in body ? body.error : body) as { code?: unknown; message?: unknown } | undefined;
    return err && typeof err === 'object' ? err : undefined;
  } catch {
    return undefined;
  }
}

export function byteplusFacts(res: Pick<Response, 'status' | 'headers'>, text: string): ErrorFacts {
  const code = arkErrorOf(text)?.code;
  return { status: res.status, code: typeof code === 'string' && code ? code : undefined, text, headers: res.headers };
}
