// Migrations are listed explicitly (no directory scan), so the bundle and the order are fixed.
import { Migrator, NO_MIGRATIONS, sql, type Kysely, type Migration, type MigrationResultSet } from 'kysely';
import type { DB } from './schema.js';
import { defaultLongStatementMs } from './index.js';
import { jobKinds } from '../kinds/index.js';
import * as m0001 from './migrations/0001_initial.js';
import * as m0002 from './migrations/0002_job_progress.js';
import * as m0003 from './migrations/0003_hardening.js';
import * as m0005 from './migrations/0005_direct_uploads.js';
import * as m0006 from './migrations/0006_job_events_seq.js';
import * as m0007 from './migrations/0007_webhooks.js';
import * as m0008 from './migrations/0008_idempotency_lists.js';
import * as m0010 from './migrations/0010_tenant_isolation.js';
import * as m0011 from './migrations/0011_flat_at_scale.js';
import * as m0012 from './migrations/0012_provider_failover.js';
import * as m0014 from './migrations/0014_webhook_circuits.js';
import * as m0015 from './migrations/0015_cancel_charges.js';
import * as m0016 from './migrations/0016_upload_expiry.js';
import * as m0018 from './migrations/0018_run_claims.js';
import * as m0019 from './migrations/0019_breaker_trials.js';
import * as m0020 from './migrations/0020_route_probes.js';
import * as m0021 from './migrations/0021_fair_share.js';
import * as m0024 from './migrations/0024_route_slots.js';
import * as m0025 from './migrations/0025_queue_view.js';
import * as m0026 from './migrations/0026_audit_events.js';
import * as m0027 from './migrations/0027_usage.js';
import * as m0028 from './migrations/0028_budgets.js';
import * as m0029 from './migrations/0029_receipts.js';
import * as m0030 from './migrations/0030_audit_retention.js';
import * as m0031 from './migrations/0031_webhook_attempts.js';
import * as m0032 from './migrations/0032_pipelines.js';
import * as m0033 from './migrations/0033_pipeline_events.js';
import * as m0034 from './migrations/0034_pipeline_sweeps.js';
import * as m0040 from './migrations/0040_upload_slots.js';
import * as m0045 from './migrations/0045_control_leases.js';
import * as m0046 from './migrations/0046_control_claims.js';
import * as m0050 from './migrations/0050_deployment_builds.js';
import * as m0055 from './migrations/0055_route_lifecycle.js';
import * as m0070 from './migrations/0070_route_slot_grants.js';
import * as m0075 from './migrations/0075_fetch_slots.js';
import * as m0076 from './migrations/0076_usage_daily.js';
import * as m0100 from './migrations/0100_balance_alerts.js';
import * as m0105 from './migrations/0105_scoped_keys.js';
import * as m0110 from './migrations/0110_webhook_endpoints.js';
import * as m0115 from './migrations/0115_labels.js';
import * as m0120 from './migrations/0120_workspace_events.js';
import * as m0125 from './migrations/0125_batches.js';
import * as m0130 from './migrations/0130_console_sessions.js';
import * as m0135 from './migrations/0135_bulk_actions.js';
import * as m0140 from './migrations/0140_workspace_events_by_type.js';
import * as m0145 from './migrations/0145_request_reuse.js';
import * as m0150 from './migrations/0150_batch_pipelines.js';

export const migrations: Record<string, Migration> = {
  '0001_initial': m0001,
  '0002_job_progress': m0002,
  '0003_hardening': m0003,
  '0005_direct_uploads': m0005,
  '0006_job_events_seq': m0006,
  '0007_webhooks': m0007,
  '0008_idempotency_lists': m0008,
  '0010_tenant_isolation': m0010,
  '0011_flat_at_scale': m0011,
  '0012_provider_failover': m0012,
  '0014_webhook_circuits': m0014,
  '0015_cancel_charges': m0015,
  '0016_upload_expiry': m0016,
  '0018_run_claims': m0018,
  '0019_breaker_trials': m0019,
  '0020_route_probes': m0020,
  '0021_fair_share': m0021,
  '0024_route_slots': m0024,
  '0025_queue_view': m0025,
  '0026_audit_events': m0026,
  '0027_usage': m0027,
  '0028_budgets': m0028,
  '0029_receipts': m0029,
  '0030_audit_retention': m0030,
  '0031_webhook_attempts': m0031,
  '0032_pipelines': m0032,
  '0033_pipeline_events': m0033,
  '0034_pipeline_sweeps': m0034,
  '0040_upload_slots': m0040,
  '0045_control_leases': m0045,
  '0046_control_claims': m0046,
  '0050_deployment_builds': m0050,
  '0055_route_lifecycle': m0055,
  '0070_route_slot_grants': m0070,
  '0075_fetch_slots': m0075,
  '0076_usage_daily': m0076,
  '0100_balance_alerts': m0100,
  '0105_scoped_keys': m0105,
  '0110_webhook_endpoints': m0110,
  '0115_labels': m0115,
  '0120_workspace_events': m0120,
  '0125_batches': m0125,
  '0130_console_sessions': m0130,
  '0135_bulk_actions': m0135,
  '0140_workspace_events_by_type': m0140,
  '0145_request_reuse': m0145,
  '0150_batch_pipelines': m0150,
};

