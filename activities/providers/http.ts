// Shared HTTP plumbing of the real provider adapters: fetch with a timeout tied to the activity's
// cancellation signal, and one mapping of provider answers to ProviderError — 429, 5xx, 408 and
// network failures are retryable (honouring Retry-After or a rate-limit reset header), other 4xx
// and content-policy rejections are not. Messages name the provider and its reason, never a key.
import { ProviderError } from './types.js';
import { SpanKind, withSpan } from '../../shared/tracing.js';
import { redactPath } from '../../shared/redact.js';

export interface HttpCallOptions {
  /** Provider name for messages ("fal", "OpenAI", …). */
  provider: string;
  /** What the call does, for messages ("submit", "status", …). */
  what: string;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Secrets to scrub from anything echoed back into a message. */
  secrets?: readonly (string | undefined)[];
}

export const defaultTimeoutMs = 30_000;

/** fetch that gives up after `timeoutMs` or when `signal` aborts, mapping network failures to ProviderError. */
export function providerFetch(url: string, init: RequestInit, opts: HttpCallOptions): Promise<Response> {
  // The URL's path only: query strings may carry tokens (signed CDN links).
  const { origin, pathname } = new URL(url);
  const attributes = {
    'http.request.method': init.method ?? 'GET',
    'server.address': origin,
    'url.path': redactPath(pathname),
    'mediagen.provider': opts.provider,
    'mediagen.provider.call': opts.what,
  };
  return withSpan(
    `${opts.provider} ${opts.what}`,
    attributes,
    async (span) => {
      const response = await fetchProvider(url, init, opts);
      span?.setAttribute('http.response.status_code', response.status);
      return response;
    },
    SpanKind.CLIENT,
  );
}

async function fetchProvider(url: string, init: RequestInit, opts: HttpCallOptions): Promise<Response> {
  const timeout = AbortSignal.timeout(opts.timeoutMs);
  const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
  try {
    return await fetch(url, { ...init, signal, redirect: 'error' });
  } catch (err) {
    if (opts.signal?.aborted) throw err;
    const timedOut = timeout.aborted;
    const reason = timedOut ? `timed out after ${opts.timeoutMs} ms` : `network error (${scrub(errorText(err), opts.secrets)})`;
    throw new ProviderError(`${opts.provider} ${opts.what}: ${reason}`, { retryable: true });
  }
}

/** Calls a JSON endpoint: non-2xx answers throw a mapped ProviderError, a body that is not JSON throws a clear one. */
export async function requestJson<T = unknown>(url: string, init: RequestInit, opts: HttpCallOptions): Promise<{ body: T; response: Response }> {
  const response = await providerFetch(url, init, opts);
  const text = await readText(response, opts);
  if (!response.ok) throw errorFromResponse(response, text, opts);
  return { body: parseJson<T>(text, opts), response };
}

export async function readText(response: Response, opts: HttpCallOptions): Promise<string> {
  try {
    return await response.text();
  } catch (err) {
    throw new ProviderError(`${opts.provider} ${opts.what}: the answer was cut off (${scrub(errorText(err), opts.secrets)})`, {
      retryable: true,
      status: response.status,
    });
  }
}

export function parseJson<T>(text: string, opts: HttpCallOptions): T {
  try {
    const v = JSON.parse(text) as unknown;
    if (v === null || typeof v !== 'object') throw new Error('not an object');
    return v as T;
  } catch {
    throw malformed(opts, `expected a JSON object, got ${describeBody(text)}`);
  }
}

/** A provider answered 2xx with something its documented protocol does not allow. */
export function malformed(opts: Pick<HttpCallOptions, 'provider' | 'what' | 'secrets'>, detail: string): ProviderError {
  return new ProviderError(`${opts.provider} ${opts.what}: malformed answer: ${scrub(detail, opts.secrets)}`, { retryable: false });
}

const contentPolicyPattern = /content[ _-]?polic|moderation|safety|nsfw|violat|blocked|flagged/i;

/** Maps a non-2xx answer to a ProviderError with the provider's own reason. */
export function errorFromResponse(response: Response, bodyText: string, opts: Pick<HttpCallOptions, 'provider' | 'what' | 'secrets'>): ProviderError {
  const status = response.status;
  const reason = scrub(providerReason(bodyText), opts.secrets);
  const prefix = `${opts.provider} ${opts.what}`;
  // OpenAI's 429 `insufficient_quota`: the account is out of credit; waiting does not help.
  if (status === 429 && /insufficient_quota/.test(bodyText)) {
    return new ProviderError(`${prefix}: the provider account has no quota left (HTTP 429); check its billing${reason ? `: ${reason}` : ''}`, {
      retryable: false,
      status,
      account: true,
    });
  }
  if (status === 429) {
    const retryAfterMs = retryAfterFromHeaders(response.headers);
    const wait = retryAfterMs !== undefined ? `; retry after ${Math.ceil(retryAfterMs / 1000)} s` : '';
    return new ProviderError(`${prefix}: rate limited (HTTP 429)${wait}${reason ? `: ${reason}` : ''}`, { retryable: true, retryAfterMs, status });
  }
  if (status >= 500 || status === 408) {
    return new ProviderError(`${prefix}: provider error (HTTP ${status})${reason ? `: ${reason}` : ''}`, {
      retryable: true,
      retryAfterMs: retryAfterFromHeaders(response.headers),
      status,
    });
  }
  if (status === 401 || status === 403) {
    return new ProviderError(
      `${prefix}: the provider refused our credentials (HTTP ${status}); check the API key configuration${reason ? `: ${reason}` : ''}`,
      { retryable: false, status, account: true },
    );
  }
  // Payment required: the account's balance or plan, not the request.
  if (status === 402) {
    return new ProviderError(`${prefix}: the provider account cannot pay for this (HTTP 402); check its billing${reason ? `: ${reason}` : ''}`, {
      retryable: false,
      status,
      account: true,
    });
  }
  if (contentPolicyPattern.test(bodyText)) {
    return new ProviderError(`${prefix}: rejected by the provider's content policy${reason ? `: ${reason}` : ''}`, { retryable: false, status });
  }
  return new ProviderError(`${prefix}: request rejected (HTTP ${status})${reason ? `: ${reason}` : ''}`, { retryable: false, status });
}

