// Per-key rate limits shared by every gateway replica, without a Postgres write per request.
//
// Model. Each replica leases blocks of tokens per (key, class) from Postgres (`rate_limit_lease`,
// db/migrations/0002_job_progress.ts) and spends them locally. A lease is one row-locked function
// call that records (expiry, tokens); a block of n > 1 tokens may be spent until its expiry, L =
// LEASE_MS after it was granted, a single token is spent at once (expiry = grant). A lease is
// granted only while the tokens of every lease whose expiry lies within the last W (the window)
// plus the new block stay within the limit, and a block is at most a quarter of what is left.
//
// Bounds (W = window, 60 s; L = LEASE_MS; N = limit):
// - Never over-admitted: in ANY interval of length W, at most N requests of one key and class are
//   admitted, over all replicas together. Every token is spent between its lease's grant and its
//   expiry, and the last lease granted among those spent in the interval counted all the others.
//   Unused tokens are lost when their lease expires, never handed out twice.
// - Cost: one Postgres round trip per lease, not per request. A replica asks for about as many
//   tokens as the key sent it in the last half lease period (at least the requests waiting), so a
//   steady client costs one round trip per ~L/2 of traffic; concurrent requests of one key share
//   one in-flight lease. A key that was refused is answered from memory until the oldest lease
//   leaves the window (no round trip at all while it hammers).
// - Under-admission: tokens leased by a replica that then receives no traffic for that key are
//   lost until they leave the window: at most a quarter of what was left per lease and replica,
//   so with R replicas the first 429 comes within about R * N/4 of the limit in the worst case,
//   and within a few requests when the key's traffic is spread evenly (blocks shrink as the budget
//   runs out, down to single tokens).
// - Headers: RateLimit-Limit is N. RateLimit-Remaining is this replica's unspent tokens plus what
//   the shared budget had left at its last lease; with several replicas it can be stale by what
//   the others leased since (never counted twice on one replica). RateLimit-Reset /
//   retry_after_ms: when the oldest lease counted leaves the window (at least one token is free
//   again); a refusal's hint is never early.
// - Postgres unreachable or slow (own small pool with connect and statement timeouts): a replica
//   spends the tokens it already holds, then fails closed with 503 `service_unavailable` and
//   Retry-After for both classes; every polling route reads Postgres anyway.
// - Revocation: the lease refuses revoked keys; between leases, the gateway's key cache is evicted
//   by the revocation NOTIFY (api/auth.ts), so a revoked key stops at the next request on every
//   replica.
import { sql } from 'kysely';
import type { RequestHandler, Response } from 'express';
import type { Queryable } from '../db/index.js';
import { ApiError } from './errors.js';

/** poll: reads; generate: creates; redeliver: webhook redeliveries (each sends a request to the customer's receiver). */
import type { RateClass } from './operations.js';
export type { RateClass };

export const RATE_WINDOW_MS = 60_000;
/** How long a block of leased tokens may be spent; a short window shortens it too. */
const LEASE_MS = 2_000;
const MAX_BLOCK = 10_000;
const BUCKETS_MAX = 100_000;
const UNAVAILABLE_RETRY_S = 1;

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Milliseconds until the window resets (0 or more). */
  resetMs: number;
}

export interface Lease {
  granted: number;
  /** Tokens of every lease in the window, this one included. */
  used: number;
  /** Milliseconds until the oldest counted lease leaves the window. */
  resetMs: number;
}

function leaseMsFor(windowMs: number): number {
  return Math.min(LEASE_MS, Math.floor(windowMs / 10));
}

/** One lease round trip. Null when the key no longer exists or is revoked (the caller answers 401). */
async function leaseTokens(db: Queryable, apiKeyId: string, cls: RateClass, want: number, limit: number, windowMs = RATE_WINDOW_MS): Promise<Lease | null> {
  const r = await sql<{ granted_tokens: number; used_tokens: number; reset_after_ms: number }>`
    select granted_tokens, used_tokens, reset_after_ms
      from rate_limit_lease(${apiKeyId}, ${cls}, ${want}::integer, ${limit}::integer, ${windowMs}::integer, ${leaseMsFor(windowMs)}::integer)
  `.execute(db);
  const row = r.rows[0];
  if (!row) return null;
  return { granted: row.granted_tokens, used: row.used_tokens, resetMs: Math.max(0, row.reset_after_ms) };
}

