// Alibaba Cloud Model Studio (DashScope) answers, classed from Alibaba's error code reference
// (https://help.aliyun.com/en/model-studio/error-code, quick table at …/error-code-start): an HTTP
// error is { request_id, code, message }, and a FAILED task carries the same codes in output.code.
//  - 400 InvalidParameter: the request's. 400 DataInspectionFailed (data_inspection_failed): content
//    moderation refused the input or output: the customer's.
//  - 400/403 Arrearage: overdue payment; 401 InvalidApiKey; 403 AccessDenied (and .Unpurchased): our
//    account.
//  - 404 ModelNotFound / NotFound: the model is not available in the region or under this name: the
//    route's, so the job moves on at once.
//  - 429 Throttling, Throttling.RateQuota, Throttling.BurstRate: rate limits, retried.
//    429 Throttling.AllocationQuota (insufficient_quota): a quota allocation used up (e.g. the free
//    quota), which waiting does not lift: our account.
//  - 500 InternalError (and InternalError.Algo …), 503 ServiceUnavailable, 504 GatewayTimeout:
//    Alibaba's side, retried.
import { errorTable, type ErrorFacts, type ErrorTable } from '../../activities/providers/error-table.js';

const errorCodes = 'https://help.aliyun.com/en/model-studio/error-code';

export const alibabaErrors: ErrorTable = errorTable([
  {
    code: 'Arrearage',
    class: 'failover',
    reason: 'account',
    says: 'the provider account is in arrears',
    hint: 'check its billing',
    source: errorCodes,
  },
  {
    code: /^(Throttling\.)?AllocationQuota\b|^insufficient_quota$/,
    class: 'failover',
    reason: 'account',
    says: "the provider account's quota is used up",
    hint: 'check its quota and free tier',
    source: errorCodes,
  },
  { code: /^Throttling(\.|$)/, class: 'retry', says: 'rate limited', source: errorCodes },
  { code: ['ModelNotFound', 'NotFound'], class: 'failover', reason: 'route', says: 'the model is not served on this route', source: errorCodes },
  {
    code: /^(InvalidApiKey|invalid_api_key|AccessDenied)(\.|$)/,
    class: 'failover',
    reason: 'account',
    says: 'the provider refused our credentials',
    hint: 'check the API key configuration',
    source: errorCodes,
  },
  { code: /^(DataInspectionFailed|data_inspection_failed)$/, class: 'customer', says: "rejected by the provider's content moderation", source: errorCodes },
  { code: /^(InternalError|ServiceUnavailable|GatewayTimeout|SystemError)(\.|$)/, class: 'retry', says: 'provider error', source: errorCodes },
  { code: /^InvalidParameter(\.|$)/, class: 'customer', says: 'request rejected', source: errorCodes },
]);

/** The DashScope code of an error body ({ code }). */
function dashscopeCodeOf(text: string): string | undefined {
  try {
    const body = JSON.parse(text) as { code?: unknown } | null;
    return typeof body?.code === 'string' && body.code ? body.code : undefined;
  } catch {
    return undefined;
  }
}

export function alibabaFacts(res: Pick<Response, 'status' | 'headers'>, text: string): ErrorFacts {
  return { status: res.status, code: dashscopeCodeOf(text), text, headers: res.headers };
}
