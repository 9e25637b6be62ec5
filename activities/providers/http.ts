// Shared HTTP plumbing of the real provider adapters: fetch with a timeout tied to the activity's
// cancellation signal, and the mapping of an answer to ProviderError by its status alone (the shared
// rows of error-table.ts: 429, 5xx, 408 and network failures are retryable, honouring Retry-After or
// a rate-limit reset header; other 4xx are not). Adapters class their provider's own codes first
// (providers/<name>/errors.ts). Messages name the provider and its reason, never a key.
import { ProviderError } from './types.js';
import { SpanKind, withSpan } from '../../shared/tracing.js';
import { describeBody, scrub } from './error-text.js';
import { classify, errorOfRow, httpRows } from './error-table.js';
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

export { describeBody, providerReason, retryAfterFromHeaders, scrub } from './error-text.js';

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

function errorText(err: unknown): string {
  const e = err as { cause?: { code?: string; message?: string }; message?: string };
  return e?.cause?.code ?? e?.cause?.message ?? e?.message ?? String(err);
}

/** Maps a non-2xx answer to a ProviderError by its status alone (error-table.ts httpRows), with the provider's own reason. */
export function errorFromResponse(response: Response, bodyText: string, opts: Pick<HttpCallOptions, 'provider' | 'what' | 'secrets'>): ProviderError {
  const facts = { status: response.status, text: bodyText, headers: response.headers };
  return errorOfRow(classify(httpRows, facts), facts, opts);
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
