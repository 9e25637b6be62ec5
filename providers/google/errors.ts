// The Gemini API's answers, classed from Google's own documentation:
//  - Troubleshooting (https://ai.google.dev/gemini-api/docs/troubleshooting), "Backend error codes":
//    400 INVALID_ARGUMENT (the request body is malformed), 400 FAILED_PRECONDITION (the free tier is
//    not available in our country and billing is not enabled), 403 PERMISSION_DENIED (the key lacks
//    permissions), 404 NOT_FOUND (the requested resource, e.g. the model, was not found), 429
//    RESOURCE_EXHAUSTED (a rate limit: "ensure you're within the model's rate limit"), 500 INTERNAL,
//    503 UNAVAILABLE, 504 DEADLINE_EXCEEDED (Google's side: retry, or switch model).
//  - Rate limits (https://ai.google.dev/gemini-api/docs/rate-limits): limits are per minute (RPM, TPM)
//    and per day (RPD, reset at midnight Pacific); a 429's body names the limit hit in a
//    google.rpc.QuotaFailure (`violations[].quotaId`, e.g. "…PerDayPerProjectPerModel…") and the wait in
//    a google.rpc.RetryInfo (`retryDelay: "52s"`), the error model of https://google.aip.dev/193.
// A missing model or a project precondition (billing, region) is the route's, never the customer's:
// the job moves to its next route at once. A per-minute 429 is retried after Google's retryDelay; a
// daily quota, or a 429 that names the plan and billing with no wait to honour, is our account's.
// Operation errors carry the same canonical codes as numbers (google.rpc.Code).
import { errorTable, type ErrorFacts, type ErrorTable } from '../../activities/providers/error-table.js';

const troubleshooting = 'https://ai.google.dev/gemini-api/docs/troubleshooting';
const rateLimits = 'https://ai.google.dev/gemini-api/docs/rate-limits';

/** google.rpc.Code numbers → their canonical names (an operation's `error.code`). */
export const googleRpcCodes: Readonly<Record<number, string>> = {
  1: 'CANCELLED',
  2: 'UNKNOWN',
  3: 'INVALID_ARGUMENT',
  4: 'DEADLINE_EXCEEDED',
  5: 'NOT_FOUND',
  6: 'ALREADY_EXISTS',
  7: 'PERMISSION_DENIED',
  8: 'RESOURCE_EXHAUSTED',
  9: 'FAILED_PRECONDITION',
  10: 'ABORTED',
  11: 'OUT_OF_RANGE',
  12: 'UNIMPLEMENTED',
  13: 'INTERNAL',
  14: 'UNAVAILABLE',
  15: 'DATA_LOSS',
  16: 'UNAUTHENTICATED',
};

interface GoogleErrorDetail {
  '@type'?: unknown;
  violations?: { quotaId?: unknown; quotaMetric?: unknown }[];
  retryDelay?: unknown;
}

function detailsOf(text: string | undefined): GoogleErrorDetail[] {
  try {
    const body = JSON.parse(text ?? '') as { error?: { details?: unknown } } | null;
    const details = body?.error?.details;
    return Array.isArray(details) ? (details.filter((d) => d && typeof d === 'object') as GoogleErrorDetail[]) : [];
  } catch {
    return [];
  }
}

const typeIs = (d: GoogleErrorDetail, name: string) => typeof d['@type'] === 'string' && d['@type'].endsWith(`google.rpc.${name}`);

/** The wait a 429's RetryInfo asks for ("52s", "1.5s"), in ms. */
export function googleRetryDelayMs(text: string | undefined): number | undefined {
  const info = detailsOf(text).find((d) => typeIs(d, 'RetryInfo'));
  const m = typeof info?.retryDelay === 'string' ? /^(\d+(?:\.\d+)?)s$/.exec(info.retryDelay.trim()) : null;
  return m ? Math.round(Number(m[1]) * 1000) : undefined;
}

const daily = /per ?day|daily/i;

/**
 * A quota that waiting a minute does not lift: a QuotaFailure naming a daily limit, a message naming
 * one, or Google's "check your plan and billing details" with no RetryInfo to wait for.
 */
function googleQuotaExhausted(f: ErrorFacts): boolean {
  const details = detailsOf(f.text);
  const violations = details.filter((d) => typeIs(d, 'QuotaFailure')).flatMap((d) => (Array.isArray(d.violations) ? d.violations : []));
  if (violations.some((v) => daily.test(`${String(v.quotaId ?? '')} ${String(v.quotaMetric ?? '')}`))) return true;
  const message = f.reason ?? f.text ?? '';
  if (daily.test(message)) return true;
  return !details.some((d) => typeIs(d, 'RetryInfo')) && /plan and billing/i.test(message);
}

export const googleErrors: ErrorTable = errorTable([
  {
    code: 'FAILED_PRECONDITION',
    class: 'failover',
    reason: 'route',
    says: 'the route is not available to our project',
    hint: 'check its billing and region',
    source: troubleshooting,
  },
  // Our own operation is gone: it will not deliver; retried, then another route.
  { status: 404, call: 'check', class: 'retry', ended: true, says: 'the operation is unknown to the provider', source: troubleshooting },
  { code: 'NOT_FOUND', class: 'failover', reason: 'route', says: 'the model is not served on this route', source: troubleshooting },
  { status: 404, class: 'failover', reason: 'route', says: 'the model is not served on this route', source: troubleshooting },
  {
    code: ['PERMISSION_DENIED', 'UNAUTHENTICATED'],
    class: 'failover',
    reason: 'account',
    says: 'the provider refused our credentials',
    hint: 'check the API key configuration',
    source: troubleshooting,
  },
  {
    code: 'RESOURCE_EXHAUSTED',
    when: googleQuotaExhausted,
    class: 'failover',
    reason: 'account',
    says: "the provider account's quota is exhausted",
    hint: 'check its plan and billing',
    source: rateLimits,
  },
  // Prepay credits used up (402 RESOURCE_EXHAUSTED) is the shared 402 row: our account.
  { status: 402, class: 'failover', reason: 'account', says: 'the provider account cannot pay for this', hint: 'check its billing', source: troubleshooting },
  { code: 'RESOURCE_EXHAUSTED', class: 'retry', says: 'rate limited', source: rateLimits },
  { code: ['INTERNAL', 'UNAVAILABLE', 'DEADLINE_EXCEEDED', 'ABORTED', 'UNKNOWN'], class: 'retry', says: 'provider error', source: troubleshooting },
  { code: ['INVALID_ARGUMENT', 'OUT_OF_RANGE'], class: 'customer', says: 'request rejected', source: troubleshooting },
]);

/** The facts of a Gemini API error answer ({ error: { code, message, status, details } }). */
export function googleFacts(res: Pick<Response, 'status' | 'headers'>, text: string, call: 'submit' | 'check'): ErrorFacts {
  let code: string | undefined;
  try {
    const status = (JSON.parse(text) as { error?: { status?: unknown } } | null)?.error?.status;
    code = typeof status === 'string' && status ? status : undefined;
  } catch {
    code = undefined;
  }
  return { status: res.status, code, text, headers: res.headers, call };
}
