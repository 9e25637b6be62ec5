// GET /v1/usage and the status filters of the job lists, flat whatever the table holds:
// - `credit_ledger_usage_idx` (workspace_id, created_at) INCLUDE (reason, delta, job_id) replaces
//   `credit_ledger_workspace_idx`: a usage report reads its workspace's ledger rows of the range
//   from the index alone (the ledger is append-only, so its pages stay all-visible) and joins each
//   to its job by primary key for the key, project, model and kind.
// - Job-list indexes for every status, `completed` included: a workspace whose history is mostly
//   failed jobs would otherwise walk all of them to find no completed one. They replace the partial
//   indexes of 0011 (same columns, `status <> 'completed'`); the job counts of a usage report walk
//   `jobs_workspace_list_idx` over the range.
//
// On a large existing table, create the new indexes CONCURRENTLY by hand before migrating: the
// migration's `if not exists` then skips them.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create index if not exists credit_ledger_usage_idx on credit_ledger (workspace_id, created_at) include (reason, delta, job_id)`.execute(db);
  await db.schema.dropIndex('credit_ledger_workspace_idx').ifExists().execute();

  await sql`create index if not exists jobs_status_all_list_idx on jobs (workspace_id, status, created_at, id)`.execute(db);
  await sql`create index if not exists jobs_kind_status_all_list_idx on jobs (workspace_id, kind, status, created_at, id)`.execute(db);
  await db.schema.dropIndex('jobs_status_list_idx').ifExists().execute();
  await db.schema.dropIndex('jobs_kind_status_list_idx').ifExists().execute();
  await sql`alter index jobs_status_all_list_idx rename to jobs_status_list_idx`.execute(db);
  await sql`alter index jobs_kind_status_all_list_idx rename to jobs_kind_status_list_idx`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('jobs_kind_status_list_idx').execute();
  await db.schema.dropIndex('jobs_status_list_idx').execute();
  await db.schema
    .createIndex('jobs_status_list_idx')
    .on('jobs')
    .columns(['workspace_id', 'status', 'created_at', 'id'])
    .where(sql.ref('status'), '<>', 'completed')
    .execute();
  await db.schema
    .createIndex('jobs_kind_status_list_idx')
    .on('jobs')
    .columns(['workspace_id', 'kind', 'status', 'created_at', 'id'])
    .where(sql.ref('status'), '<>', 'completed')
    .execute();
  await db.schema.createIndex('credit_ledger_workspace_idx').on('credit_ledger').columns(['workspace_id', 'created_at']).execute();
  await db.schema.dropIndex('credit_ledger_usage_idx').execute();
}
