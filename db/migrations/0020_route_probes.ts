// The route health probe's findings (worker/route-prober.ts), one row per provider and public model:
// whether the provider still serves the route's model (its own model get/list endpoint), why not,
// and when the route is next due, so every gateway replica reads the same answer and, of many worker
// replicas, only the one that claimed a route probes it in a period.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('route_probes')
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('provider_model_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) =>
      c
        .notNull()
        .defaultTo('available')
        .check(sql`status in ('available', 'unavailable')`),
    )
    .addColumn('reason', 'text')
    .addColumn('last_error', 'text')
    .addColumn('checked_at', 'timestamptz')
    .addColumn('changed_at', 'timestamptz')
    .addColumn('next_probe_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('route_probes_pkey', ['provider', 'model'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('route_probes').execute();
}
