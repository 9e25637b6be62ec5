// Bulk actions (docs/api/bulk-actions.md): one cancel, retry or delete over many jobs of a workspace,
// chosen by a job-list filter or by ids, applied at a bounded rate by a durable workflow
// (workflows/bulk-action-run.ts) through the job service's own rules.
// - `bulk_actions`: one row per action: what was asked (`action`, the `selector` as given), how many
//   jobs it took (`job_count`, at most BULK_ACTION_MAX_JOBS), and `workflow_started` (set by the
//   run's first step: an action left unmarked is started again by the reconciler). Listed newest
//   first per workspace.
// - `bulk_action_jobs`: the jobs the selector matched when the action was created (a snapshot: a job
//   created later is never touched), each `pending` until the run applied the action to it, then
//   `done`, `skipped` (the job's rules refused it: e.g. already finished for a cancel) or `failed`;
//   `result_job_id`: the new job a retry made (written with the move, so a repeated step makes none).
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('bulk_actions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id'))
    .addColumn('api_key_id', 'text')
    .addColumn('action', 'text', (c) => c.notNull().check(sql`action in ('cancel', 'retry', 'delete')`))
    .addColumn('selector', 'jsonb', (c) => c.notNull())
    .addColumn('status', 'text', (c) =>
      c
        .notNull()
        .defaultTo('running')
        .check(sql`status in ('running', 'completed')`),
    )
    .addColumn('job_count', 'integer', (c) => c.notNull())
    .addColumn('workflow_started', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('completed_at', 'timestamptz')
    .execute();
  await sql`create index bulk_actions_list_idx on bulk_actions (workspace_id, created_at desc, id desc)`.execute(db);
  await sql`create index bulk_actions_unstarted_idx on bulk_actions (created_at) where not workflow_started`.execute(db);

  await db.schema
    .createTable('bulk_action_jobs')
    .addColumn('bulk_action_id', 'text', (c) => c.notNull().references('bulk_actions.id').onDelete('cascade'))
    .addColumn('job_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) =>
      c
        .notNull()
        .defaultTo('pending')
        .check(sql`status in ('pending', 'done', 'skipped', 'failed')`),
    )
    .addColumn('result_job_id', 'text')
    .addColumn('reason', 'text')
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('bulk_action_jobs_pk', ['bulk_action_id', 'job_id'])
    .execute();
  // The run's next jobs: the pending ones of an action.
  await sql`create index bulk_action_jobs_pending_idx on bulk_action_jobs (bulk_action_id, job_id) where status = 'pending'`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('bulk_action_jobs').ifExists().execute();
  await db.schema.dropTable('bulk_actions').ifExists().execute();
}
