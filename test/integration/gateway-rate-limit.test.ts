// Per-key rate limits kept in Postgres, spent from leased token blocks: exact counts on one
// replica, headers on every answer, truthful retry hints, few round trips, 503 without Postgres.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createTestDatabase, createTenant, type TestDatabase } from '../support/stack.js';
import { consumeRateLimit, createRateLimiter } from '../../api/rate-limit.js';
import { ApiError } from '../../api/errors.js';
import { createDb } from '../../db/index.js';
import { revokeApiKey } from '../../db/repos/workspaces.js';
import { call, startInProcessGateway, type Gateway, type HttpAnswer } from './gateway-harness.js';
import { renderImage } from '../../activities/providers/local/media.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function assertRateHeaders(res: HttpAnswer, limit: number, remaining: number) {
  assert.equal(res.headers.get('ratelimit-limit'), String(limit));
  assert.equal(res.headers.get('ratelimit-remaining'), String(remaining));
  const reset = Number(res.headers.get('ratelimit-reset'));
  assert.ok(Number.isInteger(reset) && reset >= 0 && reset <= 60, `RateLimit-Reset ${reset}`);
}

function assertRefused(res: HttpAnswer, limit: number): number {
  assert.equal(res.status, 429, res.text);
  assert.equal(res.body.error.code, 'rate_limited');
  const retry = res.body.retry_after_ms;
  assert.ok(Number.isInteger(retry) && retry > 0 && retry <= 60_000, `retry_after_ms ${retry}`);
  assert.equal(res.headers.get('retry-after'), String(Math.ceil(retry / 1000)));
  assertRateHeaders(res, limit, 0);
  return retry;
}

