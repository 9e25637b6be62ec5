// Daily usage rollups, so GET /v1/usage reads a year as at most a few hundred rows per group
// instead of every ledger row and job of the year (db/repos/usage.ts):
//
// - `usage_daily`: per workspace, UTC day and job group (the API key, '' for none, the project, the
//   model, the kind) the figures the report sums: credits spent and refunded and the ledger rows they
//   came from (by the ledger row's day), jobs created and how many are in each status now (by the
//   job's creation day). `ledger_rows` + `created` > 0 is what makes a group appear in a report, as
//   a raw row would, even when its figures are zero.
// - `usage_deltas`: the changes not yet folded into `usage_daily`, appended by triggers in the
//   transaction of the write they count: a job's insert, its status move (old status out, new in,
//   one row), a change of its group (its count and its ledger sums move), a charge, recharge or
//   refund ledger row. Appending never updates a shared row, so concurrent jobs of one workspace and
//   day never wait on one another's counter and no lock order can deadlock; a report reads
//   `usage_daily` plus the deltas of its range in one snapshot, so it is exact at every moment.
// - `fold_usage_deltas()`: the reconciler's pass moves the deltas into `usage_daily` in one
//   statement (delete … returning, summed, upserted), one folder at a time (an advisory lock).
//
// The app role only reads both tables: the triggers and the fold are SECURITY DEFINER functions of
// the schema's owner (search_path fixed, EXECUTE of the fold granted by grantAppRole), so credentials
// taken from a gateway cannot write usage figures. Edits the service never makes (a ledger row
// rewritten or removed, a job deleted) are counted too, so the owner's hand fixes stay exact; a
// deleted workspace's rollups are left behind, unread.
//
// The backfill counts the existing history under a SHARE lock on `jobs` and `credit_ledger` (reads
// go on; writes wait until the migration commits, one pass over both tables), so no
// write falls between the backfill and the triggers.
import { sql, type Kysely } from 'kysely';

/** The figures of a rollup row, in the order the statements below list them. */
const FIGURES = ['spent', 'refunded', 'ledger_rows', 'created', 'n_pending', 'n_generating', 'n_completed', 'n_failed'] as const;
/** The job statuses (shared/job-model.ts `jobStatuses`), one count column each. */
const STATUSES = ['pending', 'generating', 'completed', 'failed'] as const;
const GROUP = 'workspace_id, day, api_key_id, project_id, model, kind';

const table = (name: string) => sql`
  create table ${sql.table(name)} (
    workspace_id text not null,
    day timestamptz not null,
    api_key_id text not null,
    project_id text not null,
    model text not null,
    kind text not null,
    ${sql.raw(FIGURES.map((f) => `${f} bigint not null default 0`).join(',\n    '))}
    ${name === 'usage_daily' ? sql.raw(`, primary key (${GROUP})`) : sql``}
  )`;

/** A job's count row: `sign` 1 adds the job (as `rec` is), -1 takes it away. */
const jobRow = (rec: 'new' | 'old', sign: 1 | -1) => {
  const s = sign === 1 ? '' : '-';
  const status = (st: string) => `${s}(${rec}.status = '${st}')::int`;
  return `(${rec}.workspace_id, date_trunc('day', ${rec}.created_at, 'UTC'), coalesce(${rec}.api_key_id, ''), ${rec}.project_id, ${rec}.model, ${rec}.kind,
           0, 0, 0, ${s}1, ${STATUSES.map(status).join(', ')})`;
};

/** A status move of a job that kept its group: the old status out, the new one in. */
const statusMove = `(new.workspace_id, date_trunc('day', new.created_at, 'UTC'), coalesce(new.api_key_id, ''), new.project_id, new.model, new.kind,
  0, 0, 0, 0, ${STATUSES.map((st) => `(new.status = '${st}')::int - (old.status = '${st}')::int`).join(', ')})`;

