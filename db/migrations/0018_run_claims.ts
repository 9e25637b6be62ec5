// Resets and repairs:
// - `jobs.claimed_at`: when the workflow run that holds the job claimed it (its first live database
//   step). The model's deadline counts from it, so a run revived by an operator's reset gets the
//   whole deadline instead of the clock of the run it replays.
// - `jobs_stale_in_flight_idx`: the reconciler's database-side pass reads the few rows in flight
//   whose last write is older than a bound (a row whose final write was lost), oldest first.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('jobs').addColumn('claimed_at', 'timestamptz').execute();
  await db.schema.createIndex('jobs_stale_in_flight_idx').on('jobs').column('updated_at').where(sql.ref('status'), 'in', ['pending', 'generating']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('jobs_stale_in_flight_idx').execute();
  await db.schema.alterTable('jobs').dropColumn('claimed_at').execute();
}