describe('gateway rate limits', () => {
  let tdb: TestDatabase;
  let gw: Gateway & { app: { metrics: { registry: { metrics(): Promise<string> } } } };

  before(async () => {
    tdb = await createTestDatabase();
    gw = await startInProcessGateway(tdb.db, tdb.url); // default limits: 120 poll, 30 generate
  });

  after(async () => {
    await gw?.close();
    await tdb?.drop();
  });

  test('default poll limit: the 120th request in a minute is served, the 121st is refused', async () => {
    const t = await createTenant(tdb.db);
    const paths = ['/v1/actors', '/v1/voices', '/v1/projects'];
    for (let i = 1; i <= 120; i++) {
      const res = await call(gw.baseUrl, 'GET', paths[i % 3]!, { key: t.apiKey });
      assert.equal(res.status, 200, `request ${i}: ${res.text}`);
      assertRateHeaders(res, 120, 120 - i);
    }
    const refused = await call(gw.baseUrl, 'GET', '/v1/actors', { key: t.apiKey });
    assertRefused(refused, 120);
    const metrics = await gw.app.metrics.registry.metrics();
    assert.match(metrics, /mediagen_rate_limit_refusals_total\{class="poll"\} [1-9]/);
  });

  test('exact under concurrency: 150 simultaneous requests, exactly 120 served', async () => {
    const t = await createTenant(tdb.db);
    const answers = await Promise.all(Array.from({ length: 150 }, () => call(gw.baseUrl, 'GET', '/v1/voices', { key: t.apiKey })));
    const served = answers.filter((r) => r.status === 200).length;
    const refused = answers.filter((r) => r.status === 429).length;
    assert.equal(served, 120);
    assert.equal(refused, 30);
    const remainings = answers.filter((r) => r.status === 200).map((r) => Number(r.headers.get('ratelimit-remaining')));
    assert.deepEqual(
      remainings.sort((x, y) => x - y),
      Array.from({ length: 120 }, (_, i) => i),
      'every served request saw a distinct count',
    );
  });

  test('limits are per API key', async () => {
    const t1 = await createTenant(tdb.db);
    const t2 = await createTenant(tdb.db);
    await Promise.all(Array.from({ length: 121 }, () => call(gw.baseUrl, 'GET', '/v1/voices', { key: t1.apiKey })));
    assert.equal((await call(gw.baseUrl, 'GET', '/v1/voices', { key: t1.apiKey })).status, 429);
    const other = await call(gw.baseUrl, 'GET', '/v1/voices', { key: t2.apiKey });
    assert.equal(other.status, 200);
    assertRateHeaders(other, 120, 119);
  });

  test('RateLimit headers are on every answer of a rate-limited route, errors included', async () => {
    const t = await createTenant(tdb.db);
    const bad = await call(gw.baseUrl, 'GET', '/v1/actors?limit=0', { key: t.apiKey });
    assert.equal(bad.status, 400);
    assertRateHeaders(bad, 120, 119);
    const ok = await call(gw.baseUrl, 'GET', '/v1/actors', { key: t.apiKey });
    assertRateHeaders(ok, 120, 118);
  });

  test('generation class: 30 per minute, a budget separate from polling (counter in Postgres)', async () => {
    const t = await createTenant(tdb.db);
    const decisions = await Promise.all(Array.from({ length: 35 }, () => consumeRateLimit(tdb.db, t.apiKeyId, 'generate', 30)));
    assert.equal(decisions.filter((d) => d!.allowed).length, 30);
    assert.equal(decisions.filter((d) => !d!.allowed).length, 5);
    const poll = await consumeRateLimit(tdb.db, t.apiKeyId, 'poll', 120);
    assert.equal(poll!.allowed, true);
    assert.equal(poll!.remaining, 119);
  });

  test('the limiter refuses a revoked key (null decision) without counting it', async () => {
    const t = await createTenant(tdb.db);
    await revokeApiKey(tdb.db, { workspaceId: t.workspaceId, keyId: t.apiKeyId, actorEmail: t.ownerEmail });
    assert.equal(await consumeRateLimit(tdb.db, t.apiKeyId, 'poll', 120), null);
    const rows = await tdb.db.selectFrom('rate_limits').selectAll().where('api_key_id', '=', t.apiKeyId).execute();
    assert.equal(rows.length, 0);
  });

  test('waiting retry_after_ms succeeds, and not waiting long enough does not (3 s window)', async () => {
    // A short window instead of waiting most of a minute: the hints must be just as truthful.
    const small = await startInProcessGateway(tdb.db, tdb.url, { RATE_LIMIT_POLL_PER_MIN: '2', RATE_LIMIT_WINDOW_MS: '3000' });
    try {
      const t = await createTenant(tdb.db);
      assert.equal((await call(small.baseUrl, 'GET', '/v1/voices', { key: t.apiKey })).status, 200);
      const secondSent = Date.now();
      assert.equal((await call(small.baseUrl, 'GET', '/v1/voices', { key: t.apiKey })).status, 200);
      const hint = assertRefused(await call(small.baseUrl, 'GET', '/v1/voices', { key: t.apiKey }), 2);
      const refusedAt = Date.now();
      assert.ok(hint > 1_500 && hint <= 3_000, `a fresh window has most of its 3 s left, got ${hint} ms`);
      // The sleeps wait for the times the server named; a busy machine may oversleep, so each check
      // accepts what oversleeping allows and nothing that an untruthful hint would.
      await sleep(hint - 500);
      const early = await call(small.baseUrl, 'GET', '/v1/voices', { key: t.apiKey });
      if (early.status === 429) {
        const rest = assertRefused(early, 2);
        assert.ok(rest <= 500, `remaining hint ${rest} ms`);
        await sleep(rest);
      } else {
        assert.equal(early.status, 200, early.text);
        assert.ok(Date.now() - refusedAt >= hint, `admitted ${Date.now() - refusedAt} ms after a ${hint} ms hint`);
      }
      const after = early.status === 200 ? early : await call(small.baseUrl, 'GET', '/v1/voices', { key: t.apiKey });
      assert.equal(after.status, 200, after.text);
      // Sliding window: the first request left it; the second is still in it unless the machine was
      // slow enough for it to leave as well.
      if (Date.now() - secondSent < 2_500) assertRateHeaders(after, 2, 0);
      else assert.ok(Number(after.headers.get('ratelimit-remaining')) <= 1);
    } finally {
      await small.close();
    }
  });

  test('sliding window: a key that spent its limit gets back only what left the window, not a fresh budget', async () => {
    const small = await startInProcessGateway(tdb.db, tdb.url, { RATE_LIMIT_POLL_PER_MIN: '5' });
    try {
      const t = await createTenant(tdb.db);
      assert.equal((await call(small.baseUrl, 'GET', '/v1/voices', { key: t.apiKey })).status, 200);
      // Instead of waiting most of a minute, age that first request's lease by 58 s: it leaves the
      // window in about two seconds, while everything sent from here on stays in it.
      await sql`update rate_limits set lease_expires[1] = lease_expires[1] - interval '58 seconds' where api_key_id = ${t.apiKeyId} and class = 'poll'`.execute(
        tdb.db,
      );
      const burst = await Promise.all(Array.from({ length: 8 }, () => call(small.baseUrl, 'GET', '/v1/voices', { key: t.apiKey })));
      assert.equal(burst.filter((r) => r.status === 200).length, 4);
      const hint = assertRefused(
        burst.find((r) => r.status === 429)!,
        5,
      );
      assert.ok(hint <= 2_100, `the aged lease leaves first: hint ${hint} ms`);
      await sleep(hint);
      // One request left the window, four have not: one more fits, where a fixed window that
      // reset would now admit five (ten within a few seconds).
      const next = await Promise.all(Array.from({ length: 6 }, () => call(small.baseUrl, 'GET', '/v1/voices', { key: t.apiKey })));
      assert.equal(next.filter((r) => r.status === 200).length, 1, next.map((r) => r.status).join(','));
    } finally {
      await small.close();
    }
  });

  test('uploads spend the generation class and are refused with 429 past it; job polls spend the poll class', async () => {
    const small = await startInProcessGateway(tdb.db, tdb.url, { RATE_LIMIT_GENERATE_PER_MIN: '2', RATE_LIMIT_POLL_PER_MIN: '2' });
    try {
      const t = await createTenant(tdb.db);
      const png = await renderImage({ prompt: 'rate limited upload', width: 16, height: 16 });
      const upload = async () => {
        const form = new FormData();
        form.set('project_id', t.projectId);
        form.set('file', new Blob([png], { type: 'image/png' }), 'a.png');
        const res = await fetch(`${small.baseUrl}/v1/upload`, { method: 'POST', headers: { authorization: `Bearer ${t.apiKey}` }, body: form });
        const text = await res.text();
        return { status: res.status, text, body: text ? JSON.parse(text) : null, headers: res.headers };
      };
      assert.equal((await upload()).status, 200);
      assert.equal((await upload()).status, 200);
      assertRefused(await upload(), 2);
      const fromUrl = await call(small.baseUrl, 'POST', '/v1/upload-from-url', {
        key: t.apiKey,
        body: JSON.stringify({ url: 'https://127.0.0.1/a.png' }),
        contentType: 'application/json',
      });
      assertRefused(fromUrl, 2);

      for (let i = 0; i < 2; i++) assert.equal((await call(small.baseUrl, 'GET', '/v1/images/img_missing', { key: t.apiKey })).status, 404);
      assertRefused(await call(small.baseUrl, 'GET', '/v1/videos/vid_missing/url', { key: t.apiKey }), 2);
    } finally {
      await small.close();
    }
  });

  test('hot path: a steady stream of one key costs one Postgres round trip per many requests; a refused key costs none', async () => {
    const t = await createTenant(tdb.db);
    const limiter = createRateLimiter({ db: tdb.db, limits: { poll: 1_000, generate: 30, redeliver: 10 } });
    for (let i = 0; i < 600; i++) assert.equal((await limiter.take(t.apiKeyId, 'poll'))!.allowed, true);
    assert.ok(limiter.leases() <= 60, `${limiter.leases()} leases for 600 requests`);
    let refused = 0;
    for (let i = 0; i < 600; i++) if (!(await limiter.take(t.apiKeyId, 'poll'))!.allowed) refused++;
    assert.equal(refused, 200, 'exactly the limit was admitted');
    const before = limiter.leases();
    for (let i = 0; i < 100; i++) assert.equal((await limiter.take(t.apiKeyId, 'poll'))!.allowed, false);
    assert.equal(limiter.leases(), before, 'refusals are answered from memory');
  });

  test('without Postgres the limiter fails closed with 503 service_unavailable', async () => {
    const t = await createTenant(tdb.db);
    // Nothing listens on port 1 of loopback: the connection is refused at once.
    const dead = createDb('postgres://nobody@127.0.0.1:1/none', 1, { connectionTimeoutMillis: 500 });
    try {
      const limiter = createRateLimiter({ db: dead, limits: { poll: 120, generate: 30, redeliver: 10 } });
      for (const cls of ['generate', 'poll'] as const) {
        await assert.rejects(
          limiter.take(t.apiKeyId, cls),
          (err: unknown) => err instanceof ApiError && err.status === 503 && err.code === 'service_unavailable',
        );
      }
    } finally {
      await dead.destroy();
    }
  });
});
