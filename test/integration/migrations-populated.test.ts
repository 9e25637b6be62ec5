// Every migration down and up over a populated database. The schema at the latest migration is
// filled with representative rows (workspaces, members, keys, projects, jobs in each status with
// their ledger charges and refunds, uploads, webhook secrets, deliveries and attempts, pipelines and
// their steps, usage rows, budgets, audit events, the catalogs), then walked DOWN one migration at a
// time to the first; at each level the migration just reverted is applied again and reverted again
// (each up runs over the rows the older schema holds, each down over the rows the newer one holds).
// From the first migration the walk goes UP one at a time back to the latest. After every step,
// every row of every table that exists on both sides keeps the values of every column that exists
// on both sides, and the credit ledger keeps its count and sum; at the end the first migration's
// columns hold the values seeded at the start. Last, down-all reverts every migration over that data.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Migrator, sql, type Migration } from 'kysely';
import { createTestDatabase, type TestDatabase } from '../support/stack.js';
import { migrateDownAll, migrations } from '../../db/migrate.js';
import type { Database } from '../../db/index.js';

const names = Object.keys(migrations);

/** One table as a step found it: its columns (name → type) and its rows as JSON. */
type Table = { columns: Map<string, string>; rows: Array<Record<string, unknown>> };
type Snapshot = Map<string, Table>;

async function snapshot(db: Database): Promise<Snapshot> {
  const cols = await sql<{ table_name: string; column_name: string; data_type: string }>`
    select c.table_name, c.column_name, c.data_type from information_schema.columns c
    join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
    where c.table_schema = 'public' and t.table_type = 'BASE TABLE' and c.table_name not like 'kysely_%'
    order by c.table_name, c.ordinal_position`.execute(db);
  const out: Snapshot = new Map();
  for (const c of cols.rows) {
    if (!out.has(c.table_name)) out.set(c.table_name, { columns: new Map(), rows: [] });
    out.get(c.table_name)!.columns.set(c.column_name, c.data_type);
  }
  for (const [name, table] of out) {
    const r = await sql<{ row: Record<string, unknown> }>`select to_jsonb(t) as row from ${sql.table(name)} t`.execute(db);
    table.rows = r.rows.map((x) => x.row);
  }
  return out;
}

/** The rows of `table` projected on `columns`, in a canonical order (JSON text, sorted). */
const projected = (table: Table, columns: string[]) => table.rows.map((r) => JSON.stringify(columns.map((c) => [c, r[c] ?? null]))).sort();

/**
 * Every table present in both snapshots keeps its rows: the same count, and the same values in each
 * column of the same name and type on both sides (and in `only`, when given: the tables and columns
 * a step in between kept). Answers the number of rows compared.
 */
function assertKept(before: Snapshot, after: Snapshot, step: string, only?: Snapshot, rewritten: readonly string[] = []): number {
  let compared = 0;
  for (const [name, was] of before) {
    const now = after.get(name);
    if (!now || (only && !only.has(name)) || rewritten.includes(`${name}.*`)) continue;
    const within = only?.get(name)?.columns;
    const common = [...was.columns]
      .filter(([c, type]) => now.columns.get(c) === type && (!within || within.get(c) === type) && !rewritten.includes(`${name}.${c}`))
      .map(([c]) => c);
    assert.equal(now.rows.length, was.rows.length, `${step}: ${name} kept its ${was.rows.length} rows`);
    assert.deepEqual(projected(now, common), projected(was, common), `${step}: ${name}'s rows kept their values (${common.join(', ')})`);
    compared += was.rows.length;
  }
  return compared;
}

/**
 * The columns a migration step rewrites on purpose, each stating why in that migration: values the
 * older schema cannot hold, or a backfill of what it never wrote. Only these may change, and only
 * in that step.
 */
const rewrites: Record<string, readonly string[]> = {
  // Tombstones (expired, deleted) become failed uploads; completed uploads lose their expiry…
  'down 0016_upload_expiry': ['file_uploads.status', 'file_uploads.expires_at'],
  // …which the up gives back to them (30 days from their creation).
  'up 0016_upload_expiry': ['file_uploads.expires_at'],
  // Rate-limit windows (`table.*`: the whole table) are emptied both ways: they restart in seconds.
  'up 0002_job_progress': ['rate_limits.*'],
  'down 0002_job_progress': ['rate_limits.*'],
};
const rewritten = Object.values(rewrites).flat();

