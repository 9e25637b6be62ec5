// The per-fleet roles of db/fleet-roles.ts on the real Postgres: each fleet's login role holds
// exactly its documented grants and never more than the app role may; the refusals that matter are
// refused (no fleet rewrites the ledger or the operator's workspace columns, the gateway cannot
// erase history or touch the control leases, a provider or webhook worker cannot read API keys);
// and the fleets, each connected as its own role, serve a job end to end: the gateway takes an
// upload and a create over HTTP, the workflows, fetch and provider fleets run it to completion (and a
// batch's pipeline item), the reconciler dispatches its webhook event and the webhooks fleet
// delivers it, signed.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import { createTenant, createTestDatabase, testConfig, waitFor, type TestDatabase } from '../support/stack.js';
import { api, startGateway, startWorkers, type InProcessGateway, type Workers } from '../support/services.js';
import { exceedsAppRole, fleetGrants, fleetRoleName, fleets, grantFleetRoles, parseGrant, type Fleet } from '../../db/fleet-roles.js';
import { createDb, type Database } from '../../db/index.js';
import { randomToken } from '../../shared/ids.js';
import { runAdmin } from '../../admin/main.js';
import { Receiver } from '../support/webhook-receiver.js';
import { imageBody } from '../support/job-helpers.js';
import { recordCurrentBuild, everCurrentBuilds } from '../../db/repos/deployment-builds.js';
import { releaseSlot, sweepSlots, takeSlot } from '../../db/repos/route-slots.js';
import { sweepIdleRateLimits } from '../../db/repos/rate-limits.js';

let tdb: TestDatabase;
const prefix = `fl_${randomToken(8)
  .toLowerCase()
  .replace(/[^a-z0-9]/g, 'x')}`;
const urls = {} as Record<Fleet, string>;
const dbs = {} as Record<Fleet, Database>;
let created = false;

before(async () => {
  tdb = await createTestDatabase();
  for (const fleet of fleets) {
    const role = fleetRoleName(prefix, fleet);
    const password = randomToken(16);
    await sql`create role ${sql.id(role)} login nosuperuser nocreatedb nocreaterole password ${sql.lit(password)}`.execute(tdb.db);
    created = true;
    const u = new URL(tdb.url);
    u.username = role;
    u.password = password;
    urls[fleet] = u.toString();
  }
  await grantFleetRoles(tdb.db, prefix);
  for (const fleet of fleets) dbs[fleet] = createDb(urls[fleet], 6);
});

after(async () => {
  for (const db of Object.values(dbs)) await db.destroy();
  await tdb?.drop();
  if (created) {
    const c = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await c.connect();
    try {
      for (const fleet of fleets) await c.query(`drop role if exists ${fleetRoleName(prefix, fleet)}`);
    } finally {
      await c.end();
    }
  }
});

const refused = /permission denied/;

