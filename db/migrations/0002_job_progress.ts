// Job progress in the read model, a `job_events` notification on every status or progress change,
// and leased rate-limit tokens (api/rate-limit.ts explains the bounds).
import { sql, type Kysely } from 'kysely';

export const JOB_EVENTS_CHANNEL = 'job_events';

export async function up(db: Kysely<unknown>): Promise<void> {
  // Written by the job's own activities (phase changes, throttled provider percent), so a status
  // read needs no Temporal query. `attempt` is the attempt of the step that wrote it.
  await db.schema
    .alterTable('jobs')
    .addColumn('phase', 'text', (c) => c.notNull().defaultTo('queued'))
    .addColumn('percent', 'double precision')
    .addColumn('queue_position', 'integer')
    .addColumn('attempt', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('progress_updated_at', 'timestamptz')
    .execute();

  // One trigger instead of a notify in every writer: whoever moves a job, listeners hear of it.
  await sql`
    create function jobs_notify_event() returns trigger language plpgsql as $$
    begin
      perform pg_notify('job_events', new.id);
      return null;
    end $$`.execute(db);
  await sql`
    create trigger jobs_event_on_insert after insert on jobs
      for each row execute function jobs_notify_event()`.execute(db);
  await sql`
    create trigger jobs_event_on_update after update on jobs
      for each row
      when (old.status is distinct from new.status or old.phase is distinct from new.phase
            or old.percent is distinct from new.percent or old.queue_position is distinct from new.queue_position)
      execute function jobs_notify_event()`.execute(db);

  // Rate limits: the fixed-window counter becomes a list of leases (expiry, tokens) per key and
  // class, granted by one function call that holds the row lock.
  await sql`delete from rate_limits`.execute(db);
  await db.schema
    .alterTable('rate_limits')
    .dropColumn('window_start')
    .dropColumn('count')
    .addColumn('lease_expires', sql`timestamptz[]`, (c) => c.notNull().defaultTo(sql`'{}'`))
    .addColumn('lease_tokens', sql`integer[]`, (c) => c.notNull().defaultTo(sql`'{}'`))
    .execute();
  await sql`
    create function rate_limit_lease(p_key text, p_class text, p_want integer, p_limit integer, p_window_ms integer, p_lease_ms integer)
    returns table (granted_tokens integer, used_tokens integer, reset_after_ms integer)
    language plpgsql as $$
    declare
      v_window interval := make_interval(secs => p_window_ms / 1000.0);
      v_now timestamptz;
      v_exp timestamptz[];
      v_tok integer[];
      v_used integer;
      v_avail integer;
      v_grant integer;
      v_oldest timestamptz;
    begin
      -- A revoked or unknown key gets no row and no tokens (the caller answers 401).
      if not exists (select 1 from api_keys k where k.id = p_key and k.revoked_at is null) then
        return;
      end if;
      insert into rate_limits as r (api_key_id, class) values (p_key, p_class) on conflict (api_key_id, class) do nothing;
      select r.lease_expires, r.lease_tokens into v_exp, v_tok
        from rate_limits r where r.api_key_id = p_key and r.class = p_class for update;
      -- Read the clock after the lock, so stamps follow the order grants are decided in.
      v_now := clock_timestamp();
      select coalesce(array_agg(u.e order by u.e), '{}'), coalesce(array_agg(u.t order by u.e), '{}'), coalesce(sum(u.t), 0), min(u.e)
        into v_exp, v_tok, v_used, v_oldest
        from unnest(v_exp, v_tok) as u(e, t)
       where u.e > v_now - v_window;
      v_avail := greatest(p_limit - v_used, 0);
      -- At most a quarter of what is left per lease: tokens stranded on another replica stay few.
      v_grant := least(greatest(p_want, 1), v_avail, greatest(1, ceil(v_avail / 4.0)::integer));
      if v_grant > 0 then
        -- A single token is spent at once; a block may be spent until its expiry.
        v_exp := v_exp || (case when v_grant > 1 then v_now + make_interval(secs => p_lease_ms / 1000.0) else v_now end);
        v_tok := v_tok || v_grant;
        v_used := v_used + v_grant;
        v_oldest := least(coalesce(v_oldest, v_exp[cardinality(v_exp)]), v_exp[cardinality(v_exp)]);
      end if;
      update rate_limits r set lease_expires = v_exp, lease_tokens = v_tok where r.api_key_id = p_key and r.class = p_class;
      return query select v_grant, v_used,
        greatest(0, ceil(extract(epoch from (coalesce(v_oldest, v_now) + v_window - v_now)) * 1000))::integer;
    end $$`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop function rate_limit_lease(text, text, integer, integer, integer, integer)`.execute(db);
  await sql`delete from rate_limits`.execute(db);
  await db.schema
    .alterTable('rate_limits')
    .dropColumn('lease_expires')
    .dropColumn('lease_tokens')
    .addColumn('window_start', 'timestamptz', (c) => c.notNull())
    .addColumn('count', 'integer', (c) => c.notNull())
    .execute();
  await sql`drop trigger jobs_event_on_update on jobs`.execute(db);
  await sql`drop trigger jobs_event_on_insert on jobs`.execute(db);
  await sql`drop function jobs_notify_event()`.execute(db);
  await db.schema
    .alterTable('jobs')
    .dropColumn('phase')
    .dropColumn('percent')
    .dropColumn('queue_position')
    .dropColumn('attempt')
    .dropColumn('progress_updated_at')
    .execute();
}
