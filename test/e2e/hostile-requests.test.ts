// No request takes a gateway down, and no client holds its sockets: against a real gateway process
// (`node dist/api/server.js`) on the real stack, over HTTP on loopback.
//
// - Every operation the published document lists with a JSON body gets a body nested 100,000 deep,
//   one nested 5,000 deep inside a field of its schema, and a flat array of 450,000 numbers (under
//   the 1 MB cap): each answers a clean 4xx (400 naming the depth limit for the nested ones), and the
//   same process (same pid) goes on serving.
// - 2,000 idle sockets from 127.0.0.2 do not stop requests from 127.0.0.1: past the per-client cap
//   the gateway drops them at once, and the header timeout closes the rest. A request whose headers
//   trickle in (slowloris) is cut by the header timeout.
// - Behind a trusted proxy, /media's rate limit counts the address the proxy names; without
//   TRUST_PROXY, X-Forwarded-For is ignored.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { once } from 'node:events';
import { createTenant, createTestDatabase, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { call, spawnGateway, startInProcessGateway, type Gateway } from '../integration/gateway-harness.js';
import { hostileBodies, jsonOperations } from '../support/hostile-json.js';
import { MAX_JSON_DEPTH } from '../../api/json-limits.js';

const HEADERS_TIMEOUT_MS = 1_500;
const PER_CLIENT = 50;
const IDLE_SOCKETS = 2_000;
const CONNECT_BATCH = 100;

/** A raw TCP connection to a loopback gateway from a chosen loopback source address. */
function connectFrom(baseUrl: string, localAddress: string): net.Socket {
  const url = new URL(baseUrl);
  assert.equal(url.hostname, '127.0.0.1', 'test traffic stays on loopback');
  return net.connect({ host: url.hostname, port: Number(url.port), localAddress });
}

describe('hostile requests against a gateway process', () => {
  let tdb: TestDatabase;
  let t: Tenant;
  let gw: Gateway & { child: import('node:child_process').ChildProcess; output: () => string };

  before(async () => {
    tdb = await createTestDatabase();
    t = await createTenant(tdb.db);
    gw = await spawnGateway(tdb.url, {
      RATE_LIMIT_GENERATE_PER_MIN: '100000',
      RATE_LIMIT_POLL_PER_MIN: '100000',
      GATEWAY_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
      GATEWAY_MAX_CONNECTIONS_PER_CLIENT: String(PER_CLIENT),
    });
  });

  after(async () => {
    await gw?.close();
    await tdb?.drop();
  });

  /** The process still runs, as the same pid, and serves an authenticated request. */
  async function assertStillServing(pid: number | undefined): Promise<void> {
    assert.equal(gw.child.pid, pid);
    assert.equal(gw.child.exitCode, null, `the gateway exited:\n${gw.output().slice(-2000)}`);
    assert.equal(gw.child.signalCode, null);
    const r = await call(gw.baseUrl, 'GET', '/v1/models', { key: t.apiKey });
    assert.equal(r.status, 200, r.text);
  }

  test('every JSON endpoint refuses deep nesting (400 naming the limit) and huge arrays (4xx); the process keeps serving', async () => {
    const doc = (await call(gw.baseUrl, 'GET', '/v1/openapi.json')).body;
    const operations = jsonOperations(doc);
    const pid = gw.child.pid;
    const seen: string[] = [];
    for (const op of operations) {
      for (const { name, body } of hostileBodies(op.field)) {
        const started = performance.now();
        const r = await call(gw.baseUrl, op.method, op.path, { key: t.apiKey, body, contentType: 'application/json' });
        const ms = performance.now() - started;
        const what = `${op.method} ${op.path} (${op.operationId}), ${name}: ${r.status} ${r.text.slice(0, 200)}`;
        assert.ok(r.status >= 400 && r.status < 500, what);
        assert.deepEqual(Object.keys(r.body?.error ?? {}).sort(), ['code', 'message'], what);
        if (name.startsWith('nested')) {
          assert.equal(r.status, 400, what);
          assert.equal(r.body.error.code, 'invalid_request', what);
          assert.match(r.body.error.message, new RegExp(`\\b${MAX_JSON_DEPTH}\\b`), `${what}: the message names the limit`);
        }
        seen.push(`${op.operationId} ${name.split(' ').slice(0, 3).join(' ')}: ${r.status} in ${ms.toFixed(0)} ms`);
      }
      await assertStillServing(pid);
    }
    console.log(`[hostile-requests] ${operations.length} JSON operations:\n  ${seen.join('\n  ')}`);
    assert.doesNotMatch(gw.output(), /uncaught|RangeError|Maximum call stack/i, 'nothing reached the last-resort handler');
  });

  test(`${IDLE_SOCKETS} idle sockets from 127.0.0.2 do not stop 127.0.0.1's requests; past the per-client cap they are dropped, the header timeout closes the rest`, async () => {
    const pid = gw.child.pid;
    let closed = 0;
    const sockets: net.Socket[] = [];
    try {
      // In batches well under the listen backlog: a flood past it would leave sockets the kernel
      // never handed to the gateway (the client believes them connected, the server never saw them).
      for (let batch = 0; batch < IDLE_SOCKETS / CONNECT_BATCH; batch++) {
        const connected: Promise<unknown>[] = [];
        for (let i = 0; i < CONNECT_BATCH; i++) {
          const s = connectFrom(gw.baseUrl, '127.0.0.2');
          s.on('error', () => undefined);
          s.once('close', () => closed++);
          // It sends nothing but reads what comes (the 408 of the header timeout), so it sees the close.
          s.resume();
          // Connected, or reset at once: either way the socket was offered to the gateway.
          connected.push(new Promise((resolve) => (s.once('connect', resolve), s.once('close', resolve))));
          sockets.push(s);
        }
        await Promise.all(connected);
      }
      // While they are open, another client is served as usual.
      for (let i = 0; i < 20; i++) {
        const r = await call(gw.baseUrl, 'GET', '/v1/models', { key: t.apiKey });
        assert.equal(r.status, 200, r.text);
      }
      // All but the per-client allowance are dropped by the gateway at once...
      await waitFor(`all but ${PER_CLIENT} of the idle sockets to be dropped`, () => closed >= IDLE_SOCKETS - PER_CLIENT, 20_000, 50);
      // ...and the allowed ones, never sending a request, are closed by the header timeout.
      await waitFor('every idle socket to be closed', () => closed === IDLE_SOCKETS, HEADERS_TIMEOUT_MS * 4 + 10_000, 50);
      console.log(`[hostile-requests] ${IDLE_SOCKETS} idle sockets from one address, cap ${PER_CLIENT}: all closed, 20/20 requests of another client served`);
      await assertStillServing(pid);
    } finally {
      for (const s of sockets) s.destroy();
    }
  });

  test('a request whose headers trickle in (slowloris) is cut by the header timeout with 408', async () => {
    const s = connectFrom(gw.baseUrl, '127.0.0.3');
    s.on('error', () => undefined);
    await once(s, 'connect');
    const started = performance.now();
    let answer = '';
    s.setEncoding('utf8').on('data', (d: string) => (answer += d));
    s.write('GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    // One header line every 200 ms: the connection is never idle, the headers never complete.
    let n = 0;
    const trickle = setInterval(() => {
      if (!s.destroyed) s.write(`X-Slow-${n++}: 1\r\n`);
    }, 200);
    try {
      await once(s, 'close');
    } finally {
      clearInterval(trickle);
    }
    const ms = performance.now() - started;
    console.log(`[hostile-requests] slowloris cut after ${ms.toFixed(0)} ms (${n} header lines; header timeout ${HEADERS_TIMEOUT_MS} ms)`);
    assert.match(answer, /^HTTP\/1\.1 408 /, 'Node answers 408 Request Timeout');
    assert.ok(ms >= HEADERS_TIMEOUT_MS - 100, `not cut before the header timeout (${ms.toFixed(0)} ms)`);
    assert.ok(n > 3, 'the headers kept arriving until the cut');
  });
});

describe('/media rate limit by client address', () => {
  let tdb: TestDatabase;
  let behindProxy: Gateway;
  let direct: Gateway;

  before(async () => {
    tdb = await createTestDatabase();
    behindProxy = await startInProcessGateway(tdb.db, tdb.url, { MEDIA_RATE_LIMIT_PER_MIN: '2', TRUST_PROXY: 'loopback' });
    direct = await startInProcessGateway(tdb.db, tdb.url, { MEDIA_RATE_LIMIT_PER_MIN: '2' });
  });

  after(async () => {
    await behindProxy?.close();
    await direct?.close();
    await tdb?.drop();
  });

  const media = (gw: Gateway, client: string) =>
    fetch(`${gw.baseUrl}/media/catalog/none.png`, { headers: { 'x-forwarded-for': client } }).then((r) => r.status);

  test('behind a trusted proxy, each client address named in X-Forwarded-For has its own bucket', async () => {
    assert.deepEqual(
      [await media(behindProxy, '203.0.113.1'), await media(behindProxy, '203.0.113.1'), await media(behindProxy, '203.0.113.1')],
      [404, 404, 429],
    );
    assert.equal(await media(behindProxy, '203.0.113.2'), 404, 'another client behind the same proxy is not limited');
  });

  test('without TRUST_PROXY, X-Forwarded-For is ignored: a client cannot dodge the limit by naming other addresses', async () => {
    assert.deepEqual([await media(direct, '203.0.113.1'), await media(direct, '203.0.113.2'), await media(direct, '203.0.113.3')], [404, 404, 429]);
  });
});
