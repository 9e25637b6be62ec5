// A per-job change counter for the live event stream: `event_seq` grows by one on exactly the
// updates that notify `job_events` (status, phase, percent, queue position), so an event id can
// say "the client has seen every change up to here" and a reconnect never replays one. It is
// bumped in a BEFORE trigger, after the row lock, so concurrent writers can never reuse a value.
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('jobs')
    .addColumn('event_seq', 'integer', (c) => c.notNull().defaultTo(1))
    .execute();
  await sql`
    create function jobs_bump_event_seq() returns trigger language plpgsql as $$
    begin
      new.event_seq := old.event_seq + 1;
      return new;
    end $$`.execute(db);
  // The same condition as jobs_event_on_update (0002_job_progress): one bump per notification.
  await sql`
    create trigger jobs_event_seq_on_update before update on jobs
      for each row
      when (old.status is distinct from new.status or old.phase is distinct from new.phase
            or old.percent is distinct from new.percent or old.queue_position is distinct from new.queue_position)
      execute function jobs_bump_event_seq()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop trigger jobs_event_seq_on_update on jobs`.execute(db);
  await sql`drop function jobs_bump_event_seq()`.execute(db);
  await db.schema.alterTable('jobs').dropColumn('event_seq').execute();
}
