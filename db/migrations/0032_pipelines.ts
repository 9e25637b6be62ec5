// Pipelines: several job creates run in order as one durable job (shared/pipelines.ts).
// - `pipelines`: one row per pipeline, its status and error, the quoted price of its steps, its
//   webhook, `cancel_requested_at` (a cancel stops it before its next step starts) and the parent
//   workflow run that failed it (`failed_run_id`: another run, an operator's reset, re-runs the
//   failed step; the same run retrying its task does not). Listed
//   newest first per workspace; the running ones of a workspace are counted by the create's limit.
// - `pipeline_steps`: one row per step in order (`position`), with its kind, model, the create body
//   as validated, the params its job is created with (references held as placeholders) and where
//   each reference sits (`refs`), its attempt (a resume makes the next one), its current job and
//   every attempt's job, and once it completed its outputs, each registered as an upload.
// Nothing is charged here: each step's job carries its own charge and refunds (jobs,
// credit_ledger), summed per step for the records.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('pipelines')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id'))
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id'))
    .addColumn('api_key_id', 'text')
    .addColumn('status', 'text', (c) =>
      c
        .notNull()
        .defaultTo('pending')
        .check(sql`status in ('pending', 'running', 'completed', 'failed')`),
    )
    .addColumn('error', 'jsonb')
    .addColumn('price', 'integer', (c) => c.notNull())
    .addColumn('webhook_url', 'text')
    .addColumn('webhook_events', sql`text[]`)
    .addColumn('cancel_requested_at', 'timestamptz')
    .addColumn('failed_run_id', 'text')
    .addColumn('workflow_started', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('event_seq', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('completed_at', 'timestamptz')
    .execute();
  await sql`create index pipelines_list_idx on pipelines (workspace_id, created_at desc, id desc)`.execute(db);
  await sql`create index pipelines_active_idx on pipelines (workspace_id) where status in ('pending', 'running')`.execute(db);

  await db.schema
    .createTable('pipeline_steps')
    .addColumn('pipeline_id', 'text', (c) => c.notNull().references('pipelines.id').onDelete('cascade'))
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('step_id', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('body', 'jsonb', (c) => c.notNull())
    .addColumn('params', 'jsonb', (c) => c.notNull())
    .addColumn('refs', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('priority', 'text', (c) => c.notNull().defaultTo('normal'))
    .addColumn('deadline_seconds', 'integer')
    .addColumn('price', 'integer', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('waiting'))
    .addColumn('attempt', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('job_id', 'text')
    .addColumn('jobs', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'::text[]`))
    .addColumn('outputs', 'jsonb')
    .addColumn('error', 'jsonb')
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('pipeline_steps_pk', ['pipeline_id', 'position'])
    .addUniqueConstraint('pipeline_steps_step_id', ['pipeline_id', 'step_id'])
    .execute();
  await sql`create index pipeline_steps_job_idx on pipeline_steps (job_id) where job_id is not null`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('pipeline_steps').ifExists().execute();
  await db.schema.dropTable('pipelines').ifExists().execute();
}