/**
 * The wait a provider asked for, in ms: Retry-After (seconds or an HTTP date), Retry-After-Ms, or the
 * rate-limit reset headers (`x-ratelimit-reset-requests: 6m0s`, `ratelimit-reset: 12`, an epoch time).
 */
export function retryAfterFromHeaders(headers: Headers, now = Date.now()): number | undefined {
  const ms = headers.get('retry-after-ms');
  if (ms && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.round(Number(ms));
  const ra = headers.get('retry-after');
  if (ra) {
    const t = ra.trim();
    if (/^\d+(\.\d+)?$/.test(t)) return Math.round(Number(t) * 1000);
    const date = Date.parse(t);
    if (!Number.isNaN(date)) return Math.max(0, date - now);
  }
  for (const name of ['x-ratelimit-reset-requests', 'x-ratelimit-reset-tokens', 'x-ratelimit-reset', 'ratelimit-reset']) {
    const v = headers.get(name);
    if (!v) continue;
    const parsed = parseResetValue(v.trim(), now);
    if (parsed !== undefined) return parsed;
  }
  return undefined;
}

function parseResetValue(v: string, now: number): number | undefined {
  // Go-style durations as OpenAI sends them: "1s", "6m0s", "20ms", "1h2m3.5s".
  const dur = /^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+(?:\.\d+)?)ms)?$/.exec(v);
  if (dur && v !== '' && dur.slice(1).some((x) => x !== undefined)) {
    const [, h, m, s, msPart] = dur;
    return Math.round((Number(h ?? 0) * 3600 + Number(m ?? 0) * 60 + Number(s ?? 0)) * 1000 + Number(msPart ?? 0));
  }
  if (/^\d+(\.\d+)?$/.test(v)) {
    const n = Number(v);
    // A large number is an epoch time (seconds or ms); a small one is seconds to wait.
    if (n > 1e12) return Math.max(0, Math.round(n - now));
    if (n > 1e9) return Math.max(0, Math.round(n * 1000 - now));
    return Math.round(n * 1000);
  }
  const date = Date.parse(v);
  if (!Number.isNaN(date)) return Math.max(0, date - now);
  return undefined;
}

/** The human reason inside a provider's error body (OpenAI, fal, ElevenLabs and xAI shapes), shortened. */
export function providerReason(bodyText: string): string {
  const text = bodyText.trim();
  if (!text) return '';
  let out: string | undefined;
  try {
    out = reasonOf(JSON.parse(text) as unknown);
  } catch {
    out = text.startsWith('<') ? 'non-JSON error page' : text;
  }
  return shorten(out ?? '');
}

/** Error bodies nest a message a few levels deep at most; a deeper (hostile) body is not walked further. */
const MAX_REASON_DEPTH = 8;

function reasonOf(v: unknown, depth = 0): string | undefined {
  if (typeof v === 'string') return v;
  if (depth >= MAX_REASON_DEPTH) return undefined;
  if (Array.isArray(v)) {
    const parts = v.map((x) => reasonOf(x, depth + 1)).filter((x): x is string => !!x);
    return parts.length ? parts.join('; ') : undefined;
  }
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    // fal validation errors: { loc: ['body', 'duration'], msg, type }
    if (typeof o.msg === 'string') {
      const loc = Array.isArray(o.loc) ? o.loc.filter((x) => x !== 'body').join('.') : '';
      return loc ? `${loc}: ${o.msg}` : o.msg;
    }
    for (const k of ['message', 'error', 'detail', 'reason']) {
      const r = reasonOf(o[k], depth + 1);
      if (r) {
        // The machine code beside the message: OpenAI `code` / `type`, ElevenLabs `status`.
        const code = [o.code, k !== 'detail' ? o.type : undefined, o.status].find((c): c is string => typeof c === 'string' && c !== '');
        return code && !r.includes(code) ? `${r} (${code})` : r;
      }
    }
    if (typeof o.status === 'string') return o.status;
  }
  return undefined;
}

function shorten(s: string, max = 300): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, max)}…` : one;
}

export function describeBody(text: string): string {
  const t = text.trim();
  if (!t) return 'an empty body';
  if (t.startsWith('<')) return 'an HTML page';
  return `"${shorten(t, 60)}"`;
}

/** Removes any configured secret from text that may be shown to people. */
export function scrub(text: string, secrets: readonly (string | undefined)[] = []): string {
  let out = text;
  for (const s of secrets) if (s && s.length >= 4) out = out.split(s).join('[redacted]');
  return out;
}

function errorText(err: unknown): string {
  const e = err as { cause?: { code?: string; message?: string }; message?: string };
  return e?.cause?.code ?? e?.cause?.message ?? e?.message ?? String(err);
}

/** A URL the provider gave us is followed (with our key) only when it points at the configured base. */
export function sameOrigin(url: unknown, base: string): url is string {
  if (typeof url !== 'string') return false;
  try {
    return new URL(url).origin === new URL(base).origin;
  } catch {
    return false;
  }
}

/**
 * A provider's API origin from a base URL given with or without the `/v1` its SDKs include
 * (OPENAI_BASE_URL, xAI's `https://api.x.ai/v1`), so an inherited value does not yield /v1/v1/….
 */
export function apiOrigin(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
}

export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
}
