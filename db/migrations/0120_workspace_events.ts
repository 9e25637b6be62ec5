// The replayable workspace event log (docs/api/events.md): every status move of a job, every
// pipeline event (pipeline.completed, pipeline.failed, pipeline.step.completed, pipeline.step.failed),
// every budget threshold alert and every balance.low crossing writes one row of `workspace_events`
// in the transaction of the move, with a per-workspace sequence (`seq`) that is gap-free and in
// commit order. GET /v1/events?after=SEQ and GET /v1/events/stream read it.
//
// The id of an event is the id its per-request webhook delivery has (`webhook-id`): a job's is
// `whk_<job id>_<event_seq>` (0007_webhooks), a pipeline's and a budget's the ids their writers
// compute (db/repos/pipeline-events.ts, db/repos/budgets.ts), a balance crossing's the one its
// trigger drew (0100_balance_alerts). The primary key on the id keeps an event to one row however
// often its writer runs (an activity retried after its commit, a second outbox write).
//
// How the sequence stays gap-free and in commit order: `workspace_event_counters` holds one row per
// workspace, and an event takes its number from that row (`update … set last_seq = last_seq + 1`)
// only at COMMIT, in a deferred constraint trigger (a job's move: jobs_workspace_event; any other
// row inserted with a null seq: workspace_events_number). The update locks the workspace's counter
// row until the transaction ends, so the next transaction of that workspace to number an event
// waits for this one to commit (or roll back, undoing its increment): numbers are handed out one
// transaction at a time, each after the previous holder is visible. A reader that sees seq N has
// therefore seen every event < N of that workspace, and `after=N` never skips one committed later.
//
// The cost: each event is one counter-row update and one insert (inside the commit, no round trip),
// and the transactions of one workspace that write events serialize on the counter for the span of
// their commit only (the lock is taken last, so it is held for the commit record's flush, not for
// the transaction's work). Creates already serialize per workspace on the balance row they charge,
// so a create adds no new wait; a burst of status moves of one workspace's jobs commits one after
// another, at the commit rate of the disk. Each event is also a NOTIFY `workspace_events` with the
// workspace id (deduplicated by PostgreSQL within a transaction), which the gateway's SSE stream hears.
import { sql, type Kysely } from 'kysely';
import { replaceBalanceLow } from './0110_webhook_endpoints.js';

export const WORKSPACE_EVENTS_CHANNEL = 'workspace_events';

// Over 80 lines: a migration is the record of one schema step, its DDL in the order it runs; applied
// databases hold it, so it is never edited or split after it ships.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('workspace_event_counters')
    .addColumn('workspace_id', 'text', (c) => c.primaryKey().references('workspaces.id').onDelete('cascade'))
    .addColumn('last_seq', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .createTable('workspace_events')
    // The event id: the webhook-id of its delivery.
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    // Null only inside the writing transaction, until its commit numbers it.
    .addColumn('seq', 'bigint')
    .addColumn('type', 'text', (c) => c.notNull())
    // The job, pipeline, budget or workspace the event is about.
    .addColumn('subject_id', 'text', (c) => c.notNull())
    // A job's event: the job row as the move committed it (presented like GET at read time);
    // any other: the webhook body's data as it is sent.
    .addColumn('data', 'jsonb', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await sql`create unique index workspace_events_seq_idx on workspace_events (workspace_id, seq)`.execute(db);
  // The retention sweep reads the oldest events across workspaces.
  await sql`create index workspace_events_created_at_idx on workspace_events (created_at)`.execute(db);

  await sql`
    create function workspace_event_next_seq(ws text) returns bigint language plpgsql as $$
    declare
      n bigint;
    begin
      update workspace_event_counters set last_seq = last_seq + 1 where workspace_id = ws returning last_seq into n;
      if not found then
        insert into workspace_event_counters (workspace_id, last_seq) values (ws, 1)
          on conflict (workspace_id) do update set last_seq = workspace_event_counters.last_seq + 1
          returning last_seq into n;
      end if;
      perform pg_notify('workspace_events', ws);
      return n;
    end $$`.execute(db);

  // A job's status move (and its creation): numbered at commit, the snapshot read at commit as the
  // webhook trigger reads it (0007_webhooks), so the event's data is the record of the committed move.
  await sql`
    create function jobs_workspace_event() returns trigger language plpgsql as $$
    declare
      event_id text := 'whk_' || new.id || '_' || new.event_seq;
      snapshot jsonb;
    begin
      -- A move's id is unique (the job's row lock orders its moves, each bumps event_seq), so the
      -- probe only skips a row already written; the number is taken after it, never for nothing.
      if exists (select 1 from workspace_events where id = event_id) then
        return null;
      end if;
      select to_jsonb(j) into snapshot from jobs j where j.id = new.id;
      if snapshot is null then
        return null;
      end if;
      insert into workspace_events (id, workspace_id, seq, type, subject_id, data)
        values (event_id, new.workspace_id, workspace_event_next_seq(new.workspace_id), 'job.' || new.status, new.id, snapshot);
      return null;
    end $$`.execute(db);
  await sql`
    create constraint trigger jobs_workspace_event_on_status after update on jobs
      deferrable initially deferred
      for each row
      when (old.status is distinct from new.status)
      execute function jobs_workspace_event()`.execute(db);
  await sql`
    create constraint trigger jobs_workspace_event_on_insert after insert on jobs
      deferrable initially deferred
      for each row
      execute function jobs_workspace_event()`.execute(db);

  // Any other event is inserted with a null seq by its writer and numbered at commit.
  await sql`
    create function workspace_events_number() returns trigger language plpgsql as $$
    begin
      update workspace_events set seq = workspace_event_next_seq(new.workspace_id) where id = new.id and seq is null;
      return null;
    end $$`.execute(db);
  await sql`
    create constraint trigger workspace_events_number_at_commit after insert on workspace_events
      deferrable initially deferred
      for each row
      when (new.seq is null)
      execute function workspace_events_number()`.execute(db);

  // balance.low: its id is drawn by the balance trigger (0100_balance_alerts, with 0110's fan-out),
  // which now also records the crossing here, with that id and the body's data.
  await replaceBalanceLow(db, { eventLog: true });
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await replaceBalanceLow(db, { eventLog: false });
  await sql`drop trigger workspace_events_number_at_commit on workspace_events`.execute(db);
  await sql`drop function workspace_events_number()`.execute(db);
  await sql`drop trigger jobs_workspace_event_on_insert on jobs`.execute(db);
  await sql`drop trigger jobs_workspace_event_on_status on jobs`.execute(db);
  await sql`drop function jobs_workspace_event()`.execute(db);
  await sql`drop function workspace_event_next_seq(text)`.execute(db);
  await db.schema.dropTable('workspace_events').execute();
  await db.schema.dropTable('workspace_event_counters').execute();
}
