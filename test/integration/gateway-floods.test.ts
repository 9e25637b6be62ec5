// Floods that must not reach Postgres: random well-formed unknown keys (answered from the gateway's
// in-memory set of live key ids) and /readyz (cached and shared for a moment). A key created after
// unknown-key refusals works as soon as its creation's notification arrives.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { pino } from 'pino';
import { Client, Connection } from '@temporalio/client';
import { createTestDatabase, createTenant, testConfig, waitFor, type TestDatabase, type Tenant } from '../support/stack.js';
import { generateApiKey } from '../../db/api-keys.js';
import { createApiKey, revokeApiKey } from '../../db/repos/workspaces.js';
import { createApp, type App } from '../../api/app.js';
import { createStorage, type Storage } from '../../shared/storage.js';
import { cachedFor, READY_CACHE_MS } from '../../api/routes/health.js';
import { call } from './gateway-harness.js';
import { sql } from 'kysely';
import { KEY_LISTENER_NAME } from '../../api/auth.js';
import { codecDataConverter } from '../../codec/payload-codec.js';

/** The value of one labelled sample in Prometheus text, 0 when absent. */
function sample(metricsText: string, name: string, labels: string): number {
  const line = metricsText.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

describe('gateway floods', () => {
  let tdb: TestDatabase;
  let app: App;
  let server: Server;
  let connection: Connection;
  let baseUrl: string;
  let tenant: Tenant;
  let pings = 0;

  const lookups = async () => {
    const text = await app.metrics.registry.metrics();
    return {
      memory: sample(text, 'mediagen_auth_lookups_total', 'source="memory"'),
      database: sample(text, 'mediagen_auth_lookups_total', 'source="database"'),
    };
  };

  before(async () => {
    tdb = await createTestDatabase();
    tenant = await createTenant(tdb.db);
    const config = testConfig(tdb.url);
    connection = Connection.lazy({ address: config.TEMPORAL_ADDRESS });
    const real = createStorage(config);
    // Counts readiness probes of storage; everything else goes to the real store.
    const storage: Storage = {
      ...real,
      bucket: real.bucket,
      async ping() {
        pings++;
        return real.ping();
      },
    };
    app = createApp({
      config,
      db: tdb.db,
      storage,
      temporal: new Client({ connection, namespace: config.TEMPORAL_NAMESPACE, ...codecDataConverter(config) }),
      logger: pino({ level: 'silent' }),
    });
    server = createServer(app.app).listen(0, '127.0.0.1');
    await once(server, 'listening');
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // The key listener loads the live ids after connecting: wait until unknown ids are refused from memory.
    await waitFor('unknown keys answered from memory', async () => {
      const before = (await lookups()).memory;
      await call(baseUrl, 'GET', '/v1/projects', { key: generateApiKey().key });
      return (await lookups()).memory > before;
    });
  });

  after(async () => {
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    await app?.close();
    await connection?.close();
    await tdb?.drop();
  });

  test('a flood of random well-formed unknown keys is refused 401 without one Postgres lookup', async () => {
    const start = await lookups();
    const answers = await Promise.all(Array.from({ length: 200 }, () => call(baseUrl, 'GET', '/v1/projects', { key: generateApiKey().key })));
    for (const r of answers) {
      assert.equal(r.status, 401);
      assert.equal(r.body.error.code, 'unauthorized');
      assert.equal(r.body.error.message, 'invalid or revoked API key', 'same message as any other bad key');
    }
    const end = await lookups();
    assert.equal(end.memory - start.memory, 200);
    assert.equal(end.database - start.database, 0);
  });

  test('a valid key still goes to Postgres on a cache miss and is accepted', async () => {
    const res = await call(baseUrl, 'GET', '/v1/projects', { key: tenant.apiKey });
    assert.equal(res.status, 200, res.text);
  });

  test('a key created while unknown ids are refused from memory works promptly', async () => {
    const refusedBefore = (await lookups()).memory;
    const created = await createApiKey(tdb.db, { workspaceId: tenant.workspaceId, name: 'fresh', actorEmail: tenant.ownerEmail });
    // Delivery of the creation notification takes milliseconds; 5 s bounds it on a busy machine.
    const res = await waitFor(
      'the new key to be accepted',
      async () => {
        const r = await call(baseUrl, 'GET', '/v1/projects', { key: created.key });
        return r.status === 200 ? r : undefined;
      },
      5_000,
      20,
    );
    assert.equal(res.status, 200);
    // And unknown ids are still refused from memory afterwards (the set was updated, not dropped).
    await call(baseUrl, 'GET', '/v1/projects', { key: generateApiKey().key });
    assert.ok((await lookups()).memory > refusedBefore);
  });

  test('a revoked key joins the unknown ids: refused from memory once its revocation arrives', async () => {
    const key = await createApiKey(tdb.db, { workspaceId: tenant.workspaceId, name: 'short-lived', actorEmail: tenant.ownerEmail });
    await waitFor('the key to be accepted', async () => (await call(baseUrl, 'GET', '/v1/projects', { key: key.key })).status === 200, 5_000, 20);
    await revokeApiKey(tdb.db, { workspaceId: tenant.workspaceId, keyId: key.id, actorEmail: tenant.ownerEmail });
    const r = await call(baseUrl, 'GET', '/v1/projects', { key: key.key });
    assert.equal(r.status, 401, 'revoked keys fail on the very next request');
    await waitFor(
      'the revoked key to be refused from memory',
      async () => {
        const before = await lookups();
        const again = await call(baseUrl, 'GET', '/v1/projects', { key: key.key });
        const after = await lookups();
        return again.status === 401 && after.database === before.database && after.memory === before.memory + 1;
      },
      5_000,
      20,
    );
  });

  test("when the key listener's connection drops, a key revoked meanwhile is refused, and after the reconnect unknown ids are answered from memory again", async () => {
    const key = await createApiKey(tdb.db, { workspaceId: tenant.workspaceId, name: 'across-a-drop', actorEmail: tenant.ownerEmail });
    assert.equal((await call(baseUrl, 'GET', '/v1/projects', { key: key.key })).status, 200, 'cached');
    const listeners = async () =>
      (
        await sql<{ pid: number }>`select pid from pg_stat_activity where application_name = ${KEY_LISTENER_NAME} and datname = current_database()`.execute(
          tdb.db,
        )
      ).rows.map((r) => r.pid);
    const [pid] = await listeners();
    assert.ok(pid, 'the key listener has its own connection');
    await sql`select pg_terminate_backend(${pid})`.execute(tdb.db);
    // Revoked while the listener may be down: its notification can be lost, the refusal cannot.
    await revokeApiKey(tdb.db, { workspaceId: tenant.workspaceId, keyId: key.id, actorEmail: tenant.ownerEmail });
    assert.equal((await call(baseUrl, 'GET', '/v1/projects', { key: key.key })).status, 401);
    await waitFor(
      'a new key listener connection',
      async () => {
        const now = await listeners();
        return now.length === 1 && now[0] !== pid;
      },
      10_000,
      50,
    );
    await waitFor(
      'unknown ids answered from memory again',
      async () => {
        const before = await lookups();
        const r = await call(baseUrl, 'GET', '/v1/projects', { key: generateApiKey().key });
        const after = await lookups();
        return r.status === 401 && after.memory === before.memory + 1 && after.database === before.database;
      },
      10_000,
      50,
    );
    // The reloaded set no longer holds the revoked key: refused from memory too.
    const before = await lookups();
    assert.equal((await call(baseUrl, 'GET', '/v1/projects', { key: key.key })).status, 401);
    assert.equal((await lookups()).database, before.database);
    assert.equal((await call(baseUrl, 'GET', '/v1/projects', { key: tenant.apiKey })).status, 200, 'live keys still work');
  });

  test('a flood of /readyz probes the dependencies once per cache period', async () => {
    // The cache does expire: a later probe checks again.
    await waitFor(
      'the readiness cache to expire',
      async () => {
        const before = pings;
        await call(baseUrl, 'GET', '/readyz');
        return pings > before;
      },
      10_000,
      READY_CACHE_MS,
    );
    const before = pings;
    // Whether or not the period ends during the burst, 30 concurrent probes share at most one check.
    const answers = await Promise.all(Array.from({ length: 30 }, () => call(baseUrl, 'GET', '/readyz')));
    for (const r of answers) {
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.status, 'ready');
    }
    assert.ok(pings - before <= 1, `storage pinged ${pings - before} times for 30 concurrent probes`);
  });
});

describe('cachedFor (readiness cache)', () => {
  test('shares one run between concurrent callers and re-runs only after the period', async () => {
    let now = 1_000;
    let runs = 0;
    const cached = cachedFor(
      1_500,
      async () => ++runs,
      () => now,
    );
    assert.deepEqual(await Promise.all([cached(), cached(), cached()]), [1, 1, 1]);
    now += 1_499;
    assert.equal(await cached(), 1);
    now += 2;
    assert.equal(await cached(), 2);
  });

  test('a failed run is not cached', async () => {
    let runs = 0;
    const cached = cachedFor(60_000, async () => {
      runs++;
      if (runs === 1) throw new Error('down');
      return runs;
    });
    await assert.rejects(cached(), /down/);
    assert.equal(await cached(), 2);
  });
});
