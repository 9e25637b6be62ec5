// /readyz on the real stack, each dependency behind a loopback proxy the test cuts: a Temporal or
// storage blip leaves every gateway ready (200 `degraded`, naming the part) and status reads keep
// answering, so the load balancer does not drop every replica at once; Postgres down, which status
// reads need, makes it not ready; a gateway that has never reached Temporal is not ready either,
// so a rollout of one that cannot reach it stops there.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, createTestDatabase, insertImageJob, waitFor, type TestDatabase, type Tenant } from '../support/stack.js';
import { call, spawnGateway, startInProcessGateway, type Gateway } from './gateway-harness.js';
import { startTcpProxy, targetOf, throughProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { createDb, type Database } from '../../db/index.js';

describe('gateway readiness through dependency blips', () => {
  let tdb: TestDatabase;
  let t: Tenant;
  let jobId: string;
  let pg: TcpProxy;
  let temporal: TcpProxy;
  let s3: TcpProxy;
  let db: Database;
  let env: Record<string, string>;
  let gw: Gateway;

  before(async () => {
    tdb = await createTestDatabase();
    t = await createTenant(tdb.db);
    jobId = (await insertImageJob(tdb.db, t)).id;
    pg = await startTcpProxy(targetOf(tdb.url));
    const [tHost, tPort] = process.env.TEMPORAL_ADDRESS!.split(':');
    temporal = await startTcpProxy({ host: tHost!, port: Number(tPort) });
    const s3Url = new URL(process.env.S3_ENDPOINT!);
    s3 = await startTcpProxy({ host: s3Url.hostname, port: Number(s3Url.port) });
    db = createDb(throughProxy(tdb.url, pg), 4);
    env = { TEMPORAL_ADDRESS: `127.0.0.1:${temporal.port}`, S3_ENDPOINT: `${s3Url.protocol}//127.0.0.1:${s3.port}` };
    gw = await startInProcessGateway(db, throughProxy(tdb.url, pg), env);
  });

  after(async () => {
    await gw?.close();
    await db?.destroy();
    await Promise.all([pg, temporal, s3].map((p) => p?.close()));
    await tdb?.drop();
  });

  /** /readyz once its (cached) checks say `part` is `state`. */
  const readyWhen = (g: Gateway, part: string, state: 'ok' | 'unavailable') =>
    waitFor(`/readyz to find ${part} ${state}`, async () => {
      const r = await call(g.baseUrl, 'GET', '/readyz');
      return r.body?.checks?.[part] === state ? r : undefined;
    });
  const statusRead = () => call(gw.baseUrl, 'GET', `/v1/images/${jobId}`, { key: t.apiKey });

  test('all reachable: 200 ready', async () => {
    const r = await readyWhen(gw, 'temporal', 'ok');
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { status: 'ready', checks: { postgres: 'ok', temporal: 'ok', storage: 'ok' } });
  });

  test('Temporal unreachable: still ready (200 degraded, temporal named), status reads answer; ready again once it is back', async () => {
    temporal.cut();
    try {
      const r = await readyWhen(gw, 'temporal', 'unavailable');
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body, { status: 'degraded', checks: { postgres: 'ok', temporal: 'unavailable', storage: 'ok' } });
      const read = await statusRead();
      assert.equal(read.status, 200, read.text);
      assert.equal(read.body.data.id, jobId);
      assert.ok(temporal.refused > 0, 'the gateway did try Temporal, and was refused');

      // A gateway started now has never reached Temporal: not ready, so a rollout of it stops. (A
      // separate process: its Temporal client's retries end with it.)
      const fresh = await spawnGateway(throughProxy(tdb.url, pg), env);
      try {
        const cold = await readyWhen(fresh, 'temporal', 'unavailable');
        assert.equal(cold.status, 503);
        assert.equal(cold.body.status, 'not_ready');
      } finally {
        await fresh.close();
      }
    } finally {
      temporal.restore();
    }
    const back = await readyWhen(gw, 'temporal', 'ok');
    assert.equal(back.body.status, 'ready');
  });

  test('storage unreachable: still ready (200 degraded, storage named), status reads answer', async () => {
    s3.cut();
    try {
      const r = await readyWhen(gw, 'storage', 'unavailable');
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body, { status: 'degraded', checks: { postgres: 'ok', temporal: 'ok', storage: 'unavailable' } });
      assert.equal((await statusRead()).status, 200);
    } finally {
      s3.restore();
    }
    assert.equal((await readyWhen(gw, 'storage', 'ok')).body.status, 'ready');
  });

  test('Postgres unreachable: 503 not_ready, as status reads cannot answer', async () => {
    pg.cut();
    try {
      const r = await readyWhen(gw, 'postgres', 'unavailable');
      assert.equal(r.status, 503);
      assert.deepEqual(r.body, { status: 'not_ready', checks: { postgres: 'unavailable', temporal: 'ok', storage: 'ok' } });
    } finally {
      pg.restore();
    }
    assert.equal((await readyWhen(gw, 'postgres', 'ok')).status, 200);
  });
});
