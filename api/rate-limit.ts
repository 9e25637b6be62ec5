// Per-key rate limits shared by every gateway replica: one row per (key, class) in Postgres holds
// a fixed one-minute window that opens at the key's first request. One atomic upsert per request
// counts it, so the limit is exact however many requests or replicas race. The same statement
// only counts for a key that is not revoked, so a revocation is seen on the very next request
// whatever any replica's key cache says.
import { sql } from 'kysely';
import type { RequestHandler, Response } from 'express';
import type { Queryable } from '../db/index.js';
import { ApiError } from './errors.js';

export type RateClass = 'poll' | 'generate';

export const RATE_WINDOW_MS = 60_000;

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Milliseconds until the window resets (0 or more). */
  resetMs: number;
}

/**
 * Counts one request of `apiKeyId` in class `cls`. Returns null when the key no longer exists or
 * is revoked (the caller answers 401).
 */
export async function consumeRateLimit(db: Queryable, apiKeyId: string, cls: RateClass, limit: number, windowMs = RATE_WINDOW_MS): Promise<RateDecision | null> {
  const window = `${windowMs} milliseconds`;
  // The row lock taken by ON CONFLICT DO UPDATE serialises concurrent requests of one key.
  // Postgres' clock is the only clock, so replicas with skewed clocks still agree.
  const result = await sql<{ count: number; reset_ms: string }>`
    insert into rate_limits as r (api_key_id, class, window_start, count)
    select k.id, ${cls}, now(), 1
      from api_keys k
     where k.id = ${apiKeyId} and k.revoked_at is null
    on conflict (api_key_id, class) do update set
      window_start = case when r.window_start + ${window}::interval <= now() then now() else r.window_start end,
      count = case when r.window_start + ${window}::interval <= now() then 1 else least(r.count, ${limit}) + 1 end
    returning r.count,
      ceil(extract(epoch from (r.window_start + ${window}::interval - now())) * 1000)::text as reset_ms
  `.execute(db);
  const row = result.rows[0];
  if (!row) return null;
  const count = Number(row.count);
  const resetMs = Math.max(0, Number(row.reset_ms));
  return { allowed: count <= limit, limit, remaining: Math.max(0, limit - count), resetMs };
}

/** RateLimit-* headers on every answer of a rate-limited route; Retry-After on refusals. */
export function setRateLimitHeaders(res: Response, d: RateDecision): void {
  const resetSeconds = Math.ceil(d.resetMs / 1000);
  res.setHeader('RateLimit-Limit', String(d.limit));
  res.setHeader('RateLimit-Remaining', String(d.remaining));
  res.setHeader('RateLimit-Reset', String(resetSeconds));
  if (!d.allowed) res.setHeader('Retry-After', String(Math.max(1, resetSeconds)));
}

export function rateLimitedError(cls: RateClass, d: RateDecision): ApiError {
  // At least 1 ms: a refusal always asks the client to wait a little.
  const retryAfterMs = Math.max(1, d.resetMs);
  const what = cls === 'generate' ? 'generation' : 'discovery and polling';
  return new ApiError(429, 'rate_limited', `rate limit of ${d.limit} ${what} requests per minute exceeded; retry in ${retryAfterMs} ms`, {
    retry_after_ms: retryAfterMs,
  });
}

export interface RateLimiterDeps {
  db: Queryable;
  limits: Record<RateClass, number>;
  onRefused?: (cls: RateClass) => void;
  onRevoked?: (apiKeyId: string) => void;
  windowMs?: number;
}

/** Express middleware for one class; expects res.locals.auth from the auth middleware. */
export function rateLimitMiddleware(deps: RateLimiterDeps, cls: RateClass): RequestHandler {
  return async (_req, res, next) => {
    try {
      const auth = res.locals.auth as { apiKeyId: string } | undefined;
      if (!auth) throw new ApiError(401, 'unauthorized', 'missing API key');
      const d = await consumeRateLimit(deps.db, auth.apiKeyId, cls, deps.limits[cls], deps.windowMs);
      if (!d) {
        deps.onRevoked?.(auth.apiKeyId);
        throw new ApiError(401, 'unauthorized', 'invalid or revoked API key');
      }
      setRateLimitHeaders(res, d);
      if (!d.allowed) {
        deps.onRefused?.(cls);
        throw rateLimitedError(cls, d);
      }
      next();
    } catch (err) {
      next(err);
    }
  };
}
