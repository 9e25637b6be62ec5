// One tenant cannot hurt another's webhook deliveries:
// - `webhook_destinations`: a circuit breaker per receiver (URL host and port), shared by the whole
//   fleet. Consecutive failed attempts open it for a cooldown, during which attempts to that host
//   fail at once (no connection, no worker slot held); then one probe is let through.
// - `webhook_deliveries.superseded_at`: an event not worth delivering any more because a later event
//   of the same job makes it moot (a `job.generating` of a job its customer canceled meanwhile).
// - Indexes for the dispatcher's per-workspace in-flight count and for the outbox retention sweep.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('webhook_destinations')
    .addColumn('host', 'text', (c) => c.primaryKey())
    .addColumn('consecutive_failures', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('open_until', 'timestamptz')
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema.alterTable('webhook_deliveries').addColumn('superseded_at', 'timestamptz').execute();
  // Deliveries dispatched and not finished: the dispatcher counts them per workspace.
  await db.schema
    .createIndex('webhook_deliveries_in_flight_idx')
    .on('webhook_deliveries')
    .column('workspace_id')
    .where(sql<boolean>`dispatched_at is not null and delivered_at is null and failed_at is null and superseded_at is null`)
    .execute();
  await db.schema.createIndex('webhook_deliveries_created_idx').on('webhook_deliveries').column('created_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('webhook_deliveries_created_idx').execute();
  await db.schema.dropIndex('webhook_deliveries_in_flight_idx').execute();
  await db.schema.alterTable('webhook_deliveries').dropColumn('superseded_at').execute();
  await db.schema.dropTable('webhook_destinations').execute();
}