/** Counts one request straight in Postgres (one round trip); the gateway leases blocks instead. */
export async function consumeRateLimit(
  db: Queryable,
  apiKeyId: string,
  cls: RateClass,
  limit: number,
  windowMs = RATE_WINDOW_MS,
): Promise<RateDecision | null> {
  const lease = await leaseTokens(db, apiKeyId, cls, 1, limit, windowMs);
  if (!lease) return null;
  return { allowed: lease.granted > 0, limit, remaining: Math.max(0, limit - lease.used), resetMs: lease.resetMs };
}

/** RateLimit-* headers on every answer of a rate-limited route; Retry-After on refusals. */
export function setRateLimitHeaders(res: Response, d: RateDecision): void {
  const resetSeconds = Math.ceil(d.resetMs / 1000);
  res.setHeader('RateLimit-Limit', String(d.limit));
  res.setHeader('RateLimit-Remaining', String(d.remaining));
  res.setHeader('RateLimit-Reset', String(resetSeconds));
  if (!d.allowed) res.setHeader('Retry-After', String(Math.max(1, resetSeconds)));
}

function rateLimitedError(cls: RateClass, d: RateDecision): ApiError {
  // At least 1 ms: a refusal always asks the client to wait a little.
  const retryAfterMs = Math.max(1, d.resetMs);
  const what = cls === 'generate' ? 'generation' : cls === 'redeliver' ? 'webhook redelivery' : 'discovery and polling';
  return new ApiError(429, 'rate_limited', `rate limit of ${d.limit} ${what} requests per minute exceeded; retry in ${retryAfterMs} ms`, {
    retry_after_ms: retryAfterMs,
  });
}

/** One (key, class) on this replica. Times are this process's monotonic clock. */
interface Bucket {
  /** Unspent leased tokens, usable until `tokensUntil`. */
  tokens: number;
  tokensUntil: number;
  /** What the shared budget had left after this replica's last lease. */
  shared: number;
  /** When the oldest lease counted at the last lease leaves the window. */
  resetAt: number;
  /** Refused by Postgres: answer 429 from memory until then. */
  refusedUntil: number;
  revoked: boolean;
  leasing: Promise<void> | null;
  waiting: number;
  /** Arrivals in the current and the previous half lease period, to size the next lease. */
  arrivals: number;
  prevArrivals: number;
  periodStart: number;
  lastSeen: number;
}

interface RateLimiterDeps {
  db: Queryable;
  limits: Record<RateClass, number>;
  onRefused?: (cls: RateClass) => void;
  onRevoked?: (apiKeyId: string) => void;
  onUnavailable?: (err: unknown) => void;
  windowMs?: number;
  /** Monotonic milliseconds; tests may inject one. */
  now?: () => number;
}

interface RateLimiter {
  /** Admits or refuses one request; null for a revoked key; throws 503 when Postgres fails. */
  take(apiKeyId: string, cls: RateClass): Promise<RateDecision | null>;
  middleware(cls: RateClass): RequestHandler;
  /** Round trips to Postgres so far (for tests and benchmarks). */
  leases(): number;
}

