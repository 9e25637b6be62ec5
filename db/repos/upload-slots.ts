// Leased upload slots of an API key, shared by every gateway (migration 0040_upload_slots).
import { sql } from 'kysely';
import type { Queryable } from '../index.js';

/**
 * Takes a free slot of the key (or one whose lease ran out) for `holder`, trying slots 0 … max - 1
 * in turn; answers the slot, or null when all are held.
 */
export async function claimUploadSlot(db: Queryable, apiKeyId: string, max: number, holder: string, leaseMs: number): Promise<number | null> {
  for (let slot = 0; slot < max; slot++) {
    const r = await sql<{ slot: number }>`
      insert into upload_slots (api_key_id, slot, holder, expires_at)
      values (${apiKeyId}, ${slot}, ${holder}, now() + ${leaseMs} * interval '1 millisecond')
      on conflict (api_key_id, slot) do update set holder = excluded.holder, expires_at = excluded.expires_at
        where upload_slots.expires_at < now()
      returning slot`.execute(db);
    if (r.rows.length > 0) return slot;
  }
  return null;
}

/** Extends the lease of a slot still held by `holder`. */
export async function refreshUploadSlot(db: Queryable, apiKeyId: string, slot: number, holder: string, leaseMs: number): Promise<void> {
  await sql`update upload_slots set expires_at = now() + ${leaseMs} * interval '1 millisecond'
    where api_key_id = ${apiKeyId} and slot = ${slot} and holder = ${holder}`.execute(db);
}

/** Frees a slot held by `holder` (a slot taken over after its lease ran out is left to its new holder). */
export async function releaseUploadSlot(db: Queryable, apiKeyId: string, slot: number, holder: string): Promise<void> {
  await sql`delete from upload_slots where api_key_id = ${apiKeyId} and slot = ${slot} and holder = ${holder}`.execute(db);
}
