// Least privilege for the service's own processes: the gateways and workers connect as an app role
// that may read and write rows (DML) but owns nothing and may create nothing, while migrations and
// the admin CLI run as the role that owns the schema. The tables through which a workspace is
// administered (its members, API keys, webhook signing secrets) are read-only to the app role, so
// credentials taken from a gateway cannot mint a key or add an owner: only the column the gateway
// itself writes there (api_keys.last_used_at) may be updated. The audit log is append-only to it:
// a gateway's credentials can add an event but never rewrite or erase one (so is each job's timeline); its retention sweep
// removes old events only through expire_audit_events, which spares the last 30 days.
//
// The credit ledger is insert-only to it: a charge, refund or grant is a new row, never an edit, so
// stolen app credentials can spend (through the paths that also write the balance) but never
// rewrite history. Of `workspaces` it may update the balance alone (`credits`, `updated_at`): the
// fair-share weight, the high-priority switch and the name are the operator's, set by the admin
// CLI as the owner. Projects are created by the operator too: the app reads them.
// docs/operations/managed-services.md lists every table's grants; db-roles.test.ts holds them.
//
// Run by the owning role after the migrations (`admin migrate --app-role NAME`); idempotent, and
// again after every migration so new tables are covered.
import { sql } from 'kysely';
import type { Database } from './index.js';

/** Administration tables: the app role reads them, and updates only these columns. */
export const appReadOnlyTables: Readonly<Record<string, readonly string[]>> = {
  workspace_members: [],
  api_keys: ['last_used_at'],
  webhook_secrets: [],
  budgets: [],
  workspaces: ['credits', 'updated_at'],
  projects: [],
  // Written only by the triggers and fold_usage_deltas (0076_usage_daily), as the owner.
  usage_daily: [],
  usage_deltas: [],
};

/** Logs the app appends to but never rewrites: it may read and insert rows, not change or delete them. */
export const appAppendOnlyTables: readonly string[] = ['audit_events', 'job_timeline', 'credit_ledger', 'job_labels', 'pipeline_labels'];

const ROLE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Grants `role` what the app needs on every table of the public schema (not the migrator's own tables). */
export async function grantAppRole(db: Database, role: string): Promise<{ tables: string[] }> {
  if (!ROLE_NAME.test(role)) throw new Error('the app role name must be a plain lower-case identifier');
  const r = sql.id(role);
  const tables = (
    await sql<{ tablename: string }>`select tablename from pg_tables where schemaname = 'public' and tablename not like 'kysely_%' order by tablename`.execute(
      db,
    )
  ).rows.map((t) => t.tablename);
  await db.transaction().execute(async (tx) => {
    // Nobody but the owner creates objects in the schema (PostgreSQL 15+ already defaults to this).
    await sql`revoke create on schema public from public`.execute(tx);
    await sql`grant usage on schema public to ${r}`.execute(tx);
    for (const table of tables) {
      const t = sql.id('public', table);
      await sql`revoke all on ${t} from ${r}`.execute(tx);
      const updatable = appReadOnlyTables[table];
      if (appAppendOnlyTables.includes(table)) {
        await sql`grant select, insert on ${t} to ${r}`.execute(tx);
      } else if (updatable === undefined) {
        await sql`grant select, insert, update, delete on ${t} to ${r}`.execute(tx);
      } else {
        await sql`grant select on ${t} to ${r}`.execute(tx);
        if (updatable.length > 0) await sql`grant update (${sql.join(updatable.map((c) => sql.id(c)))}) on ${t} to ${r}`.execute(tx);
      }
    }
    await sql`grant usage, select on all sequences in schema public to ${r}`.execute(tx);
    // The audit log's retention sweep deletes only through this function (0030_audit_retention).
    await sql`grant execute on function expire_audit_events(integer, integer) to ${r}`.execute(tx);
    // The reconciler folds the usage deltas into the daily rollups only through this function (0076_usage_daily).
    await sql`grant execute on function fold_usage_deltas() to ${r}`.execute(tx);
    // The gateway mints and revokes keys for an owner's admin key only through these (0105_scoped_keys).
    await sql`grant execute on function mint_api_key(text, text, text, text, text, text[], text[], text[], cidr[], timestamptz, text, integer, text, integer[]) to ${r}`.execute(
      tx,
    );
    await sql`grant execute on function revoke_api_key_with_key(text, text, text) to ${r}`.execute(tx);
  });
  return { tables };
}