export function createRateLimiter(deps: RateLimiterDeps): RateLimiter {
  const windowMs = deps.windowMs ?? RATE_WINDOW_MS;
  const leaseMs = leaseMsFor(windowMs);
  const period = Math.max(1, Math.floor(leaseMs / 2));
  const now = deps.now ?? (() => performance.now());
  const buckets = new Map<string, Bucket>();
  let roundTrips = 0;

  function bucketOf(apiKeyId: string, cls: RateClass, t: number): Bucket {
    const id = `${cls}:${apiKeyId}`;
    let b = buckets.get(id);
    if (!b) {
      if (buckets.size >= BUCKETS_MAX) evictIdle(t);
      b = {
        tokens: 0,
        tokensUntil: 0,
        shared: 0,
        resetAt: 0,
        refusedUntil: 0,
        revoked: false,
        leasing: null,
        waiting: 0,
        arrivals: 0,
        prevArrivals: 0,
        periodStart: t,
        lastSeen: t,
      };
      buckets.set(id, b);
    }
    return b;
  }

  /** Drops buckets that hold nothing worth keeping (no tokens, no refusal, no lease in flight). */
  function evictIdle(t: number): void {
    for (const [id, b] of buckets) {
      if (!b.leasing && t >= b.tokensUntil && t >= b.refusedUntil) buckets.delete(id);
    }
    // Still full: drop the oldest; it costs at most one extra lease (refusals are re-learned).
    if (buckets.size >= BUCKETS_MAX) buckets.delete(buckets.keys().next().value!);
  }

  function countArrival(b: Bucket, t: number): void {
    if (t - b.periodStart >= period) {
      b.prevArrivals = t - b.periodStart >= 2 * period ? 0 : b.arrivals;
      b.arrivals = 0;
      b.periodStart = t;
    }
    b.arrivals++;
    b.lastSeen = t;
  }

  async function lease(apiKeyId: string, cls: RateClass, b: Bucket): Promise<void> {
    // Enough for what arrived in the last half lease period: spent well before the lease expires.
    const want = Math.min(MAX_BLOCK, Math.max(1, b.waiting, b.arrivals, b.prevArrivals));
    const sent = now();
    roundTrips++;
    const got = await leaseTokens(deps.db, apiKeyId, cls, want, deps.limits[cls], windowMs);
    const t = now();
    if (!got) {
      b.revoked = true;
      return;
    }
    // Tokens are spendable until their expiry as Postgres set it; `sent` is earlier than its clock read.
    b.tokens = got.granted;
    b.tokensUntil = sent + (got.granted > 1 ? leaseMs : Number.POSITIVE_INFINITY);
    b.shared = Math.max(0, deps.limits[cls] - got.used);
    // `t` is later than Postgres' clock read: hints are never early.
    b.resetAt = t + got.resetMs;
    if (got.granted === 0) b.refusedUntil = t + Math.max(1, got.resetMs);
  }

  async function take(apiKeyId: string, cls: RateClass): Promise<RateDecision | null> {
    const limit = deps.limits[cls];
    const b = bucketOf(apiKeyId, cls, now());
    countArrival(b, now());
    for (;;) {
      if (b.revoked) return null;
      const t = now();
      if (b.tokens > 0 && t < b.tokensUntil) {
        b.tokens--;
        // A single token is spent now; only a block's tokens wait for later requests.
        if (b.tokens === 0) b.tokensUntil = 0;
        return { allowed: true, limit, remaining: b.tokens + b.shared, resetMs: Math.max(0, Math.ceil(b.resetAt - t)) };
      }
      if (t < b.refusedUntil) return { allowed: false, limit, remaining: 0, resetMs: Math.ceil(b.refusedUntil - t) };
      b.leasing ??= lease(apiKeyId, cls, b).finally(() => {
        b.leasing = null;
      });
      b.waiting++;
      try {
        await b.leasing;
      } catch (err) {
        deps.onUnavailable?.(err);
        throw new ApiError(503, 'service_unavailable', 'the rate limiter cannot reach its database; retry shortly');
      } finally {
        b.waiting--;
      }
    }
  }

  return {
    take,
    leases: () => roundTrips,
    middleware(cls) {
      return async (_req, res, next) => {
        try {
          const auth = res.locals.auth as { apiKeyId: string } | undefined;
          if (!auth) throw new ApiError(401, 'unauthorized', 'missing API key');
          let d: RateDecision | null;
          try {
            d = await take(auth.apiKeyId, cls);
          } catch (err) {
            if (err instanceof ApiError && err.status === 503) res.setHeader('Retry-After', String(UNAVAILABLE_RETRY_S));
            throw err;
          }
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
    },
  };
}
