// What customers and operators see of the queues:
// - `jobs.submitted_at`: when the job's request first reached its provider (its provider reference
//   was recorded). Until then the job waits in our queues: its wait is created_at → submitted_at.
//   Jobs in flight that already hold a reference get their claim moment (the closest earlier time
//   known), so none of them counts as waiting.
// - `jobs_waiting_idx`: the jobs still waiting, per workspace and provider queue in creation order:
//   a job's queue position counts a range of it, and the queue metrics group it.
// - `jobs_submitted_at_idx`: the recent submits, for the current wait per model and priority.
//
// On a large existing table, create these indexes CONCURRENTLY by hand before migrating: the
// migration's `if not exists` then skips them.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('jobs').addColumn('submitted_at', 'timestamptz').execute();
  await sql`
    update jobs set submitted_at = coalesce(started_at, created_at)
    where status in ('pending', 'generating') and provider_ref is not null`.execute(db);
  await sql`
    create index if not exists jobs_waiting_idx on jobs (workspace_id, (params->>'provider'), created_at)
    where status in ('pending', 'generating') and submitted_at is null`.execute(db);
  await sql`create index if not exists jobs_submitted_at_idx on jobs (submitted_at) where submitted_at is not null`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index if exists jobs_submitted_at_idx`.execute(db);
  await sql`drop index if exists jobs_waiting_idx`.execute(db);
  await db.schema.alterTable('jobs').dropColumn('submitted_at').execute();
}