describe('the fleet roles', () => {
  test('hold exactly the documented grants, table by table, and nothing on any other table', async () => {
    for (const fleet of fleets) {
      const role = fleetRoleName(prefix, fleet);
      const rows = await sql<{ table_name: string; privilege_type: string }>`
        select table_name, privilege_type from information_schema.role_table_grants
        where grantee = ${role} and table_schema = 'public' order by table_name, privilege_type`.execute(tdb.db);
      const held = new Map<string, string[]>();
      for (const r of rows.rows) held.set(r.table_name, [...(held.get(r.table_name) ?? []), r.privilege_type]);
      // A table-wide grant shows here for every column too: only the column-only ones are compared.
      const columns = await sql<{ table_name: string; column_name: string; privilege_type: string }>`
        select table_name, column_name, privilege_type from information_schema.column_privileges
        where grantee = ${role} and table_schema = 'public' order by table_name, column_name`.execute(tdb.db);
      const expected = Object.entries(fleetGrants[fleet]);
      const touched = new Set([...held.keys(), ...columns.rows.map((c) => c.table_name)]);
      assert.deepEqual([...touched].sort(), expected.map(([t]) => t).sort(), `${fleet}: the tables it holds anything on`);
      for (const [table, spec] of expected) {
        const g = parseGrant(spec);
        assert.deepEqual(held.get(table) ?? [], g.privileges, `${fleet} on ${table}: table-wide privileges`);
        for (const p of ['SELECT', 'INSERT', 'UPDATE'] as const) {
          if (g.privileges.includes(p)) continue;
          const cols = columns.rows.filter((c) => c.table_name === table && c.privilege_type === p).map((c) => c.column_name);
          assert.deepEqual(cols, g.columns[p] ?? [], `${fleet} on ${table}: ${p} by column`);
        }
        assert.equal(exceedsAppRole(table, spec), null, `${fleet} on ${table}: within the app role`);
      }
    }
  });

  test('no fleet may rewrite the ledger or set a workspace share, priority or name', async () => {
    const t = await createTenant(tdb.db);
    await sql`insert into credit_ledger (workspace_id, delta, reason, note) values (${t.workspaceId}, 5, 'grant', 'fleet test')`.execute(tdb.db);
    for (const fleet of fleets) {
      const db = dbs[fleet];
      await assert.rejects(sql`update credit_ledger set delta = 1000 where workspace_id = ${t.workspaceId}`.execute(db), refused, fleet);
      await assert.rejects(sql`delete from credit_ledger where workspace_id = ${t.workspaceId}`.execute(db), refused, fleet);
      await assert.rejects(sql`update workspaces set fair_share_weight = 100 where id = ${t.workspaceId}`.execute(db), refused, fleet);
      await assert.rejects(sql`update workspaces set high_priority_allowed = true where id = ${t.workspaceId}`.execute(db), refused, fleet);
      await assert.rejects(sql`update workspaces set name = 'taken' where id = ${t.workspaceId}`.execute(db), refused, fleet);
      await assert.rejects(
        sql`insert into api_keys (id, workspace_id, name, secret_hash, created_by) values (${`k_${fleet}`}, ${t.workspaceId}, 'evil', 'x', 'e@example.test')`.execute(
          db,
        ),
        refused,
        fleet,
      );
      await assert.rejects(sql`create table evil (id int)`.execute(db), refused, fleet);
    }
  });

  test('the gateway cannot erase history or touch what only workers hold', async () => {
    const db = dbs.gateway;
    await assert.rejects(sql`delete from job_timeline`.execute(db), refused);
    await assert.rejects(sql`delete from audit_events`.execute(db), refused);
    await assert.rejects(sql`delete from jobs`.execute(db), refused);
    await assert.rejects(sql`delete from webhook_attempts`.execute(db), refused);
    await assert.rejects(sql`select 1 from control_leases`.execute(db), refused);
    await assert.rejects(sql`select 1 from deployment_builds`.execute(db), refused);
    await assert.rejects(sql`select 1 from fetch_slots`.execute(db), refused);
    await assert.rejects(sql`update route_probes set model = model`.execute(db), refused);
    await assert.rejects(sql`select expire_audit_events(30, 10)`.execute(db), refused);
    await assert.rejects(sql`select fold_usage_deltas()`.execute(db), refused);
    await assert.rejects(sql`delete from usage_daily`.execute(db), refused);
  });

  test('a provider worker cannot read API keys, members or signing secrets; the webhooks worker sees no ledger', async () => {
    for (const fleet of ['provider', 'fetch', 'workflows', 'webhooks'] as const) {
      await assert.rejects(sql`select secret_hash from api_keys`.execute(dbs[fleet]), refused, fleet);
      await assert.rejects(sql`select email from workspace_members`.execute(dbs[fleet]), refused, fleet);
      await assert.rejects(sql`select 1 from idempotency_keys`.execute(dbs[fleet]), refused, fleet);
      await assert.rejects(sql`select 1 from rate_limits`.execute(dbs[fleet]), refused, fleet);
    }
    for (const fleet of ['provider', 'fetch', 'workflows', 'reconciler'] as const) {
      await assert.rejects(sql`select 1 from webhook_secrets`.execute(dbs[fleet]), refused, fleet);
    }
    await assert.rejects(sql`select 1 from credit_ledger`.execute(dbs.webhooks), refused);
    await assert.rejects(sql`update jobs set status = 'failed'`.execute(dbs.webhooks), refused);
    await assert.rejects(sql`select 1 from file_uploads`.execute(dbs.webhooks), refused);
  });

  test('serve a job end to end, each fleet as its own role: upload, create, run, complete, signed webhook', async () => {
    const receiver = new Receiver();
    await receiver.start();
    const queuePrefix = `t-${randomToken(10)}`;
    const settings = {
      HOST: '127.0.0.1',
      TASK_QUEUE_PREFIX: queuePrefix,
      WEBHOOK_ALLOW_LOOPBACK: 'true',
      WEBHOOK_TIMEOUT_MS: '2000',
      RATE_LIMIT_GENERATE_PER_MIN: '1000',
      RATE_LIMIT_POLL_PER_MIN: '100000',
    };
    const t = await createTenant(tdb.db);
    const rotated = await runAdmin(['webhook', 'secret', 'rotate', '--workspace', t.workspaceId, '--as', t.ownerEmail, '--json'], {
      ...process.env,
      DATABASE_URL: tdb.url,
    });
    assert.equal(rotated.code, 0, rotated.stderr);
    const secret = (JSON.parse(rotated.stdout) as { secret: string }).secret;
    let gw: InProcessGateway | null = null;
    const workers: Workers[] = [];
    try {
      const cfg = (fleet: Fleet) => testConfig(urls[fleet], settings);
      gw = await startGateway(cfg('gateway'), dbs.gateway);
      workers.push(await startWorkers(cfg('workflows'), dbs.workflows, 'workflows,io'));
      workers.push(await startWorkers(cfg('fetch'), dbs.fetch, 'fetch'));
      workers.push(await startWorkers(cfg('provider'), dbs.provider, 'provider:local'));
      workers.push(await startWorkers(cfg('webhooks'), dbs.webhooks, 'webhooks'));
      workers.push(await startWorkers(cfg('reconciler'), dbs.reconciler, 'reconciler'));
      const c = api(gw.baseUrl, t.apiKey);
      await waitFor('the key to be known', async () => (await c.get('/v1/projects')).status === 200);
      const upload = await c.post('/v1/uploads', { project_id: t.projectId, name: 'a.png', mime_type: 'image/png', size: 1000 });
      assert.equal(upload.status, 200, upload.text);
      const job = await c.post('/v1/images/generate', {
        ...imageBody(t, 'a fox per fleet'),
        webhook_url: `${receiver.base}/fleets`,
        webhook_events: ['completed'],
      });
      assert.equal(job.status, 200, job.text);
      const id = job.body.data.id as string;
      const done = await waitFor(
        `${id} to complete`,
        async () => {
          const r = await c.get(`/v1/images/${id}`);
          return ['completed', 'failed'].includes(r.body.data.status) ? r.body.data : undefined;
        },
        120_000,
      );
      assert.equal(done.status, 'completed', JSON.stringify(done.error));
      const delivered = await waitFor('the completed event to be delivered', () => receiver.at('/fleets')[0], 60_000);
      const event = new Webhook(secret).verify(delivered.body, delivered.headers) as { type: string; data: { id: string } };
      assert.deepEqual([event.type, event.data.id], ['job.completed', id]);
      const list = await c.get('/v1/images');
      assert.equal(list.status, 200, list.text);

      // A batch's pipeline item with labels: the workflows fleet makes its pipeline (labels included)
      // and starts it; its step runs as a job on the same fleets.
      const batch = await c.post('/v1/batches', {
        project_id: t.projectId,
        items: [
          {
            custom_id: 'piped',
            kind: 'pipeline',
            body: {
              steps: [{ id: 'still', kind: 'image', body: { prompt: 'a fox per fleet, piped', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 } }],
              tags: ['fleet'],
            },
          },
        ],
      });
      assert.equal(batch.status, 200, batch.text);
      const ended = await waitFor(
        'the batch to end',
        async () => {
          const b = (await c.get(`/v1/batches/${batch.body.data.id}`)).body.data;
          return b.status === 'running' ? undefined : b;
        },
        120_000,
      );
      assert.deepEqual([ended.status, ended.counts.completed], ['completed', 1], JSON.stringify(ended.counts));
      // Usage by day reads the daily rollups and the deltas not yet folded (the reconciler folds them below).
      const dayAgo = new Date(Date.now() - 86_400_000);
      const usage = await c.get(`/v1/usage?from=${dayAgo.toISOString()}&to=${new Date(Date.now() + 86_400_000).toISOString()}`);
      assert.equal(usage.status, 200, usage.text);

      // The reconciler's loops, each one pass as its role (they run on their own clocks otherwise).
      const control = workers.at(-1)!.fleet;
      await control.reconciler!.runOnce();
      await control.uploadSweeper!.runOnce();
      await control.webhookDispatcher!.runOnce();
      assert.equal(typeof (await sweepIdleRateLimits(dbs.reconciler, 0)), 'number');
      await sweepSlots(dbs.reconciler, 1000);
      // A route's slots, as the providers take them (a full route queues a waiter), and the
      // promoter's build record, as every worker fleet writes it.
      const who = { jobId: id, workspaceId: t.workspaceId, weight: 1, priority: 'normal' as const };
      const timing = { leaseMs: 60_000, waiterFreshMs: 60_000 };
      assert.equal((await takeSlot(dbs.provider, { route: 'fal:fleet-test', slots: 0 }, who, timing)).granted, false);
      assert.equal((await takeSlot(dbs.provider, { route: 'fal:fleet-test', slots: 1 }, who, timing)).granted, true);
      await releaseSlot(dbs.provider, id);
      for (const fleet of ['workflows', 'fetch', 'provider', 'webhooks', 'reconciler'] as const) {
        await recordCurrentBuild(dbs[fleet], 'fleet-test', 'b1');
        await recordCurrentBuild(dbs[fleet], 'fleet-test', 'b1');
        assert.deepEqual([...(await everCurrentBuilds(dbs[fleet], 'fleet-test'))], ['b1']);
      }
    } finally {
      for (const w of workers.reverse()) await w.stop();
      await gw?.close();
      await receiver.close();
    }
  });
});
