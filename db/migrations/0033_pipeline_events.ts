// A pipeline's live event stream (GET /v1/pipelines/{id}/events): a `pipeline_events` notification
// with the pipeline id whenever its row's change counter moves, and that counter (`event_seq`)
// moved by every change of one of its steps too, so one counter covers the pipeline and its steps.
// Every writer of a step already holds the pipeline row's lock (db/repos/pipelines.ts lockPipeline),
// so the bump here takes no lock a writer does not hold. Changes of a step's job are not counted
// here: the stream hears those on `job_events` (0002_job_progress) and adds the jobs' own counters
// (api/pipeline-events.ts), which keeps the pipeline's lock off the jobs' progress writes.
import { sql, type Kysely } from 'kysely';

export const PIPELINE_EVENTS_CHANNEL = 'pipeline_events';

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create function pipelines_notify_event() returns trigger language plpgsql as $$
    begin
      perform pg_notify('pipeline_events', new.id);
      return null;
    end $$`.execute(db);
  await sql`
    create trigger pipelines_event_on_update after update on pipelines
      for each row when (old.event_seq is distinct from new.event_seq)
      execute function pipelines_notify_event()`.execute(db);

  await sql`
    create function pipeline_steps_bump_pipeline() returns trigger language plpgsql as $$
    begin
      update pipelines set event_seq = event_seq + 1 where id = new.pipeline_id;
      return null;
    end $$`.execute(db);
  await sql`
    create trigger pipeline_steps_event_on_update after update on pipeline_steps
      for each row when (old is distinct from new)
      execute function pipeline_steps_bump_pipeline()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop trigger pipeline_steps_event_on_update on pipeline_steps`.execute(db);
  await sql`drop function pipeline_steps_bump_pipeline()`.execute(db);
  await sql`drop trigger pipelines_event_on_update on pipelines`.execute(db);
  await sql`drop function pipelines_notify_event()`.execute(db);
}