/** The job's ledger sums per ledger day, under `rec`'s group: `sign` -1 takes them out of it. */
const ledgerOfJob = (rec: 'new' | 'old', sign: 1 | -1) => {
  const s = sign === 1 ? '' : '-';
  return `insert into public.usage_deltas (${GROUP}, spent, refunded, ledger_rows)
          select l.workspace_id, date_trunc('day', l.created_at, 'UTC'), coalesce(${rec}.api_key_id, ''), ${rec}.project_id, ${rec}.model, ${rec}.kind,
                 ${s}sum(case when l.reason in ('charge', 'recharge') then -l.delta else 0 end),
                 ${s}sum(case when l.reason = 'refund' then l.delta else 0 end), ${s}count(*)
          from public.credit_ledger l
          where l.job_id = ${rec}.id and l.reason in ('charge', 'recharge', 'refund')
          group by 1, 2;`;
};

/** One ledger row's delta under its job's group, when it is usage: `sign` -1 takes it out. */
const ledgerRow = (rec: 'new' | 'old', sign: 1 | -1) => {
  const s = sign === 1 ? '' : '-';
  return `insert into public.usage_deltas (${GROUP}, spent, refunded, ledger_rows)
          select ${rec}.workspace_id, date_trunc('day', ${rec}.created_at, 'UTC'), coalesce(j.api_key_id, ''), j.project_id, j.model, j.kind,
                 ${s}(case when ${rec}.reason in ('charge', 'recharge') then -${rec}.delta else 0 end),
                 ${s}(case when ${rec}.reason = 'refund' then ${rec}.delta else 0 end), ${s}1
          from public.jobs j
          where j.id = ${rec}.job_id and ${rec}.reason in ('charge', 'recharge', 'refund');`;
};

