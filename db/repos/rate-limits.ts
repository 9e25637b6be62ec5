// The rate limiter's lease rows (one per API key and class, written by `rate_limit_lease`, see
// api/rate-limit.ts): a row whose leases all left the window long ago holds nothing the limiter
// needs, and the function writes it again on the key's next request.
import { sql } from 'kysely';
import type { Queryable } from '../index.js';

/**
 * Deletes up to `limit` rows whose newest lease expired more than `idleMs` ago (or that hold none);
 * rows a lease call holds are skipped. Returns how many.
 */
export async function sweepIdleRateLimits(db: Queryable, idleMs: number, limit = 5_000): Promise<number> {
  const r = await sql`
    delete from rate_limits where (api_key_id, class) in (
      select api_key_id, class from rate_limits
      where coalesce((select max(e) from unnest(lease_expires) e), '-infinity') < now() - make_interval(secs => ${idleMs / 1000})
      limit ${limit}
      for update skip locked)`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}