/** The ledger's count and sum, when the table exists. */
async function ledger(db: Database): Promise<{ n: number; sum: number } | null> {
  const exists = await sql<{ e: boolean }>`select to_regclass('credit_ledger') is not null as e`.execute(db);
  if (!exists.rows[0]!.e) return null;
  const r = await sql<{ n: string; sum: string }>`select count(*) as n, coalesce(sum(delta), 0) as sum from credit_ledger`.execute(db);
  return { n: Number(r.rows[0]!.n), sum: Number(r.rows[0]!.sum) };
}

/** Representative rows of every table of the latest schema, with the values a running service writes. */
async function seed(db: Database): Promise<void> {
  const run = (q: ReturnType<typeof sql>) => q.execute(db);
  await run(sql`insert into workspaces (id, name, credits) values ('ws_a', 'Acme', 790), ('ws_b', 'Bravo', 5)`);
  await run(
    sql`insert into workspace_members (workspace_id, email, role) values ('ws_a', 'owner@acme.test', 'owner'), ('ws_a', 'dev@acme.test', 'member'), ('ws_b', 'b@bravo.test', 'owner')`,
  );
  await run(sql`insert into api_keys (id, workspace_id, name, secret_hash, created_by) values
    ('key_a', 'ws_a', 'ci', 'hash-a', 'owner@acme.test'), ('key_b', 'ws_b', 'laptop', 'hash-b', 'b@bravo.test')`);
  // A scoped key (0105_scoped_keys): its rules go with 0105's down and come back empty with its up.
  await run(sql`insert into api_keys (id, workspace_id, name, secret_hash, created_by, scopes, allowed_models, allowed_kinds, allowed_ips, expires_at) values
    ('key_scoped', 'ws_a', 'render farm', 'hash-s', 'owner@acme.test', '{read,generate}', '{nano-banana-2}', '{image}', '{10.0.0.0/8}', '2030-01-01T00:00:00Z')`);
  await run(sql`insert into projects (id, workspace_id, name) values ('prj_a', 'ws_a', 'Launch'), ('prj_b', 'ws_b', 'Default')`);
  const params = (prompt: string) => JSON.stringify({ prompt, provider: 'local', aspect_ratio: '1:1', count: 1, deadline_seconds: 600 });
  // Each job's credits_charged / credits_refunded are its ledger rows' sums, as the service writes them.
  await run(sql`insert into jobs (id, kind, workspace_id, project_id, api_key_id, model, status, params, price, outputs, error, started_at, finished_at, credits_charged, credits_refunded) values
    ('job_done', 'image', 'ws_a', 'prj_a', 'key_a', 'nano-banana-2', 'completed', ${params('a fox')}::jsonb, 100, '[{"key":"out/job_done-0.png","mime_type":"image/png"}]'::jsonb, null, now(), now(), 100, 0),
    ('job_failed', 'video', 'ws_a', 'prj_a', 'key_a', 'seedance-1.5', 'failed', ${params('a wave')}::jsonb, 40, null, '{"code":"generation_failed","message":"refused"}'::jsonb, now(), now(), 40, 40),
    ('job_gen', 'image', 'ws_a', 'prj_a', 'key_a', 'nano-banana-2', 'generating', ${params('a kite')}::jsonb, 60, null, null, now(), null, 60, 0),
    ('job_pending', 'talking_actor', 'ws_b', 'prj_b', 'key_b', 'talking-actor-1', 'pending', ${params('hello')}::jsonb, 5, null, null, null, null, 5, 0),
    ('job_reset', 'replace_actor', 'ws_b', 'prj_b', 'key_b', 'replace-actor-1', 'completed', ${params('swap')}::jsonb, 20, '[]'::jsonb, null, now(), now(), 40, 20)`);
  await run(sql`insert into credit_ledger (workspace_id, job_id, job_seq, delta, reason, note) values
    ('ws_a', null, null, 1000, 'grant', 'opening balance'),
    ('ws_b', null, null, 30, 'grant', null),
    ('ws_a', 'job_done', 1, -100, 'charge', null),
    ('ws_a', 'job_failed', 1, -40, 'charge', null),
    ('ws_a', 'job_failed', 2, 40, 'refund', null),
    ('ws_a', 'job_gen', 1, -60, 'charge', null),
    ('ws_a', null, null, -50, 'deduct', 'support adjustment'),
    ('ws_b', 'job_pending', 1, -5, 'charge', null),
    ('ws_b', 'job_reset', 1, -20, 'charge', null),
    ('ws_b', 'job_reset', 2, 20, 'refund', null),
    ('ws_b', 'job_reset', 3, -20, 'recharge', null)`);
  await run(
    sql`insert into job_timeline (job_id, key, type) values ('job_done', 'created', 'created'), ('job_done', 'completed', 'completed'), ('job_failed', 'failed', 'failed')`,
  );
  await run(sql`insert into file_uploads (id, workspace_id, project_id, name, object_key, file_type, mime_type, file_size, status, expires_at) values
    ('file_img', 'ws_a', 'prj_a', 'frame.png', 'uploads/ws_a/file_img', 'image', 'image/png', 2048, 'completed', now() + interval '30 days'),
    ('file_vid', 'ws_a', 'prj_a', 'motion.mp4', 'uploads/ws_a/file_vid', 'video', 'video/mp4', 1048576, 'pending', now() + interval '1 hour'),
    ('file_old', 'ws_b', 'prj_b', 'old.png', 'uploads/ws_b/file_old', 'image', 'image/png', 10, 'expired', null)`);
  await run(sql`insert into idempotency_keys (workspace_id, key, operation, fingerprint, claim_token, status, response_status, response_body) values
    ('ws_a', 'idem-1', 'images.generate', 'fp1', 'tok1', 'completed', 200, '{"data":{"id":"job_done"}}'::jsonb),
    ('ws_b', 'idem-2', 'videos.generate', 'fp2', 'tok2', 'in_progress', null, null)`);
  await run(sql`insert into webhook_secrets (id, workspace_id, secret_encrypted, created_by) values ('whsec_a', 'ws_a', 'sealed-secret', 'owner@acme.test')`);
  await run(sql`insert into webhook_deliveries (id, job_id, workspace_id, type, url, job, attempts, last_status, delivered_at, failed_at) values
    ('whd_ok', 'job_done', 'ws_a', 'job.completed', 'https://hooks.acme.test/a', '{"id":"job_done","status":"completed"}'::jsonb, 2, 204, now(), null),
    ('whd_gone', 'job_failed', 'ws_a', 'job.failed', 'https://hooks.acme.test/a', '{"id":"job_failed","status":"failed"}'::jsonb, 5, 503, null, now())`);
  await run(sql`insert into webhook_attempts (delivery_id, number, attempt_key) values ('whd_ok', 1, 'whd_ok-1'), ('whd_ok', 2, 'whd_ok-2')`);
  await run(sql`insert into webhook_circuits (workspace_id, destination, state) values ('ws_a', 'hooks.acme.test', 'half_open')`);
  await run(sql`insert into pipelines (id, workspace_id, project_id, api_key_id, status, price, error) values
    ('pipe_done', 'ws_a', 'prj_a', 'key_a', 'completed', 140, null),
    ('pipe_failed', 'ws_a', 'prj_a', 'key_a', 'failed', 140, '{"code":"generation_failed","message":"step clip failed"}'::jsonb)`);
  await run(sql`insert into pipeline_steps (pipeline_id, position, step_id, kind, model, body, params, price, status, attempt, job_id, jobs) values
    ('pipe_done', 0, 'still', 'image', 'nano-banana-2', '{"prompt":"a fox"}'::jsonb, '{"prompt":"a fox"}'::jsonb, 100, 'completed', 1, 'job_done', '{job_done}'),
    ('pipe_failed', 0, 'still', 'image', 'nano-banana-2', '{"prompt":"a wave"}'::jsonb, '{}'::jsonb, 100, 'completed', 1, 'job_done', '{job_done}'),
    ('pipe_failed', 1, 'clip', 'video', 'seedance-1.5', '{"prompt":"a pan"}'::jsonb, '{}'::jsonb, 40, 'failed', 1, 'job_failed', '{job_failed}')`);
  await run(sql`insert into batches (id, workspace_id, project_id, api_key_id, status, item_count, price, webhook_url, completions) values
    ('bat_done', 'ws_a', 'prj_a', 'key_a', 'completed', 2, 140, 'https://hooks.acme.test/batch', 1)`);
  await run(sql`insert into batch_items (batch_id, position, custom_id, kind, model, body, params, price, status, attempt, job_id, jobs) values
    ('bat_done', 0, 'row-1', 'image', 'nano-banana-2', '{"prompt":"a fox"}'::jsonb, '{"prompt":"a fox"}'::jsonb, 100, 'started', 1, 'job_done', '{job_done}'),
    ('bat_done', 1, 'row-2', 'video', 'seedance-1.5', '{"prompt":"a pan"}'::jsonb, '{}'::jsonb, 40, 'canceled', 0, null, '{}')`);
  // A pipeline item (0150_batch_pipelines): its pipeline, made by the batch.
  await run(sql`update batch_items set pipeline_id = 'pipe_failed' where batch_id = 'bat_done' and position = 1`);
  await run(sql`update pipelines set batch_id = 'bat_done' where id = 'pipe_failed'`);
  await run(sql`insert into bulk_actions (id, workspace_id, api_key_id, action, selector, status, job_count, workflow_started) values
    ('bulk_done', 'ws_a', 'key_a', 'cancel', '{"filter":{"status":"pending"}}'::jsonb, 'completed', 2, true)`);
  await run(sql`insert into bulk_action_jobs (bulk_action_id, job_id, status, reason) values
    ('bulk_done', 'job_gen', 'done', null), ('bulk_done', 'job_done', 'skipped', 'already completed')`);
  // Reuse of identical requests (0145_request_reuse): a key held by a completed job, which a follower was answered from.
  await run(sql`update jobs set reuse_key = 'k1' where id in ('job_done', 'job_gen')`);
  await run(sql`update jobs set reused_from = 'job_done' where id = 'job_gen'`);
  await run(sql`insert into reuse_sources (workspace_id, reuse_key, job_id) values ('ws_a', 'k1', 'job_done')`);
  await run(sql`insert into usage_daily (workspace_id, day, api_key_id, project_id, model, kind, spent, refunded, ledger_rows, created, n_completed, n_failed) values
    ('ws_a', '2026-11-30T00:00:00Z', 'key_a', 'prj_a', 'nano-banana-2', 'image', 160, 0, 2, 2, 1, 0),
    ('ws_a', '2026-11-30T00:00:00Z', 'key_a', 'prj_a', 'seedance-1.5', 'video', 40, 40, 2, 1, 0, 1)`);
  await run(
    sql`insert into usage_deltas (workspace_id, day, api_key_id, project_id, model, kind) values ('ws_b', '2026-12-01T00:00:00Z', 'key_b', 'prj_b', 'talking-actor-1', 'talking_actor')`,
  );
  await run(sql`insert into budgets (id, workspace_id, scope, scope_id, period, limit_credits, alert_url) values
    ('bud_key', 'ws_a', 'key', 'key_a', 'month', 500, 'https://hooks.acme.test/budget'), ('bud_prj', 'ws_a', 'project', 'prj_a', 'day', 200, null)`);
  await run(sql`insert into budget_spend (budget_id, period_start, spent) values ('bud_key', '2026-12-01T00:00:00Z', 160)`);
  await run(
    sql`insert into budget_charges (job_id, budget_id, period_start) values ('job_done', 'bud_key', '2026-12-01T00:00:00Z'), ('job_gen', 'bud_key', '2026-12-01T00:00:00Z')`,
  );
  await run(
    sql`insert into audit_events (id, workspace_id, action, actor) values ('aud_1', 'ws_a', 'api_key.created', 'owner@acme.test'), ('aud_2', 'ws_a', 'credits.granted', 'admin')`,
  );
  await run(
    sql`insert into voices (id, name, gender, language, accent, preview_key, tts_voice, sort_key) values ('voice_1', 'Ava', 'female', 'en', 'us', 'voices/ava.mp3', 'alloy', 1)`,
  );
  await run(sql`insert into actors (id, name, age, gender, skin_tone, is_pro, reference_image_key, preview_video_key, preview_thumbnail_key, sort_key) values
    ('actor_1', 'Sam', 'adult', 'male', 'medium', false, 'actors/sam.png', 'actors/sam.mp4', 'actors/sam.jpg', 1)`);
  await run(sql`insert into provider_circuits (provider, model, state) values ('fal', 'seedance-1.5', 'open')`);
  await run(sql`insert into provider_route_outcomes (job_id, provider, ok) values ('job_done', 'local', true), ('job_failed', 'fal', false)`);
  await run(sql`insert into route_probes (provider, model, provider_model_id, status) values ('fal', 'seedance-1.5', 'fal-ai/seedance', 'available')`);
  await run(sql`insert into rate_limits (api_key_id, class) values ('key_a', 'generate')`);
  await run(sql`insert into deployment_builds (deployment_name, build_id) values ('media-gen', 'build-1')`);
  await run(sql`insert into balance_alerts (workspace_id, thresholds, url) values ('ws_a', '{500,100}', 'https://hooks.acme.test/balance')`);
  await run(sql`insert into console_sessions (id_hash, api_key_id, expires_at) values ('sha256:0a1b', 'key_a', '2026-12-01T02:00:00Z')`);
  await run(sql`update jobs set metadata = '{"customer":"cus_42"}'::jsonb, tags = '{acme,batch:7}' where id = 'job_done'`);
  await run(sql`insert into job_labels (workspace_id, label, created_at, job_id)
    select workspace_id, l, created_at, id from jobs cross join unnest(array['t:acme', 't:batch:7', 'm:customer=cus_42']) l where id = 'job_done'`);
  await run(sql`update pipelines set metadata = '{"customer":"cus_42"}'::jsonb, tags = '{acme}' where id = 'pipe_done'`);
  await run(sql`insert into pipeline_labels (workspace_id, label, created_at, pipeline_id)
    select workspace_id, l, created_at, id from pipelines cross join unnest(array['t:acme', 'm:customer=cus_42']) l where id = 'pipe_done'`);
  await run(sql`insert into webhook_endpoints (id, workspace_id, url, event_types, secret_id, secret_encrypted) values
    ('wep_a', 'ws_a', 'https://hooks.acme.test/all', '{job.*,balance.low}', 'whs_e1', 'v1.aaa.bbb.ccc')`);
  // The jobs above wrote their job.<status> events (0120_workspace_events); a budget's alert is written by its writer.
  await run(sql`insert into workspace_events (id, workspace_id, type, subject_id, data) values
    ('whk_bud_key_20261201_80', 'ws_a', 'budget.threshold_reached', 'bud_key', '{"threshold":80,"spent":400,"limit":500}'::jsonb)`);
}

