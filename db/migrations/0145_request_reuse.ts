// Reuse of identical requests (docs/api/reuse.md): a create that opts in (its `reuse`, or the
// workspace's `reuse_requests`) stores the key of its canonical request; the job's workflow then
// waits for the job that holds the key (coalescing) or is answered from its outputs, copied.
// - `jobs.reuse_key`: sha256 of the canonical validated request (kind, model, parameters, the
//   content of every input); null: the job is not reused and never a source.
// - `jobs.reused_from`: the job this one waits for (while in flight) or was answered from
//   (completed); null once it runs itself.
// - `reuse_sources`: per workspace and key, the job that holds it: the one in flight every identical
//   create waits for, then the completed one every later create is answered from. Its row lock
//   serializes the choice across every gateway and worker; a source that did not complete (failed,
//   canceled) or whose outputs are gone is replaced by the next job that asks.
// - `workspaces.reuse_requests`: the workspace's default for creates that do not say `reuse`.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('jobs').addColumn('reuse_key', 'text').addColumn('reused_from', 'text').execute();
  // The followers a source wakes when it ends: few rows, each found by its source.
  await sql`create index jobs_reused_from_idx on jobs (reused_from) where reused_from is not null`.execute(db);
  await db.schema
    .alterTable('workspaces')
    .addColumn('reuse_requests', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute();
  await db.schema
    .createTable('reuse_sources')
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id'))
    .addColumn('reuse_key', 'text', (c) => c.notNull())
    .addColumn('job_id', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('reuse_sources_pk', ['workspace_id', 'reuse_key'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('reuse_sources').ifExists().execute();
  await db.schema.alterTable('workspaces').dropColumn('reuse_requests').execute();
  await sql`drop index if exists jobs_reused_from_idx`.execute(db);
  await db.schema.alterTable('jobs').dropColumn('reused_from').dropColumn('reuse_key').execute();
}
