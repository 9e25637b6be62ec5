// Provider failover:
// - `jobs.provider_attempts`: the routes a job gave up, in order, each with the provider and why, so
//   its record says which providers were tried besides the one that served it.
// - `provider_circuits`: the circuit breaker per provider and model, shared by every worker: route
//   attempts that ended (completed there, or failed over) counted over a window, its state, when it
//   opened and when the last half-open trial was let through.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('jobs')
    .addColumn('provider_attempts', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .execute();
  await db.schema
    .createTable('provider_circuits')
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) =>
      c
        .notNull()
        .defaultTo('closed')
        .check(sql`state in ('closed', 'open', 'half_open')`),
    )
    .addColumn('window_started_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('failures', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('opened_at', 'timestamptz')
    .addColumn('trial_at', 'timestamptz')
    .addColumn('last_error', 'text')
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('provider_circuits_pkey', ['provider', 'model'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('provider_circuits').execute();
  await db.schema.alterTable('jobs').dropColumn('provider_attempts').execute();
}
