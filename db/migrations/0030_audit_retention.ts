// The audit log's retention (AUDIT_RETENTION_DAYS, swept by the reconciler role):
// - `audit_events_created_at_idx`: the sweep reads the oldest events across workspaces by it, so a
//   pass reads only what it removes.
// - `expire_audit_events(keep_days, max_rows)`: the app role may only read and append to the log
//   (db/roles.ts), so the sweep deletes through this SECURITY DEFINER function, owned by the
//   schema's owner. It removes at most `max_rows` events older than `keep_days` days, and never one
//   younger than 30 days whatever it is asked: credentials taken from a worker cannot erase recent
//   history. Its search_path is fixed and EXECUTE is revoked from PUBLIC, as PostgreSQL advises for
//   such functions ("Writing SECURITY DEFINER Functions Safely",
//   https://www.postgresql.org/docs/current/sql-createfunction.html); grantAppRole grants it to the app role.
import { sql, type Kysely } from 'kysely';

/** The youngest an event may be and still be removed, in days. */
const AUDIT_RETENTION_FLOOR_DAYS = 30;

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create index if not exists audit_events_created_at_idx on audit_events (created_at)`.execute(db);
  await sql`
    create or replace function expire_audit_events(keep_days integer, max_rows integer) returns integer
    language sql security definer
    set search_path = pg_catalog, pg_temp
    as $$
      with gone as (
        delete from public.audit_events
         where id in (
           select id from public.audit_events
            where created_at < now() - make_interval(days => greatest(keep_days, ${sql.lit(AUDIT_RETENTION_FLOOR_DAYS)}))
            order by created_at
            limit greatest(max_rows, 0))
        returning 1)
      select count(*)::integer from gone
    $$`.execute(db);
  await sql`revoke all on function expire_audit_events(integer, integer) from public`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop function if exists expire_audit_events(integer, integer)`.execute(db);
  await sql`drop index if exists audit_events_created_at_idx`.execute(db);
}
