// The remote-fetch slots of each workspace across the fetch fleet (activities/uploads.ts): one row
// per fetch of a tenant's URL in flight, leased by the worker running it for as long as a fetch may
// last. FETCH_PER_WORKSPACE_CONCURRENCY slots per workspace, numbered, so the cap holds however many
// fetch workers run; a worker that dies frees its slots when their leases run out.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table fetch_slots (
      workspace_id text not null,
      slot integer not null,
      holder text not null,
      expires_at timestamptz not null,
      primary key (workspace_id, slot)
    )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table if exists fetch_slots`.execute(db);
}