// Over 80 lines: a migration is the record of one schema step, its DDL in the order it runs; applied
// databases hold it, so it is never edited or split after it ships.
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`lock table jobs, credit_ledger in share mode`.execute(db);
  await table('usage_daily').execute(db);
  await table('usage_deltas').execute(db);
  await sql`create index usage_deltas_workspace_day_idx on usage_deltas (workspace_id, day)`.execute(db);

  const columns = sql.raw(`${GROUP}, ${FIGURES.join(', ')}`);
  await sql`
    create function usage_track_job() returns trigger
    language plpgsql security definer
    set search_path = pg_catalog, pg_temp
    as $$
    begin
      if tg_op = 'INSERT' then
        insert into public.usage_deltas (${columns}) values ${sql.raw(jobRow('new', 1))};
      elsif tg_op = 'DELETE' then
        -- Before the row goes (and its ledger rows with it, by cascade): its count and its ledger sums leave.
        insert into public.usage_deltas (${columns}) values ${sql.raw(jobRow('old', -1))};
        ${sql.raw(ledgerOfJob('old', -1))}
        return old;
      elsif old.workspace_id = new.workspace_id and old.created_at = new.created_at and old.api_key_id is not distinct from new.api_key_id
            and old.project_id = new.project_id and old.model = new.model and old.kind = new.kind then
        -- A status move: the old status out and the new one in, one row.
        insert into public.usage_deltas (${columns}) values ${sql.raw(statusMove)};
      else
        -- The job changed group: its count and its ledger sums leave the old one for the new.
        insert into public.usage_deltas (${columns}) values ${sql.raw(jobRow('old', -1))}, ${sql.raw(jobRow('new', 1))};
        ${sql.raw(ledgerOfJob('old', -1))}
        ${sql.raw(ledgerOfJob('new', 1))}
      end if;
      return null;
    end $$`.execute(db);
  await sql`
    create function usage_track_ledger() returns trigger
    language plpgsql security definer
    set search_path = pg_catalog, pg_temp
    as $$
    begin
      -- A row counts under its job's group; one whose job is gone (deleted with it by cascade) was
      -- taken out with the job (usage_track_job).
      if tg_op in ('UPDATE', 'DELETE') then
        ${sql.raw(ledgerRow('old', -1))}
      end if;
      if tg_op in ('INSERT', 'UPDATE') then
        ${sql.raw(ledgerRow('new', 1))}
      end if;
      return null;
    end $$`.execute(db);
  await sql`create trigger usage_on_job_insert after insert on jobs for each row execute function usage_track_job()`.execute(db);
  await sql`
    create trigger usage_on_job_update after update of status, workspace_id, created_at, api_key_id, project_id, model, kind on jobs
      for each row
      when (old.status is distinct from new.status or old.workspace_id is distinct from new.workspace_id
            or old.created_at is distinct from new.created_at or old.api_key_id is distinct from new.api_key_id
            or old.project_id is distinct from new.project_id or old.model is distinct from new.model or old.kind is distinct from new.kind)
      execute function usage_track_job()`.execute(db);
  await sql`
    create trigger usage_on_ledger_insert after insert on credit_ledger
      for each row when (new.job_id is not null and new.reason in ('charge', 'recharge', 'refund'))
      execute function usage_track_ledger()`.execute(db);
  // Rewrites and removals the service never makes (the ledger is insert-only to it, and jobs are
  // never deleted), counted all the same when the owner makes them by hand.
  await sql`create trigger usage_on_ledger_change after update or delete on credit_ledger for each row execute function usage_track_ledger()`.execute(db);
  await sql`create trigger usage_on_job_delete before delete on jobs for each row execute function usage_track_job()`.execute(db);

  const sums = sql.raw(FIGURES.map((f) => `sum(${f})`).join(', '));
  const add = sql.raw(FIGURES.map((f) => `${f} = d.${f} + excluded.${f}`).join(', '));
  await sql`
    create function fold_usage_deltas() returns integer
    language plpgsql security definer
    set search_path = pg_catalog, pg_temp
    as $$
    declare
      n integer;
    begin
      if not pg_try_advisory_xact_lock(hashtext('usage_daily:fold')) then
        return 0;
      end if;
      with gone as (delete from public.usage_deltas returning *)
      insert into public.usage_daily as d (${columns})
      select ${sql.raw(GROUP)}, ${sums} from gone group by ${sql.raw(GROUP)} order by ${sql.raw(GROUP)}
      on conflict (${sql.raw(GROUP)}) do update set ${add};
      get diagnostics n = row_count;
      return n;
    end $$`.execute(db);
  await sql`revoke all on function fold_usage_deltas() from public`.execute(db);
  await sql`revoke all on function usage_track_job() from public`.execute(db);
  await sql`revoke all on function usage_track_ledger() from public`.execute(db);

  // The history so far, counted as the triggers would have.
  await sql`
    insert into usage_daily (${columns})
    select ${sql.raw(GROUP)}, ${sums}
    from (
      select workspace_id, date_trunc('day', created_at, 'UTC') as day, coalesce(api_key_id, '') as api_key_id, project_id, model, kind,
             0 as spent, 0 as refunded, 0 as ledger_rows, 1 as created,
             (status = 'pending')::int as n_pending, (status = 'generating')::int as n_generating,
             (status = 'completed')::int as n_completed, (status = 'failed')::int as n_failed
      from jobs
      union all
      select l.workspace_id, date_trunc('day', l.created_at, 'UTC'), coalesce(j.api_key_id, ''), j.project_id, j.model, j.kind,
             case when l.reason in ('charge', 'recharge') then -l.delta else 0 end, case when l.reason = 'refund' then l.delta else 0 end, 1,
             0, 0, 0, 0, 0
      from credit_ledger l join jobs j on j.id = l.job_id
      where l.reason in ('charge', 'recharge', 'refund')
    ) h
    group by ${sql.raw(GROUP)}`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop trigger if exists usage_on_job_delete on jobs`.execute(db);
  await sql`drop trigger if exists usage_on_ledger_change on credit_ledger`.execute(db);
  await sql`drop trigger if exists usage_on_ledger_insert on credit_ledger`.execute(db);
  await sql`drop trigger if exists usage_on_job_update on jobs`.execute(db);
  await sql`drop trigger if exists usage_on_job_insert on jobs`.execute(db);
  await sql`drop function if exists fold_usage_deltas()`.execute(db);
  await sql`drop function if exists usage_track_ledger()`.execute(db);
  await sql`drop function if exists usage_track_job()`.execute(db);
  await sql`drop table if exists usage_deltas`.execute(db);
  await sql`drop table if exists usage_daily`.execute(db);
}
