// Claims that let many control processes act on the same rows once:
// - webhook_deliveries.dispatch_claimed_until: the outbox dispatcher claims rows (FOR UPDATE SKIP
//   LOCKED) before starting their delivery workflows, so two dispatchers (a lease handed over
//   mid-pass) never start the same delivery; a claim left by a process that died expires.
// - pipelines.restarted_run_id / restarted_at: the stalled-pipeline restart records the run it
//   started on the row, under the row lock, so another pass does not restart the same pipeline
//   again (terminating the run just started) before that run has had time to move it.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table webhook_deliveries add column dispatch_claimed_until timestamptz`.execute(db);
  await sql`alter table pipelines add column restarted_run_id text, add column restarted_at timestamptz`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table pipelines drop column if exists restarted_run_id, drop column if exists restarted_at`.execute(db);
  await sql`alter table webhook_deliveries drop column if exists dispatch_claimed_until`.execute(db);
}
