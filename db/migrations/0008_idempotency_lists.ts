// Issue 14: idempotent creates, job lists, retention.
// - `idempotency_keys`: one row per (workspace, Idempotency-Key), claimed before a create runs and
//   holding its answer afterwards (api/idempotency.ts). The primary key is the cross-replica lock.
// - Job list indexes: newest first per workspace, per workspace and kind, per project; `id` breaks
//   ties so a keyset cursor `(created_at, id)` walks the index without a sort.
// - `jobs.outputs_removed_at`: set when a client deleted a finished job's outputs (the row stays).
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('idempotency_keys')
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('key', 'text', (c) => c.notNull())
    /** "POST /v1/images/generate": a key reused on another endpoint is a different request. */
    .addColumn('operation', 'text', (c) => c.notNull())
    /** sha256 of the request (null while a multipart upload is still streaming). */
    .addColumn('fingerprint', 'text')
    /** Random per claim: only the claimant may complete, refresh or release it. */
    .addColumn('claim_token', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('in_progress', 'completed')`))
    .addColumn('response_status', 'integer')
    .addColumn('response_body', 'jsonb')
    /** Refreshed while the claimant works; an in-progress claim not refreshed for a lease is stale. */
    .addColumn('locked_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('idempotency_keys_pkey', ['workspace_id', 'key'])
    .execute();
  await db.schema.createIndex('idempotency_keys_created_idx').on('idempotency_keys').column('created_at').execute();

  // (workspace_id, created_at, id) serves what jobs_workspace_idx served and the keyset order too.
  await db.schema.dropIndex('jobs_workspace_idx').execute();
  await db.schema.createIndex('jobs_workspace_list_idx').on('jobs').columns(['workspace_id', 'created_at', 'id']).execute();
  await db.schema.createIndex('jobs_kind_list_idx').on('jobs').columns(['workspace_id', 'kind', 'created_at', 'id']).execute();
  await db.schema.createIndex('jobs_project_list_idx').on('jobs').columns(['project_id', 'created_at', 'id']).execute();

  await db.schema.alterTable('jobs').addColumn('outputs_removed_at', 'timestamptz').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('jobs').dropColumn('outputs_removed_at').execute();
  await db.schema.dropIndex('jobs_project_list_idx').execute();
  await db.schema.dropIndex('jobs_kind_list_idx').execute();
  await db.schema.dropIndex('jobs_workspace_list_idx').execute();
  await db.schema.createIndex('jobs_workspace_idx').on('jobs').columns(['workspace_id', 'created_at']).execute();
  await db.schema.dropTable('idempotency_keys').execute();
}
