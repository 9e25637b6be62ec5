// Costs that do not grow with history or with the jobs in flight:
// - `jobs.reconcile_lease_until`: a reconciler replica's claim on a job it is about to start or
//   settle. Claims are taken with FOR UPDATE SKIP LOCKED, so replicas share the work and never act on
//   the same row; a replica that dies mid-way leaves a claim that simply expires.
// - `jobs_in_flight_idx` goes: the reconciler no longer reads in-flight jobs by age (it asks
//   Temporal for closed runs), and a small index on created_at over pending and generating jobs
//   tempts the planner away from the list indexes for a status filter.
// - Job-list indexes for the filters that match few rows (status other than completed, per kind or
//   not; model), so every list page walks an index in its order and reads about what it returns.
// - Dependency statistics over workspace, project, kind and model, so the planner picks those indexes.
// - `file_uploads_failed_idx`: the retention sweep of refused uploads.
// - `rate_limit_lease` re-reads its row under lock until it exists, so the sweep of idle rate-limit
//   rows can delete a row between the function's insert and its lock without losing a grant.
//
// On a large existing table, create these indexes CONCURRENTLY by hand before migrating: the
// migration's `if not exists` then skips them.
import { sql, type Kysely } from 'kysely';

const leaseBody = (lockLoop: boolean) =>
  sql.raw(`
    create or replace function rate_limit_lease(p_key text, p_class text, p_want integer, p_limit integer, p_window_ms integer, p_lease_ms integer)
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
${
  lockLoop
    ? `      -- The idle-row sweep may delete the row between the insert and the lock: insert it again.
      loop
        insert into rate_limits as r (api_key_id, class) values (p_key, p_class) on conflict (api_key_id, class) do nothing;
        select r.lease_expires, r.lease_tokens into v_exp, v_tok
          from rate_limits r where r.api_key_id = p_key and r.class = p_class for update;
        exit when found;
      end loop;`
    : `      insert into rate_limits as r (api_key_id, class) values (p_key, p_class) on conflict (api_key_id, class) do nothing;
      select r.lease_expires, r.lease_tokens into v_exp, v_tok
        from rate_limits r where r.api_key_id = p_key and r.class = p_class for update;`
}
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
    end $$`);

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('jobs').addColumn('reconcile_lease_until', 'timestamptz').execute();

  await db.schema.dropIndex('jobs_in_flight_idx').execute();

  // Completed jobs are most of the history: a status filter of `completed` reads the workspace or
  // kind index at about the rate it matches, so only the other statuses need an index of their own.
  await db.schema
    .createIndex('jobs_status_list_idx')
    .ifNotExists()
    .on('jobs')
    .columns(['workspace_id', 'status', 'created_at', 'id'])
    .where(sql.ref('status'), '<>', 'completed')
    .execute();
  await db.schema
    .createIndex('jobs_kind_status_list_idx')
    .ifNotExists()
    .on('jobs')
    .columns(['workspace_id', 'kind', 'status', 'created_at', 'id'])
    .where(sql.ref('status'), '<>', 'completed')
    .execute();
  // A model belongs to one kind: this serves the model filter on every list.
  await db.schema.createIndex('jobs_model_list_idx').ifNotExists().on('jobs').columns(['workspace_id', 'model', 'created_at', 'id']).execute();

  // A project belongs to one workspace and a model to one kind: without these dependency statistics
  // the planner multiplies the selectivities as if independent and may walk the workspace index,
  // filtering, where the project or model index reads exactly the page.
  await sql`create statistics if not exists jobs_list_dependencies (dependencies) on workspace_id, project_id, kind, model from jobs`.execute(db);

  await db.schema
    .createIndex('file_uploads_failed_idx')
    .ifNotExists()
    .on('file_uploads')
    .column('updated_at')
    .where(sql.ref('status'), '=', 'failed')
    .execute();

  await leaseBody(true).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await leaseBody(false).execute(db);
  await db.schema.dropIndex('file_uploads_failed_idx').execute();
  await sql`drop statistics jobs_list_dependencies`.execute(db);
  await db.schema.dropIndex('jobs_model_list_idx').execute();
  await db.schema.dropIndex('jobs_kind_status_list_idx').execute();
  await db.schema.dropIndex('jobs_status_list_idx').execute();
  await db.schema.createIndex('jobs_in_flight_idx').on('jobs').column('updated_at').where(sql.ref('status'), 'in', ['pending', 'generating']).execute();
  await db.schema.alterTable('jobs').dropColumn('reconcile_lease_until').execute();
}
