// Idempotency keys: a (workspace, key) row is claimed before a create runs and holds its answer
// afterwards. The primary key makes the claim atomic across gateway replicas; the claim token makes
// sure only the claimant completes, refreshes or releases it, so a claim taken over after going
// stale can never be completed twice.
import { sql } from 'kysely';
import type { Queryable } from '../index.js';
import type { IdempotencyKeyTable } from '../schema.js';
import type { Selectable } from 'kysely';

export type IdempotencyRow = Selectable<IdempotencyKeyTable>;

/** How long an answer is replayed; an older row counts as absent (and is swept). */
const IDEMPOTENCY_TTL_HOURS = 24;

interface ClaimInput {
  workspaceId: string;
  key: string;
  operation: string;
  /** Null when the request's fingerprint is only known once its body has streamed (multipart). */
  fingerprint: string | null;
  token: string;
  /** An in-progress claim not refreshed for this long is stale and may be taken over. */
  leaseMs: number;
}

/**
 * Claims the key: a new row, or the takeover of an expired row or of a stale in-progress claim of
 * the same request. Returns true when this claim owns the key; otherwise the caller reads the row.
 */
export async function claimIdempotencyKey(db: Queryable, c: ClaimInput): Promise<boolean> {
  const r = await sql<{ claim_token: string }>`
    insert into idempotency_keys (workspace_id, key, operation, fingerprint, claim_token, status, locked_at, created_at)
    values (${c.workspaceId}, ${c.key}, ${c.operation}, ${c.fingerprint}, ${c.token}, 'in_progress', now(), now())
    on conflict (workspace_id, key) do update
      set operation = excluded.operation, fingerprint = excluded.fingerprint, claim_token = excluded.claim_token,
          status = 'in_progress', response_status = null, response_body = null, locked_at = now(), created_at = now()
      where idempotency_keys.created_at < now() - make_interval(hours => ${IDEMPOTENCY_TTL_HOURS})
         or (idempotency_keys.status = 'in_progress'
             and idempotency_keys.locked_at < now() - ${c.leaseMs}::integer * interval '1 millisecond'
             and idempotency_keys.operation = excluded.operation
             and (idempotency_keys.fingerprint is null or excluded.fingerprint is null or idempotency_keys.fingerprint = excluded.fingerprint))
    returning claim_token`.execute(db);
  return r.rows[0]?.claim_token === c.token;
}

/** The live (unexpired) row of a key, if any. */
export async function findIdempotencyKey(db: Queryable, workspaceId: string, key: string): Promise<IdempotencyRow | undefined> {
  return db
    .selectFrom('idempotency_keys')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('key', '=', key)
    .where(sql<boolean>`created_at >= now() - make_interval(hours => ${IDEMPOTENCY_TTL_HOURS})`)
    .executeTakeFirst();
}

/**
 * Stores the answer of an owned claim. Run inside the create's own transaction, it commits with the
 * job and its charge or not at all; false when the claim is no longer ours (taken over after going
 * stale), and then the caller must not commit its work.
 */
export async function completeIdempotencyKey(
  db: Queryable,
  c: { workspaceId: string; key: string; token: string; fingerprint: string | null; status: number; body: unknown },
): Promise<boolean> {
  const r = await db
    .updateTable('idempotency_keys')
    .set({
      status: 'completed',
      response_status: c.status,
      response_body: JSON.stringify(c.body),
      fingerprint: sql`coalesce(fingerprint, ${c.fingerprint})`,
      locked_at: sql`now()`,
    })
    .where('workspace_id', '=', c.workspaceId)
    .where('key', '=', c.key)
    .where('claim_token', '=', c.token)
    .where('status', '=', 'in_progress')
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Keeps an owned in-progress claim fresh (a long upload). */
export async function refreshIdempotencyKey(db: Queryable, c: { workspaceId: string; key: string; token: string }): Promise<void> {
  await db
    .updateTable('idempotency_keys')
    .set({ locked_at: sql`now()` })
    .where('workspace_id', '=', c.workspaceId)
    .where('key', '=', c.key)
    .where('claim_token', '=', c.token)
    .where('status', '=', 'in_progress')
    .execute();
}

/** Gives an owned in-progress claim up (the request was refused or failed: nothing was created). */
export async function releaseIdempotencyKey(db: Queryable, c: { workspaceId: string; key: string; token: string }): Promise<void> {
  await db
    .deleteFrom('idempotency_keys')
    .where('workspace_id', '=', c.workspaceId)
    .where('key', '=', c.key)
    .where('claim_token', '=', c.token)
    .where('status', '=', 'in_progress')
    .execute();
}

/** Deletes up to `limit` rows past the replay window, oldest first (idempotency_keys_created_idx); returns how many. */
export async function sweepIdempotencyKeys(db: Queryable, limit = 5_000): Promise<number> {
  const r = await sql`
    delete from idempotency_keys where (workspace_id, key) in (
      select workspace_id, key from idempotency_keys
      where created_at < now() - make_interval(hours => ${IDEMPOTENCY_TTL_HOURS})
      order by created_at limit ${limit})`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}
