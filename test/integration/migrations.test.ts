// Migrations up and down on the real Postgres: latest creates every table with its constraints,
// down-all drops them all, and up works again on the emptied database.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createTestDatabase, type TestDatabase } from '../support/stack.js';
import { migrateDownAll, migrateToLatest, migrations, syncKindChecks } from '../../db/migrate.js';
import { jobKinds } from '../../kinds/index.js';
import type { Database } from '../../db/index.js';

const appTables = [
  'actors',
  'api_keys',
  'audit_events',
  'balance_alerts',
  'batch_items',
  'batches',
  'budget_charges',
  'budget_spend',
  'budgets',
  'bulk_action_jobs',
  'bulk_actions',
  'console_sessions',
  'control_leases',
  'credit_ledger',
  'deployment_builds',
  'fetch_slots',
  'file_uploads',
  'idempotency_keys',
  'job_labels',
  'job_timeline',
  'jobs',
  'pipeline_labels',
  'pipeline_steps',
  'pipelines',
  'projects',
  'provider_circuits',
  'provider_route_outcomes',
  'rate_limits',
  'reuse_sources',
  'route_probes',
  'route_slot_routes',
  'route_slot_waiters',
  'route_slots',
  'upload_slots',
  'usage_daily',
  'usage_deltas',
  'voices',
  'webhook_attempts',
  'webhook_circuits',
  'webhook_deliveries',
  'webhook_endpoints',
  'webhook_secrets',
  'workspace_event_counters',
  'workspace_events',
  'workspace_members',
  'workspaces',
];

async function tables(db: Database): Promise<string[]> {
  const r = await sql<{ table_name: string }>`
    select table_name from information_schema.tables
    where table_schema = 'public' and table_type = 'BASE TABLE' and table_name not like 'kysely_%'
    order by table_name`.execute(db);
  return r.rows.map((t) => t.table_name);
}

async function indexes(db: Database): Promise<string[]> {
  const r = await sql<{ indexname: string }>`select indexname from pg_indexes where schemaname = 'public' order by indexname`.execute(db);
  return r.rows.map((i) => i.indexname);
}

async function kindCheckKinds(db: Database): Promise<string[]> {
  const r = await sql<{ def: string }>`select pg_get_constraintdef(oid) as def from pg_constraint where conname = 'jobs_kind_check'`.execute(db);
  return [...r.rows[0]!.def.matchAll(/'([^']*)'/g)].map((m) => m[1]!);
}

async function kindCheckValidated(db: Database): Promise<boolean> {
  const r = await sql<{ convalidated: boolean }>`select convalidated from pg_constraint where conname = 'jobs_kind_check'`.execute(db);
  return r.rows[0]!.convalidated;
}

/** A job row of any kind, through SQL (the table's types admit only the known kinds). */
async function insertJob(db: Database, id: string, kind: string): Promise<void> {
  await sql`insert into jobs (id, workspace_id, project_id, kind, model, status, params, price) values (${id}, 'ws_none', 'prj_none', ${kind}, 'm', 'pending', '{}'::jsonb, 0)`.execute(
    db,
  );
}

describe('migrations on real Postgres', () => {
  let t: TestDatabase;
  before(async () => {
    t = await createTestDatabase();
  });
  after(async () => {
    await t?.drop();
  });

  test('migrateToLatest creates every table, index and constraint', async () => {
    assert.deepEqual(await tables(t.db), appTables);
    const idx = await indexes(t.db);
    for (const name of [
      'api_keys_workspace_idx',
      'projects_workspace_page_idx',
      'jobs_unstarted_idx',
      'jobs_reused_from_idx',
      'credit_ledger_job_seq_uq',
      'actors_page_idx',
      'voices_page_idx',
      'file_uploads_pending_expiry_idx',
      'webhook_deliveries_undispatched_idx',
      'webhook_secrets_workspace_idx',
      'jobs_workspace_list_idx',
      'jobs_kind_list_idx',
      'jobs_project_list_idx',
      'idempotency_keys_created_idx',
      'webhook_deliveries_in_flight_idx',
      'webhook_deliveries_created_idx',
      'jobs_status_list_idx',
      'jobs_kind_status_list_idx',
      'jobs_model_list_idx',
      'file_uploads_failed_idx',
      'webhook_circuits_not_closed_idx',
      'webhook_deliveries_list_idx',
      'credit_ledger_usage_idx',
    ]) {
      assert.ok(idx.includes(name), `index ${name} exists`);
    }
    // The balance can never go negative.
    await t.db.insertInto('workspaces').values({ id: 'ws_mig', name: 'm', credits: 5 }).execute();
    await assert.rejects(t.db.updateTable('workspaces').set({ credits: -1 }).where('id', '=', 'ws_mig').execute(), /check constraint/);
    await t.db.deleteFrom('workspaces').where('id', '=', 'ws_mig').execute();
  });

  test('migrateToLatest again is a no-op', async () => {
    const r = await migrateToLatest(t.db);
    assert.deepEqual(r.results, []);
  });

  test("the jobs.kind check lists exactly the kind descriptors' kinds and refuses any other", async () => {
    assert.deepEqual(await kindCheckKinds(t.db), [...jobKinds]);
    // The check refuses the row before its foreign keys are looked at: no workspace or project needed.
    await assert.rejects(insertJob(t.db, 'job_unknown_kind', 'not_a_kind'), /jobs_kind_check/);
  });

  test('a kinds check that differs from the descriptors is replaced once; migrating again changes nothing', async () => {
    // As a database migrated before the last kind was added would have it.
    const older = jobKinds.slice(0, -1);
    await sql`alter table jobs drop constraint jobs_kind_check, add constraint jobs_kind_check check (kind in (${sql.join(older.map((k) => sql.lit(k)))}))`.execute(
      t.db,
    );
    assert.deepEqual(await kindCheckKinds(t.db), older);
    const r = await migrateToLatest(t.db);
    assert.deepEqual(r.results, [], 'no migration ran');
    assert.deepEqual(await kindCheckKinds(t.db), [...jobKinds]);
    assert.equal(await kindCheckValidated(t.db), true, 'the replaced check is validated');
    assert.deepEqual(await syncKindChecks(t.db), [], 'the second sync replaces nothing');
  });

  test('migrateDownAll reverts every migration and drops every table', async () => {
    const r = await migrateDownAll(t.db);
    assert.deepEqual(
      (r.results ?? []).map((m) => [m.migrationName, m.direction, m.status]),
      Object.keys(migrations)
        .reverse()
        .map((n) => [n, 'Down', 'Success']),
    );
    assert.deepEqual(await tables(t.db), []);
    assert.deepEqual(await indexes(t.db).then((i) => i.filter((n) => !n.startsWith('kysely_'))), []);
  });

  test('up again after down recreates the schema, which then works', async () => {
    const r = await migrateToLatest(t.db);
    assert.deepEqual(
      (r.results ?? []).map((m) => m.status),
      Object.keys(migrations).map(() => 'Success'),
    );
    assert.deepEqual(await tables(t.db), appTables);
    await t.db.insertInto('workspaces').values({ id: 'ws_again', name: 'again', credits: 1 }).execute();
    const row = await t.db.selectFrom('workspaces').select('credits').where('id', '=', 'ws_again').executeTakeFirstOrThrow();
    assert.equal(row.credits, 1);
  });
});
