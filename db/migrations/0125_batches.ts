// Batches (docs/api/batches.md): many job creates submitted as one, run at `low` priority by a
// durable parent workflow (workflows/batch-run.ts) that starts their jobs at a bounded rate.
// - `batches`: one row per batch, its quoted price (the sum of its items' low-priority prices),
//   its webhook for `batch.completed`, `cancel_requested_at` (a cancel stops its items not started;
//   they are never charged), and `completions` (each time every item ended: the event's id names it,
//   so a retry of failed items that ends again sends one more event and a repeated step none).
//   Listed newest first per workspace.
// - `batch_items`: one row per item in order (`position`) with its `custom_id` (unique in its
//   batch), kind, model, the create body as validated, the params its job is created with, its
//   price, its status until it has a job (`waiting`, `canceled`, or `failed` when the job service does
//   not charge it), its attempt (a retry makes the next, with a job of its own), its current
//   job and every attempt's job. A started item's status is its job's.
// Nothing is charged here: each item's job carries its own charge and refunds.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('batches')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id'))
    .addColumn('project_id', 'text', (c) => c.notNull().references('projects.id'))
    .addColumn('api_key_id', 'text')
    .addColumn('status', 'text', (c) =>
      c
        .notNull()
        .defaultTo('running')
        .check(sql`status in ('running', 'completed', 'canceled')`),
    )
    .addColumn('item_count', 'integer', (c) => c.notNull())
    .addColumn('price', 'integer', (c) => c.notNull())
    .addColumn('webhook_url', 'text')
    .addColumn('cancel_requested_at', 'timestamptz')
    .addColumn('workflow_started', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('completions', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('completed_at', 'timestamptz')
    .execute();
  await sql`create index batches_list_idx on batches (workspace_id, created_at desc, id desc)`.execute(db);

  await db.schema
    .createTable('batch_items')
    .addColumn('batch_id', 'text', (c) => c.notNull().references('batches.id').onDelete('cascade'))
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('custom_id', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('body', 'jsonb', (c) => c.notNull())
    .addColumn('params', 'jsonb', (c) => c.notNull())
    .addColumn('deadline_seconds', 'integer')
    .addColumn('price', 'integer', (c) => c.notNull())
    .addColumn('status', 'text', (c) =>
      c
        .notNull()
        .defaultTo('waiting')
        .check(sql`status in ('waiting', 'started', 'canceled', 'failed')`),
    )
    .addColumn('attempt', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('job_id', 'text')
    .addColumn('jobs', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'::text[]`))
    .addColumn('error', 'jsonb')
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('batch_items_pk', ['batch_id', 'position'])
    .addUniqueConstraint('batch_items_custom_id', ['batch_id', 'custom_id'])
    .execute();
  // The parent's next items to start: the waiting ones of a batch, in order.
  await sql`create index batch_items_waiting_idx on batch_items (batch_id, position) where status = 'waiting'`.execute(db);
  await sql`create index batch_items_job_idx on batch_items (job_id) where job_id is not null`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('batch_items').ifExists().execute();
  await db.schema.dropTable('batches').ifExists().execute();
}
