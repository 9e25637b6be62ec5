// Route slot pools (db/repos/route-slots.ts): how many requests each provider route has in flight at
// the provider across the fleet, and which jobs wait for one. A job holds a slot from just before its
// provider submit until its request there ends; the slot's lease, renewed by the job's checks, brings
// a slot back whose holder vanished. One row per route is the lock every take of that route queues on.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('route_slot_routes')
    .addColumn('route', 'text', (c) => c.primaryKey())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createTable('route_slots')
    .addColumn('job_id', 'text', (c) => c.primaryKey())
    .addColumn('route', 'text', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('weight', 'double precision', (c) => c.notNull().defaultTo(1))
    .addColumn('taken_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('lease_until', 'timestamptz', (c) => c.notNull())
    // The submit step's attempt that took the slot: the attempts before it only waited.
    .addColumn('taken_attempt', 'integer', (c) => c.notNull().defaultTo(1))
    .execute();
  await db.schema.createIndex('route_slots_route_idx').on('route_slots').columns(['route', 'workspace_id']).execute();
  await db.schema.createIndex('route_slots_lease_idx').on('route_slots').column('lease_until').execute();
  await db.schema
    .createTable('route_slot_waiters')
    .addColumn('job_id', 'text', (c) => c.primaryKey())
    .addColumn('route', 'text', (c) => c.notNull())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('weight', 'double precision', (c) => c.notNull().defaultTo(1))
    // 1 high, 3 normal, 5 low: the Temporal priority key, smaller first.
    .addColumn('priority_key', 'smallint', (c) => c.notNull().defaultTo(3))
    .addColumn('since', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('seen_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('route_slot_waiters_route_idx').on('route_slot_waiters').columns(['route', 'workspace_id', 'priority_key', 'since']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('route_slot_waiters').execute();
  await db.schema.dropTable('route_slots').execute();
  await db.schema.dropTable('route_slot_routes').execute();
}
