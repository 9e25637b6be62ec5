// The bounds of one tenant's usage read (GET /v1/usage), which aggregates up to a year of its ledger
// and jobs per call, so that no workspace can hold a replica's pool or the database's CPU:
//
// - a statement timeout of its own (USAGE_STATEMENT_TIMEOUT_MS, `SET LOCAL` in the read's
//   transaction, so it binds this read only and never the pool's other users): past it Postgres
//   cancels the statement and the client gets 503 `service_unavailable` naming the limit and what to
//   narrow (the route adds Retry-After), never a silent partial answer;
// - at most USAGE_MAX_CONCURRENT_PER_WORKSPACE such reads of one workspace at once across the whole
//   fleet: a slot is a transaction-scoped Postgres advisory lock (released with the transaction,
//   whatever ends it), so the cap holds across gateway replicas and needs no process memory; past
//   it, 429 `rate_limited` with retry_after_ms.
import { sql } from 'kysely';
import type { Database, Tx } from '../db/index.js';
import { ApiError } from './errors.js';

interface UsageBounds {
  statementTimeoutMs: number;
  maxConcurrentPerWorkspace: number;
}

/** Retry hint of a refused slot or a timed-out read: about one read's time. */
export const USAGE_RETRY_MS = 2_000;

/** The advisory lock keys of a workspace's usage slot (first key: the workspace, second: the slot). */
const usageSlotKey = (workspaceId: string) => sql<number>`hashtext(${`usage:${workspaceId}`})`;

/** Runs `read` inside a transaction holding one of the workspace's usage slots, under the read's statement timeout. */
export async function boundedUsageRead<T>(db: Database, workspaceId: string, bounds: UsageBounds, read: (tx: Tx) => Promise<T>): Promise<T> {
  try {
    return await db.transaction().execute(async (tx) => {
      let held = false;
      for (let slot = 0; slot < bounds.maxConcurrentPerWorkspace && !held; slot++) {
        const r = await sql<{ ok: boolean }>`select pg_try_advisory_xact_lock(${usageSlotKey(workspaceId)}, ${slot}) as ok`.execute(tx);
        held = r.rows[0]?.ok === true;
      }
      if (!held) {
        throw new ApiError(
          429,
          'rate_limited',
          `at most ${bounds.maxConcurrentPerWorkspace} usage reads of one workspace may run at once; retry when one has finished`,
          { retry_after_ms: USAGE_RETRY_MS },
        );
      }
      await sql`select set_config('statement_timeout', ${String(bounds.statementTimeoutMs)}, true)`.execute(tx);
      return read(tx);
    });
  } catch (err) {
    // 57014 query_canceled: the statement timeout fired.
    if ((err as { code?: unknown }).code === '57014') {
      throw new ApiError(
        503,
        'service_unavailable',
        `the usage read took longer than its limit of ${bounds.statementTimeoutMs} ms and was stopped; ask for a shorter range or fewer group_by dimensions, or retry later`,
      );
    }
    throw err;
  }
}
