// The text of a provider's error answer: the human reason inside its body (shortened, secrets
// scrubbed) and the wait it asked for in its headers. Shared by http.ts and error-table.ts.

/**
 * The wait a provider asked for, in ms: Retry-After (seconds or an HTTP date) or Retry-After-Ms on any
 * answer, and, on a 429 only, the rate-limit reset headers (`x-ratelimit-reset-requests: 6m0s`,
 * `ratelimit-reset: 12`, an epoch time). Those say when a rate-limit window refills: OpenAI sends them
 * on every answer (platform.openai.com/docs/guides/rate-limits, "Rate limits in headers"), so on a 500
 * or 503 they tell nothing about when the provider recovers and would only delay the retry.
 */
export function retryAfterFromHeaders(headers: Headers, now = Date.now(), status?: number): number | undefined {
  const ms = headers.get('retry-after-ms');
  if (ms && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.round(Number(ms));
  const ra = headers.get('retry-after');
  if (ra) {
    const t = ra.trim();
    if (/^\d+(\.\d+)?$/.test(t)) return Math.round(Number(t) * 1000);
    const date = Date.parse(t);
    if (!Number.isNaN(date)) return Math.max(0, date - now);
  }
  if (status !== 429) return undefined;
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
