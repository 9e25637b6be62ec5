// Leased slots shared by every process of a fleet: the upload slots of an API key across the
// gateways (0040_upload_slots) and the remote-fetch slots of a workspace across the fetch workers
// (0075_fetch_slots). A slot number per owner (0 … max - 1) is the primary key, so two processes can
// never take the same slot; a process that dies leaves rows whose lease runs out, and the next claim
// takes them over.
import { sql } from 'kysely';
import type { Queryable } from '../index.js';

/** A slot table and the column naming whose slots they are. */
type SlotPool = { table: 'upload_slots'; owner: 'api_key_id' } | { table: 'fetch_slots'; owner: 'workspace_id' };

export const uploadSlots: SlotPool = { table: 'upload_slots', owner: 'api_key_id' };
export const fetchSlots: SlotPool = { table: 'fetch_slots', owner: 'workspace_id' };

/**
 * Takes a free slot of `owner` (or one whose lease ran out) for `holder`, trying slots 0 … max - 1
 * in turn; answers the slot, or null when all are held.
 */
export async function claimSlot(db: Queryable, pool: SlotPool, owner: string, max: number, holder: string, leaseMs: number): Promise<number | null> {
  const table = sql.table(pool.table);
  const column = sql.ref(pool.owner);
  for (let slot = 0; slot < max; slot++) {
    const r = await sql<{ slot: number }>`
      insert into ${table} (${column}, slot, holder, expires_at)
      values (${owner}, ${slot}, ${holder}, now() + ${leaseMs} * interval '1 millisecond')
      on conflict (${column}, slot) do update set holder = excluded.holder, expires_at = excluded.expires_at
        where ${sql.ref(`${pool.table}.expires_at`)} < now()
      returning slot`.execute(db);
    if (r.rows.length > 0) return slot;
  }
  return null;
}

/** Extends the lease of a slot still held by `holder`. */
export async function refreshSlot(db: Queryable, pool: SlotPool, owner: string, slot: number, holder: string, leaseMs: number): Promise<void> {
  await sql`update ${sql.table(pool.table)} set expires_at = now() + ${leaseMs} * interval '1 millisecond'
    where ${sql.ref(pool.owner)} = ${owner} and slot = ${slot} and holder = ${holder}`.execute(db);
}

/** Frees a slot held by `holder` (a slot taken over after its lease ran out is left to its new holder). */
export async function releaseSlot(db: Queryable, pool: SlotPool, owner: string, slot: number, holder: string): Promise<void> {
  await sql`delete from ${sql.table(pool.table)} where ${sql.ref(pool.owner)} = ${owner} and slot = ${slot} and holder = ${holder}`.execute(db);
}
