// What a customer's cancel costs, and how often a workspace does it:
// - `jobs.cancel_requested_at`: when the customer asked to cancel (the cancel route writes it before
//   asking Temporal), so a job failed as `canceled` is told apart from an operator's terminate.
// - `jobs.cancel_kept`: the credits a customer's cancel did not refund (the provider's cost of a
//   submitted request whose cancel is not honored); 0 for a full refund, null when never canceled.
// - `jobs.canceled_after_submit_at`: when a customer's cancel failed a job already submitted to a
//   provider. The per-workspace churn limit counts these rows in a window (jobs_cancel_churn_idx).
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('jobs')
    .addColumn('cancel_requested_at', 'timestamptz')
    .addColumn('cancel_kept', 'integer', (c) => c.check(sql`cancel_kept >= 0`))
    .addColumn('canceled_after_submit_at', 'timestamptz')
    .execute();
  await sql`create index jobs_cancel_churn_idx on jobs (workspace_id, canceled_after_submit_at) where canceled_after_submit_at is not null`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index if exists jobs_cancel_churn_idx`.execute(db);
  await db.schema.alterTable('jobs').dropColumn('canceled_after_submit_at').dropColumn('cancel_kept').dropColumn('cancel_requested_at').execute();
}
