// Circuit breaker trials and outcomes counted once:
// - `provider_circuits.trial_token`: the job a half-open breaker let through as its trial; only that
//   job's outcome closes (or re-opens) the breaker, not another job admitted before it opened.
// - `provider_route_outcomes`: one row per job and route whose outcome the breaker counted, so a step
//   that runs again (a retried completeJob) counts nothing twice. Removed with the job.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('provider_circuits').addColumn('trial_token', 'text').execute();
  await db.schema
    .createTable('provider_route_outcomes')
    .addColumn('job_id', 'text', (c) => c.notNull().references('jobs.id').onDelete('cascade'))
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('ok', 'boolean', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('provider_route_outcomes_pkey', ['job_id', 'provider'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('provider_route_outcomes').execute();
  await db.schema.alterTable('provider_circuits').dropColumn('trial_token').execute();
}
