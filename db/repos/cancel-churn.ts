// The workspace's cancels after a submit to a provider, counted for CANCEL_CHURN_LIMIT (jobs_cancel_churn_idx).
import { sql } from 'kysely';
import type { Queryable } from '../index.js';

/**
 * The workspace's cancels after a submit within the last `windowMs`, newest first, at most
 * `limit + 1` of them (jobs_cancel_churn_idx): past `limit`, `retryAfterMs` is when the oldest of
 * those leaves the window, and the count is back within the limit. `counted`: the cancels read
 * (at most `limit + 1`).
 */
export async function cancelChurn(
  db: Queryable,
  workspaceId: string,
  limit: number,
  windowMs: number,
): Promise<{ over: boolean; retryAfterMs: number; counted: number }> {
  const { rows } = await sql<{ leaves_in_ms: number }>`
    select ceil(extract(epoch from (canceled_after_submit_at + make_interval(secs => ${windowMs / 1000}) - now())) * 1000)::float8 as leaves_in_ms
      from jobs
     where workspace_id = ${workspaceId} and canceled_after_submit_at is not null
       and canceled_after_submit_at > now() - make_interval(secs => ${windowMs / 1000})
     order by canceled_after_submit_at desc
     limit ${limit + 1}`.execute(db);
  if (rows.length <= limit) return { over: false, retryAfterMs: 0, counted: rows.length };
  return { over: true, retryAfterMs: Math.max(1, Math.ceil(Number(rows[limit]!.leaves_in_ms))), counted: rows.length };
}
