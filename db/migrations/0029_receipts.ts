// Job receipts: what a job was charged and refunded, and what happened to it, readable per job
// without summing the ledger or asking Temporal.
// - `jobs.credits_charged` / `credits_refunded`: the sums of the job's ledger debits and credits,
//   written in the statement or transaction that writes each ledger row (insertJobWithCharge,
//   settleChargeTo), so the record's `charges` nets to the ledger on every read at no extra cost.
//   Backfilled from the ledger here.
// - `job_timeline`: an append-only log of each job's moves and money. The ledger code writes the
//   money entries; the trigger below writes the moves, in the transaction of the UPDATE that makes
//   them, whoever runs it (a workflow step, the gateway's cancel, the reconciler, an operator's
//   SQL), like the job_events notification (0002_job_progress). `(job_id, key)` is unique and every
//   write skips a key already there, so a step retried after its commit adds nothing.
import { sql, type Kysely } from 'kysely';

// Over 80 lines: a migration is the record of one schema step, its DDL in the order it runs; applied
// databases hold it, so it is never edited or split after it ships.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('jobs')
    .addColumn('credits_charged', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('credits_refunded', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`
    update jobs j set credits_charged = l.charged, credits_refunded = l.refunded
      from (select job_id, coalesce(sum(-delta) filter (where delta < 0), 0)::int as charged,
                   coalesce(sum(delta) filter (where delta > 0), 0)::int as refunded
              from credit_ledger where job_id is not null group by job_id) l
     where j.id = l.job_id`.execute(db);

  await db.schema
    .createTable('job_timeline')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('job_id', 'text', (c) => c.notNull().references('jobs.id').onDelete('cascade'))
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('details', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('at', 'timestamptz', (c) => c.notNull().defaultTo(sql`clock_timestamp()`))
    .addUniqueConstraint('job_timeline_job_key', ['job_id', 'key'])
    .execute();

  // The jobs created before this migration: their creation and their ledger rows.
  await sql`
    insert into job_timeline (job_id, key, type, details, at)
    select id, 'created', 'created', jsonb_build_object('model', model, 'provider', params->>'provider', 'price', price, 'priority', priority), created_at
      from jobs order by created_at, id`.execute(db);
  await sql`
    insert into job_timeline (job_id, key, type, details, at)
    select job_id, 'ledger:' || job_seq,
           case when reason = 'charge' then 'charged' when delta > 0 then 'refunded' else 'recharged' end,
           jsonb_build_object('amount', abs(delta)), created_at
      from credit_ledger where job_id is not null and job_seq is not null and delta <> 0
     order by created_at, job_id, job_seq`.execute(db);

  // The moves, in the order a job makes them within one UPDATE: claimed by a run, routes given up
  // and the failover, a request submitted, the cancel asked, the end, the outputs deleted. No key
  // or detail can be null or fail on an odd value: the trigger must never refuse a job's move.
  await sql`
    create function jobs_timeline_on_update() returns trigger language plpgsql as $$
    declare
      before_n int := case when jsonb_typeof(old.provider_attempts) = 'array' then jsonb_array_length(old.provider_attempts) else 0 end;
      after_n int := case when jsonb_typeof(new.provider_attempts) = 'array' then jsonb_array_length(new.provider_attempts) else 0 end;
      gave_up jsonb;
    begin
      if new.status = 'generating' and (old.status <> 'generating' or old.status_run_id is distinct from new.status_run_id) then
        insert into job_timeline (job_id, key, type, details)
        values (new.id, 'started:' || coalesce(new.status_run_id, '-'), 'started',
                jsonb_build_object('provider', new.params->>'provider', 'revived', old.status = 'failed'))
        on conflict do nothing;
      end if;
      for i in before_n .. after_n - 1 loop
        gave_up := new.provider_attempts -> i;
        insert into job_timeline (job_id, key, type, details)
        values (new.id, 'gave_up:' || i, 'provider_gave_up', jsonb_build_object('provider', gave_up->>'provider', 'error', gave_up->>'error'))
        on conflict do nothing;
      end loop;
      if after_n > before_n and (new.params->>'provider') is distinct from (old.params->>'provider') then
        insert into job_timeline (job_id, key, type, details)
        values (new.id, 'failover:' || after_n, 'failover',
                jsonb_build_object('from', old.params->>'provider', 'to', new.params->>'provider',
                                   'provider_model_id', new.params->>'provider_model_id', 'reason', gave_up->>'error'))
        on conflict do nothing;
      end if;
      if new.provider_ref is not null and new.provider_ref is distinct from old.provider_ref then
        insert into job_timeline (job_id, key, type, details)
        values (new.id, 'submitted:' || md5(new.provider_ref::text), 'submitted',
                jsonb_build_object('provider', coalesce(new.provider_ref->>'provider', new.params->>'provider'),
                                   'provider_model_id', new.params->>'provider_model_id', 'attempt', new.attempt))
        on conflict do nothing;
      end if;
      if new.cancel_requested_at is not null and old.cancel_requested_at is null then
        insert into job_timeline (job_id, key, type, details) values (new.id, 'cancel_requested', 'cancel_requested', '{}') on conflict do nothing;
      end if;
      if new.status = 'completed' and old.status <> 'completed' then
        insert into job_timeline (job_id, key, type, details)
        values (new.id, 'outputs_stored', 'outputs_stored', jsonb_build_object('count', case when jsonb_typeof(new.outputs) = 'array' then jsonb_array_length(new.outputs) else 0 end)),
               (new.id, 'completed', 'completed', jsonb_build_object('provider', new.params->>'provider'))
        on conflict do nothing;
      end if;
      if new.status = 'failed' and old.status <> 'failed' then
        insert into job_timeline (job_id, key, type, details)
        values (new.id, 'failed:' || coalesce(new.status_run_id, '-') || ':' || (extract(epoch from coalesce(new.finished_at, now())) * 1000000)::bigint, 'failed',
                jsonb_build_object('code', new.error->>'code', 'message', new.error->>'message', 'cancel_kept', new.cancel_kept))
        on conflict do nothing;
      end if;
      if new.outputs_removed_at is not null and old.outputs_removed_at is null then
        insert into job_timeline (job_id, key, type, details) values (new.id, 'outputs_deleted', 'outputs_deleted', '{}') on conflict do nothing;
      end if;
      return null;
    end $$`.execute(db);
  // Only the updates that move a job fire it: progress writes (phase, percent) do not.
  await sql`
    create trigger jobs_timeline_on_update after update on jobs
      for each row
      when (old.status is distinct from new.status or old.status_run_id is distinct from new.status_run_id
            or old.provider_ref is distinct from new.provider_ref or old.provider_attempts is distinct from new.provider_attempts
            or old.cancel_requested_at is distinct from new.cancel_requested_at or old.outputs_removed_at is distinct from new.outputs_removed_at)
      execute function jobs_timeline_on_update()`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop trigger jobs_timeline_on_update on jobs`.execute(db);
  await sql`drop function jobs_timeline_on_update()`.execute(db);
  await db.schema.dropTable('job_timeline').ifExists().execute();
  await db.schema.alterTable('jobs').dropColumn('credits_charged').dropColumn('credits_refunded').execute();
}
