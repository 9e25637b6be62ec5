// Two gateway PROCESSES (node dist/api/server.js) on one database: a revocation is seen by both on
// the very next request, and both share one rate-limit budget per key.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, createTenant, waitFor, type TestDatabase } from '../support/stack.js';
import { revokeApiKey } from '../../db/repos/workspaces.js';
import { call, spawnGateway } from './gateway-harness.js';

type Spawned = Awaited<ReturnType<typeof spawnGateway>>;

describe('two gateway processes', () => {
  let tdb: TestDatabase;
  let g1: Spawned;
  let g2: Spawned;
  const limit = 10;

  before(async () => {
    tdb = await createTestDatabase();
    const env = { RATE_LIMIT_POLL_PER_MIN: String(limit), LOG_LEVEL: 'debug' };
    [g1, g2] = await Promise.all([spawnGateway(tdb.url, env), spawnGateway(tdb.url, env)]);
  });

  after(async () => {
    await g1?.close();
    await g2?.close();
    await tdb?.drop();
  });

  test('each process logged one "listening on" line and answers /healthz without a key', async () => {
    for (const g of [g1, g2]) {
      assert.equal(
        g
          .output()
          .split('\n')
          .filter((l) => l.includes('listening on http://127.0.0.1:')).length,
        1,
      );
      const res = await call(g.baseUrl, 'GET', '/healthz');
      assert.equal(res.status, 200);
    }
    assert.notEqual(g1.baseUrl, g2.baseUrl);
  });

  test('a key revoked through one admin call fails on the next request on both processes', async () => {
    const t = await createTenant(tdb.db);
    // Warm both processes' key caches.
    for (const g of [g1, g2]) {
      for (const path of ['/v1/projects', '/v1/actors']) assert.equal((await call(g.baseUrl, 'GET', path, { key: t.apiKey })).status, 200);
    }
    await revokeApiKey(tdb.db, { workspaceId: t.workspaceId, keyId: t.apiKeyId, actorEmail: t.ownerEmail });
    for (const g of [g1, g2]) {
      for (const path of ['/v1/projects', '/v1/actors', '/v1/voices']) {
        const res = await call(g.baseUrl, 'GET', path, { key: t.apiKey });
        assert.equal(res.status, 401, `${g.baseUrl}${path}: ${res.text}`);
        assert.equal(res.body.error.code, 'unauthorized');
      }
    }
    // Routes without a rate-limit statement rely on the LISTEN/NOTIFY eviction: also prompt.
    for (const g of [g1, g2]) {
      const res = await waitFor(
        'the revocation notification',
        async () => {
          const r = await call(g.baseUrl, 'GET', '/v1/no-such-route', { key: t.apiKey });
          return r.status === 401 ? r : undefined;
        },
        5_000,
        20,
      );
      assert.equal(res.body.error.code, 'unauthorized');
    }
  });

  test('both processes share one budget per key (sequential, alternating)', async () => {
    const t = await createTenant(tdb.db);
    // Each process reports its own unspent tokens plus the shared budget at its last lease: it
    // falls with every answer of that process and never exceeds what is left of the limit.
    const lastRemaining = new Map<string, number>();
    for (let i = 1; i <= limit; i++) {
      const g = i % 2 ? g1 : g2;
      const res = await call(g.baseUrl, 'GET', '/v1/voices', { key: t.apiKey });
      assert.equal(res.status, 200, `request ${i} on ${g.baseUrl}: ${res.text}`);
      const remaining = Number(res.headers.get('ratelimit-remaining'));
      assert.ok(remaining >= 0 && remaining <= limit - Math.ceil(i / 2), `request ${i}: remaining ${remaining}`);
      assert.ok(remaining < (lastRemaining.get(g.baseUrl) ?? limit), `request ${i}: remaining ${remaining} fell`);
      lastRemaining.set(g.baseUrl, remaining);
    }
    for (const g of [g1, g2]) {
      const res = await call(g.baseUrl, 'GET', '/v1/voices', { key: t.apiKey });
      assert.equal(res.status, 429, res.text);
      assert.equal(res.body.error.code, 'rate_limited');
      assert.ok(res.body.retry_after_ms > 0);
    }
  });

  test('both processes share one budget per key (concurrent)', async () => {
    const t = await createTenant(tdb.db);
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => call((i % 2 ? g1 : g2).baseUrl, 'GET', '/v1/actors', { key: t.apiKey })));
    assert.equal(answers.filter((r) => r.status === 200).length, limit);
    assert.equal(answers.filter((r) => r.status === 429).length, 40 - limit);
  });

  test('one key sending from both processes at once: no window admits more than the limit, and the first 429 comes near it', async () => {
    // A 2 s window (the same code as 60 s, with 200 ms leases) so the run spans several windows.
    const windowMs = 2_000;
    const small = 20;
    const env = { RATE_LIMIT_POLL_PER_MIN: String(small), RATE_LIMIT_WINDOW_MS: String(windowMs) };
    const [r1, r2] = await Promise.all([spawnGateway(tdb.url, env), spawnGateway(tdb.url, env)]);
    try {
      const t = await createTenant(tdb.db);
      const answers: { sent: number; received: number; status: number }[] = [];
      const until = performance.now() + 2.5 * windowMs;
      // Two concurrent senders per process, each sending its next request when the last answered.
      const sender = async (g: Spawned) => {
        while (performance.now() < until) {
          const sent = performance.now();
          const res = await call(g.baseUrl, 'GET', '/v1/voices', { key: t.apiKey });
          answers.push({ sent, received: performance.now(), status: res.status });
        }
      };
      await Promise.all([sender(r1), sender(r1), sender(r2), sender(r2)]);
      assert.ok(
        answers.every((a) => a.status === 200 || a.status === 429),
        'only 200 and 429',
      );
      const admitted = answers.filter((a) => a.status === 200);
      // A request was admitted somewhere between its send and its answer: the ones whose whole
      // span lies inside some window of length W are at most the limit, for every window start.
      // The window is Postgres' (clock_timestamp, the wall clock) and these spans are this process's
      // monotonic clock; a wall clock being slewed runs up to 0.05 % apart, so the check takes W
      // less 5 ms (a fixed-window or double-counting limiter admits twice the limit, far beyond it).
      const measuredMs = windowMs - 5;
      for (const start of answers.map((a) => a.sent)) {
        const inside = admitted.filter((a) => a.sent >= start && a.received <= start + measuredMs).length;
        assert.ok(inside <= small, `${inside} admitted within ${measuredMs} ms from ${start.toFixed(1)}`);
      }
      // The budget comes back as the window slides: more than one window's worth over the run.
      assert.ok(admitted.length > small && admitted.length <= 3 * small, `${admitted.length} admitted in 2.5 windows`);
      // The first refusal comes near the limit: before its answer arrived, all but a few tokens
      // (in flight on the other senders, or stranded on the other process) had been admitted.
      const first429 = Math.min(...answers.filter((a) => a.status === 429).map((a) => a.received));
      const before = admitted.filter((a) => a.received < first429).length;
      assert.ok(before >= small - 4, `${before} admitted before the first 429`);
    } finally {
      await r1.close();
      await r2.close();
    }
  });

  test('logs never contain an API key or its secret', async () => {
    const t = await createTenant(tdb.db);
    await call(g1.baseUrl, 'GET', '/v1/projects', { key: t.apiKey });
    await call(g1.baseUrl, 'GET', '/v1/projects', { key: `${t.apiKey}x` });
    const secret = t.apiKey.split('_').pop()!;
    await waitFor('a request log line', () => g1.output().includes('"route":"/v1/projects"'), 5_000, 20);
    assert.ok(!g1.output().includes(secret));
  });

  test('SIGTERM shuts a gateway down cleanly with exit code 0', async () => {
    const g = await spawnGateway(tdb.url);
    await g.close();
    assert.equal(g.child.exitCode, 0, g.output());
  });
});
