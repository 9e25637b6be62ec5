// The upload slots of each API key across the gateway fleet (api/uploads/limits.ts): one row per
// multipart upload streaming now, leased by the gateway that receives it. A slot number per key
// (0 … UPLOAD_MAX_CONCURRENT_PER_KEY - 1) is the primary key, so two gateways can never take the same
// slot; a gateway that dies leaves rows whose lease runs out, and the next claim takes them over.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table upload_slots (
      api_key_id text not null,
      slot integer not null,
      holder text not null,
      expires_at timestamptz not null,
      primary key (api_key_id, slot)
    )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table if exists upload_slots`.execute(db);
}
