// The reconciler's two pipeline sweeps (worker/pipeline-reconciler.ts) read only the pipelines in
// flight, oldest first: the stall check by when the row last moved, the unstarted check by when it
// was created. Partial indexes over the pending and running rows keep each sweep a short index scan
// however many finished pipelines the table holds.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create index pipelines_quiet_idx on pipelines (updated_at) where status in ('pending', 'running')`.execute(db);
  await sql`create index pipelines_unstarted_idx on pipelines (created_at) where not workflow_started and status in ('pending', 'running')`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index if exists pipelines_unstarted_idx`.execute(db);
  await sql`drop index if exists pipelines_quiet_idx`.execute(db);
}
