// The webhook circuit breaker becomes one circuit per (workspace, destination): a workspace whose
// requests fail at a shared host (a popular automation service) opens only its own circuit there.
// The state machine is shared/webhooks/circuit.ts; the columns are its state. The per-host table it
// replaces held no delivery state worth keeping (a circuit's history is minutes long).
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('webhook_circuits')
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    // The receiver's URL host, with its port when not the default.
    .addColumn('destination', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) =>
      c
        .notNull()
        .defaultTo('closed')
        .check(sql`state in ('closed', 'open', 'half_open')`),
    )
    .addColumn('failures', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('failing_since', 'timestamptz')
    .addColumn('last_failure_at', 'timestamptz')
    .addColumn('open_until', 'timestamptz')
    .addColumn('trials_admitted', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('trial_failures', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('trials_started_at', 'timestamptz')
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('webhook_circuits_pk', ['workspace_id', 'destination'])
    .execute();
  // The open-circuits gauge reads only the few circuits not closed.
  await db.schema
    .createIndex('webhook_circuits_not_closed_idx')
    .on('webhook_circuits')
    .column('workspace_id')
    .where(sql.ref('state'), '<>', 'closed')
    .execute();
  await db.schema.dropTable('webhook_destinations').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('webhook_destinations')
    .addColumn('host', 'text', (c) => c.primaryKey())
    .addColumn('consecutive_failures', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('open_until', 'timestamptz')
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.dropTable('webhook_circuits').execute();
}