describe('migrations down and up over a populated database', () => {
  let t: TestDatabase;
  let migrator: Migrator;
  before(async () => {
    t = await createTestDatabase();
    migrator = new Migrator({ db: t.db, provider: { getMigrations: async () => migrations as Record<string, Migration> } });
  });
  after(async () => {
    await t?.drop();
  });

  /** One migration down or up; answers the snapshot after it, checked against the one before. */
  async function step(direction: 'down' | 'up', before: Snapshot, expect: string): Promise<Snapshot> {
    const ledgerBefore = await ledger(t.db);
    const r = direction === 'down' ? await migrator.migrateDown() : await migrator.migrateUp();
    assert.equal(r.error, undefined, `${direction} ${expect} failed on existing rows: ${String((r.error as Error | undefined)?.message)}`);
    assert.deepEqual(
      (r.results ?? []).map((m) => [m.migrationName, m.status]),
      [[expect, 'Success']],
    );
    const now = await snapshot(t.db);
    assertKept(before, now, `${direction} ${expect}`, undefined, rewrites[`${direction} ${expect}`]);
    const ledgerAfter = await ledger(t.db);
    if (ledgerBefore && ledgerAfter) assert.deepEqual(ledgerAfter, ledgerBefore, `${direction} ${expect}: the ledger's count and sum`);
    return now;
  }

  test('every migration reverts, re-applies and reverts again with the rows in place, then every one applies again', { timeout: 300_000 }, async () => {
    await seed(t.db);
    const seeded = await snapshot(t.db);
    const empty = [...seeded].filter(([, table]) => table.rows.length === 0).map(([name]) => name);
    // Tables of leases and waits that live for seconds in a running service stay empty here.
    assert.deepEqual(empty.sort(), ['control_leases', 'fetch_slots', 'route_slot_routes', 'route_slot_waiters', 'route_slots', 'upload_slots']);

    let current = seeded;
    for (let i = names.length - 1; i >= 1; i--) {
      const name = names[i]!;
      const reverted = await step('down', current, name);
      // The pair over the older schema's rows: the up keeps them, and the tables and columns the down
      // kept hold what they held before it (what the down dropped comes back as its up builds it).
      const reapplied = await step('up', reverted, name);
      assertKept(current, reapplied, `down then up ${name}`, reverted, [...(rewrites[`down ${name}`] ?? []), ...(rewrites[`up ${name}`] ?? [])]);
      current = await step('down', reapplied, name);
      assert.deepEqual([...current.keys()], [...reverted.keys()], `down ${name} twice leaves the same tables`);
    }
    // At the first migration the core tables still hold the seed.
    for (const table of ['workspaces', 'api_keys', 'projects', 'jobs', 'credit_ledger'])
      assert.ok((current.get(table)?.rows.length ?? 0) > 0, `${table} kept its rows`);
    assert.deepEqual(await ledger(t.db), { n: 11, sum: 1000 + 30 - 100 - 40 + 40 - 60 - 50 - 5 - 20 + 20 - 20 });

    const atFirst = current;
    for (const name of names.slice(1)) current = await step('up', current, name);
    // Back at the latest schema: what the first migration's columns held is what was seeded.
    assertKept(atFirst, current, 'the walk back up', undefined, rewritten);
    assertKept(atFirst, seeded, 'the seed as the first schema sees it', undefined, rewritten);

    const down = await migrateDownAll(t.db);
    assert.equal(down.results?.length, names.length, 'down-all reverts every migration over the rows');
    assert.equal((await snapshot(t.db)).size, 0);
  });
});