function migrator(db: Kysely<DB>): Migrator {
  return new Migrator({ db, provider: { getMigrations: async () => migrations } });
}

function check(result: MigrationResultSet): MigrationResultSet {
  if (result.error) {
    const failed = result.results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(`migration ${failed} failed: ${String((result.error as Error).message ?? result.error)}`);
  }
  return result;
}

/**
 * Runs every pending migration on one session whose statements may run and wait on locks for
 * `longStatementMs` (DATABASE_LONG_STATEMENT_TIMEOUT_MS): an index build or a table rewrite is
 * long by nature, and the pool's own bounds are for the service's short statements.
 */
export async function migrateToLatest(db: Kysely<DB>, longStatementMs = defaultLongStatementMs): Promise<MigrationResultSet> {
  return db.connection().execute(async (conn) => {
    await sql`select set_config('statement_timeout', ${String(longStatementMs)}, false), set_config('lock_timeout', ${String(longStatementMs)}, false)`.execute(
      conn,
    );
    try {
      const result = check(await migrator(conn).migrateToLatest());
      await syncKindChecks(conn);
      return result;
    } finally {
      // The session goes back to the pool with its own bounds.
      await sql`reset statement_timeout`.execute(conn);
      await sql`reset lock_timeout`.execute(conn);
    }
  });
}

/**
 * The check constraints that list the job kinds (0001_initial created them). They follow the kind
 * descriptors (kinds/<kind>/descriptor.ts `jobKinds`) rather than a migration per new kind: see syncKindChecks.
 */
const kindChecks = [{ table: 'jobs', column: 'kind', name: 'jobs_kind_check' }] as const;

/**
 * Makes every check that lists the job kinds allow exactly `jobKinds`, after the migrations. Only a
 * check that differs is replaced: dropped and re-added NOT VALID in one statement (a brief lock, no
 * scan), then validated on its own, which scans the table without blocking writes. Answers the
 * checks it replaced (none when they already matched).
 */
export async function syncKindChecks(db: Kysely<DB>): Promise<string[]> {
  const replaced: string[] = [];
  for (const c of kindChecks) {
    const table = await sql<{ exists: boolean }>`select to_regclass(${c.table}) is not null as exists`.execute(db);
    if (!table.rows[0]?.exists) continue;
    const current = await sql<{ def: string }>`
      select pg_get_constraintdef(oid) as def from pg_constraint
      where conrelid = to_regclass(${c.table}) and conname = ${c.name}`.execute(db);
    // pg_get_constraintdef spells `kind in (...)` as `CHECK ((kind = ANY (ARRAY['image'::text, ...])))`.
    const listed = [...(current.rows[0]?.def ?? '').matchAll(/'((?:[^']|'')*)'/g)].map((m) => m[1]!.replaceAll("''", "'"));
    if (current.rows.length > 0 && listed.join('\n') === jobKinds.join('\n')) continue;
    const kinds = sql.join(jobKinds.map((k) => sql.lit(k)));
    await sql`alter table ${sql.table(c.table)} drop constraint if exists ${sql.ref(c.name)}, add constraint ${sql.ref(c.name)} check (${sql.ref(c.column)} in (${kinds})) not valid`.execute(
      db,
    );
    await sql`alter table ${sql.table(c.table)} validate constraint ${sql.ref(c.name)}`.execute(db);
    replaced.push(c.name);
  }
  return replaced;
}

export async function migrateDownAll(db: Kysely<DB>): Promise<MigrationResultSet> {
  return check(await migrator(db).migrateTo(NO_MIGRATIONS));
}
