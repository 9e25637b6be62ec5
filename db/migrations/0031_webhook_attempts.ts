// Webhook deliveries customers can inspect and replay.
// - `webhook_attempts`: one row per request sent for an event (an attempt). `attempt_key` names the
//   Temporal activity attempt that sent it (workflow id, run id, activity id, attempt number), unique,
//   so an activity whose write is repeated records its attempt once. `number` counts the event's
//   attempts across its original delivery and every redelivery (1, 2, …). Waits on an open circuit
//   send nothing and are not attempts: they show on the event as `circuit_open_until`.
// - `webhook_deliveries` gains the next attempt's due time (`next_retry_at`), the end of the wait on
//   an open circuit, and the count of redeliveries asked for (the redelivery workflow's id suffix).
// - `webhook_deliveries_list_idx` serves the workspace's newest-first list.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('webhook_attempts')
    .addColumn('delivery_id', 'text', (c) => c.notNull().references('webhook_deliveries.id').onDelete('cascade'))
    .addColumn('number', 'integer', (c) => c.notNull())
    .addColumn('attempt_key', 'text', (c) => c.notNull().unique())
    .addColumn('started_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('status_code', 'integer')
    .addColumn('error_class', 'text')
    .addColumn('latency_ms', 'integer')
    .addColumn('next_retry_at', 'timestamptz')
    .addPrimaryKeyConstraint('webhook_attempts_pk', ['delivery_id', 'number'])
    .execute();
  await db.schema
    .alterTable('webhook_deliveries')
    .addColumn('next_retry_at', 'timestamptz')
    .addColumn('circuit_open_until', 'timestamptz')
    .addColumn('redeliveries', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`create index if not exists webhook_deliveries_list_idx on webhook_deliveries (workspace_id, created_at desc, id desc)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index if exists webhook_deliveries_list_idx`.execute(db);
  await db.schema.alterTable('webhook_deliveries').dropColumn('next_retry_at').dropColumn('circuit_open_until').dropColumn('redeliveries').execute();
  await db.schema.dropTable('webhook_attempts').ifExists().execute();
}
