// GET /v1/events?types=…: the workspace's events of one type in order, from an index of their own.
// With only the (workspace_id, seq) index, a type that is rare in a large log (a budget alert among a
// million job moves) was found by reading the log on from `after` to its end: 3 s at 1M events
// (bench:scale). On (workspace_id, type, seq), each requested type is one ordered range read of at
// most a page (db/repos/workspace-events.ts: one branch per type, merged by seq).
//
// Building it reads the whole table and blocks its writes for that long (a few seconds per million
// events here); an operator with a very large log builds it first, by hand, with
// `create index concurrently workspace_events_type_seq_idx on workspace_events (workspace_id, type, seq)`:
// this migration then finds it and builds nothing.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create index if not exists workspace_events_type_seq_idx on workspace_events (workspace_id, type, seq)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index if exists workspace_events_type_seq_idx`.execute(db);
}
