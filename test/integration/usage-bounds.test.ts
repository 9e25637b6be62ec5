// GET /v1/usage within its bounds (api/usage-bounds.ts), on the real Postgres over HTTP: a read that
// outlives USAGE_STATEMENT_TIMEOUT_MS is stopped and answers 503 service_unavailable in the error
// shape with Retry-After (never a partial answer), and with every usage slot of a workspace held,
// as another gateway replica's reads would hold them (Postgres advisory locks, so the cap is
// fleet-wide), a read answers 429 rate_limited; another workspace is not held back, and a freed
// slot serves again.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { sql } from 'kysely';
import { createTenant, createTestDatabase, type Tenant, type TestDatabase } from '../support/stack.js';
import { seedYearOfUsage } from '../support/usage-seed.js';
import { call, startInProcessGateway, type Gateway } from './gateway-harness.js';

const SLOTS = 2;
const YEAR = '?from=2026-01-01T00:00:00Z&to=2027-01-01T00:00:00Z';

describe('usage read bounds', () => {
  let tdb: TestDatabase;
  let quick: Gateway;
  let normal: Gateway;
  let heavy: Tenant;
  let other: Tenant;

  before(async () => {
    tdb = await createTestDatabase();
    heavy = await createTenant(tdb.db);
    other = await createTenant(tdb.db);
    // A workspace with 20,000 charged jobs this year: its year-long read takes far longer than 1 ms.
    await seedYearOfUsage(tdb.db, heavy, 20_000);
    const env = { RATE_LIMIT_POLL_PER_MIN: '100000', USAGE_MAX_CONCURRENT_PER_WORKSPACE: String(SLOTS) };
    quick = await startInProcessGateway(tdb.db, tdb.url, { ...env, USAGE_STATEMENT_TIMEOUT_MS: '1' });
    normal = await startInProcessGateway(tdb.db, tdb.url, { ...env, USAGE_STATEMENT_TIMEOUT_MS: '120000' });
  });

  after(async () => {
    await quick?.close();
    await normal?.close();
    await tdb?.drop();
  });

  test('a read past its statement timeout is stopped and answers 503 in the error shape, with Retry-After', async () => {
    const r = await call(quick.baseUrl, 'GET', `/v1/usage${YEAR}&group_by=model,kind`, { key: heavy.apiKey });
    assert.equal(r.status, 503, r.text);
    assert.deepEqual(Object.keys(r.body.error).sort(), ['code', 'message']);
    assert.equal(r.body.error.code, 'service_unavailable');
    assert.match(r.body.error.message, /limit of 1 ms/);
    assert.ok(Number(r.headers.get('retry-after')) >= 1);
    // The same read within a generous limit answers in full: the 503 was the limit, not the data.
    const ok = await call(normal.baseUrl, 'GET', `/v1/usage${YEAR}&group_by=model,kind`, { key: heavy.apiKey });
    assert.equal(ok.status, 200, ok.text);
    const spent = await sql<{
      s: number;
    }>`select -sum(delta)::int as s from credit_ledger where workspace_id = ${heavy.workspaceId} and reason = 'charge'`.execute(tdb.db);
    assert.equal(ok.body.totals.credits.spent, spent.rows[0]!.s);
  });

  test('with every usage slot of a workspace held elsewhere in the fleet, its read answers 429; another workspace reads; a freed slot serves', async () => {
    const holder = new pg.Client({ connectionString: tdb.url });
    await holder.connect();
    try {
      for (let slot = 0; slot < SLOTS; slot++) await holder.query('select pg_advisory_lock(hashtext($1), $2)', [`usage:${heavy.workspaceId}`, slot]);
      const held = await call(normal.baseUrl, 'GET', `/v1/usage${YEAR}`, { key: heavy.apiKey });
      assert.equal(held.status, 429, held.text);
      assert.equal(held.body.error.code, 'rate_limited');
      assert.ok(held.body.retry_after_ms > 0);
      const others = await call(normal.baseUrl, 'GET', `/v1/usage${YEAR}`, { key: other.apiKey });
      assert.equal(others.status, 200, others.text);
      await holder.query('select pg_advisory_unlock($1::int, $2)', [await hash(holder, heavy.workspaceId), 0]);
      const freed = await call(normal.baseUrl, 'GET', `/v1/usage${YEAR}`, { key: heavy.apiKey });
      assert.equal(freed.status, 200, freed.text);
    } finally {
      await holder.end();
    }
  });
});

async function hash(c: pg.Client, workspaceId: string): Promise<number> {
  return (await c.query<{ h: number }>('select hashtext($1) as h', [`usage:${workspaceId}`])).rows[0]!.h;
}
