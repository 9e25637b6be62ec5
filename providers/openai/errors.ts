// OpenAI's answers, classed from OpenAI's "Error codes" guide
// (https://platform.openai.com/docs/guides/error-codes): 401 invalid authentication or key, 403
// unsupported country, region or territory, 429 rate limit reached (retry with backoff) vs 429
// "You exceeded your current quota" (`insufficient_quota`: buy credits), 500 server error and 503
// overloaded or "slow down" (retry). The body is { error: { message, type, param, code } }; an image
// prompt the safety system refuses is a 400 `moderation_blocked` (or content_policy_violation), and a
// model the key cannot use is a 404 `model_not_found`.
import { errorTable, type ErrorFacts, type ErrorTable } from '../../activities/providers/error-table.js';

const errorCodes = 'https://platform.openai.com/docs/guides/error-codes';

/** OpenAI's own codes, before the shared HTTP rows (Azure serves the same API and reuses them). */
export const openaiRows: ErrorTable = [
  {
    code: 'insufficient_quota',
    class: 'failover',
    reason: 'account',
    says: 'the provider account has no quota left',
    hint: 'check its billing',
    source: errorCodes,
  },
  {
    code: /^(billing_hard_limit_reached|billing_not_active)$/,
    class: 'failover',
    reason: 'account',
    says: 'the provider account cannot pay for this',
    hint: 'check its billing',
    source: errorCodes,
  },
  { code: 'unsupported_country_region_territory', class: 'failover', reason: 'route', says: 'the route is not available in our region', source: errorCodes },
  { code: 'model_not_found', class: 'failover', reason: 'route', says: 'the model is not served on this route', source: errorCodes },
  // 403 "Your organization must be verified to use the model `…`. Please go to:
  // https://platform.openai.com/settings/organization/general and click on Verify Organization. If you
  // just verified, it can take up to 15 minutes for access to propagate." (type invalid_request_error,
  // code null: as openai-php/client#565 and openai/openai-go#565 quote it). The key is good; this route
  // cannot serve the model until the organization is verified, so the job moves to another route and the
  // message says what to do, unlike a refused key.
  {
    status: 403,
    text: /organization must be verified/i,
    class: 'failover',
    reason: 'route',
    says: 'our OpenAI organization is not verified for this model',
    hint: 'verify it at platform.openai.com/settings/organization/general (access can take 15 minutes to follow); the API key itself is fine',
    source: errorCodes,
  },
  { code: /^(moderation_blocked|content_policy_violation)$/, class: 'customer', says: "rejected by the provider's content policy", source: errorCodes },
  {
    code: /^(invalid_api_key|invalid_organization)$/,
    class: 'failover',
    reason: 'account',
    says: 'the provider refused our credentials',
    hint: 'check the API key configuration',
    source: errorCodes,
  },
  { code: 'rate_limit_exceeded', class: 'retry', says: 'rate limited', source: errorCodes },
];

export const openaiErrors: ErrorTable = errorTable(openaiRows);

/** The `error.code` (or `error.type`) of an OpenAI-shaped error body. */
export function openaiCodeOf(text: string): string | undefined {
  try {
    const err = (JSON.parse(text) as { error?: { code?: unknown; type?: unknown } } | null)?.error;
    const code = typeof err?.code === 'string' && err.code ? err.code : typeof err?.type === 'string' && err.type ? err.type : undefined;
    return code;
  } catch {
    return undefined;
  }
}

export function openaiFacts(res: Pick<Response, 'status' | 'headers'>, text: string): ErrorFacts {
  return { status: res.status, code: openaiCodeOf(text), text, headers: res.headers };
}
