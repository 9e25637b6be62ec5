// A job's `priority` on the real stack (gateway over HTTP, workflows on Temporal with fairness on,
// Postgres, MinIO, the local renderer): who may ask for high, what low costs, where the priority
// shows (record, list filter, search attribute), and what it does in the queues. The local
// provider's fleet takes one task at a time (PROVIDER_CONCURRENCY local=1); a first job is held in
// its provider step, so the jobs created behind it all wait in the provider queue, and the order
// their provider steps start in (read from the workflows' histories) is the order the queue gave.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createTenant, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, assertApiError, creditsOf, startService, type InProcessGateway as Gateway, type Service } from '../support/services.js';
import { imageBody, jobLedger } from '../support/job-helpers.js';
import { Holds } from '../support/holds.js';
import { setHighPriorityAllowed } from '../../db/repos/workspace-priority.js';
import { catalog, priceAt } from '../../shared/catalog.js';

/** The local provider fleet's slots: the bounds below are stated from it. */
const SLOTS = 1;
/** nano-banana-2: 4 credits an image; a quarter off at low priority, 3 (kinds/image/models.ts). */
const normalPrice = 4;
const lowPrice = 3;

let suite: Service;
let tdb: TestDatabase;
let gw: Gateway;
const holds = new Holds();

before(async () => {
  suite = await startService(
    {
      PROVIDER_CONCURRENCY: `local=${SLOTS}`,
      RATE_LIMIT_GENERATE_PER_MIN: '100000',
      RATE_LIMIT_POLL_PER_MIN: '100000',
      // The shared machine may be slow to answer a start: a start past its timeout is left to the
      // reconciler, which picks it up within a few seconds here.
      WORKFLOW_START_TIMEOUT_MS: '30000',
      RECONCILE_INTERVAL_MS: '2000',
    },
    { workers: { activityInterceptors: [holds.activityInterceptor] } },
  );
  ({ tdb, gw } = suite);
});

after(async () => {
  await suite?.close();
});

const client = (t: Tenant) => api(gw.baseUrl, t.apiKey);

async function create(t: Tenant, prompt: string, priority?: string): Promise<string> {
  const r = await client(t).post('/v1/images/generate', { ...imageBody(t, prompt), ...(priority ? { priority } : {}) });
  assert.equal(r.status, 200, r.text);
  return r.body.data.id as string;
}

/** `n` jobs created concurrently, a batch at a time (the creates' order within a batch does not matter here). */
async function createMany(t: Tenant, n: number, priority: string, batch = 10): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i += batch) {
    ids.push(...(await Promise.all(Array.from({ length: Math.min(batch, n - i) }, (_, j) => create(t, `${priority} ${i + j}`, priority)))));
  }
  return ids;
}

/**
 * Waits until `n` of the workspace's workflows have their provider step scheduled: the workflow marks
 * the job generating (its JobStatus search attribute) in the same workflow task that schedules the
 * step, and visibility only ever lags, so a count of `n` means all `n` wait in the provider queue.
 */
async function waitQueued(t: Tenant, n: number): Promise<void> {
  await waitFor(
    `${n} jobs of ${t.workspaceId} waiting for the provider`,
    async () => (await gw.client.workflow.count(`WorkspaceId = '${t.workspaceId}' AND JobStatus = 'generating'`)).count >= n,
    120_000,
    250,
  );
}

/** Waits until every job of the workspace has finished; fails unless all completed. */
async function waitAllCompleted(t: Tenant, n: number): Promise<void> {
  const rows = await waitFor(
    `${n} jobs of ${t.workspaceId} to finish`,
    async () => {
      const r = await tdb.db
        .selectFrom('jobs')
        .select(['status', sql<number>`count(*)::int`.as('n')])
        .where('workspace_id', '=', t.workspaceId)
        .where('status', 'in', ['completed', 'failed'])
        .groupBy('status')
        .execute();
      return r.reduce((s, x) => s + x.n, 0) === n ? r : undefined;
    },
    150_000,
    500,
  );
  assert.deepEqual(rows, [{ status: 'completed', n }]);
}

/** When the job's provider step (its first submitAndCheck) started, in µs of the server's clock; undefined if not yet. */
async function providerStart(jobId: string): Promise<number | undefined> {
  const history = await gw.client.workflow.getHandle(jobId).fetchHistory();
  const scheduled = new Set<string>();
  for (const e of history.events ?? []) {
    if (e.activityTaskScheduledEventAttributes?.activityType?.name === 'submitAndCheck') scheduled.add(String(e.eventId));
    const started = e.activityTaskStartedEventAttributes;
    if (started && scheduled.has(String(started.scheduledEventId))) {
      return Number(e.eventTime?.seconds ?? 0) * 1e6 + Math.floor((e.eventTime?.nanos ?? 0) / 1e3);
    }
  }
  return undefined;
}

async function providerStarts(ids: string[]): Promise<(number | undefined)[]> {
  const out: (number | undefined)[] = [];
  for (let i = 0; i < ids.length; i += 25) out.push(...(await Promise.all(ids.slice(i, i + 25).map(providerStart))));
  return out;
}

/** Holds the next provider step (the first job created after this) in the one slot, until released. */
async function holdSlot(t: Tenant) {
  const held = holds.activity('submitAndCheck', 'before');
  const id = await create(t, 'the job holding the slot');
  const reached = await Promise.race([held.reached, new Promise((r) => setTimeout(r, 60_000, 'nothing within 60 s'))]);
  assert.equal(reached, id, 'the first job reaches its provider step');
  return held;
}

describe('job priority', () => {
  test('high needs the workspace setting; low is cheaper where the catalog says so; the priority shows on the record, in lists and in the Web UI', async () => {
    const t = await createTenant(tdb.db, 1000);
    const c = client(t);

    // Not allowed: 403 priority_not_allowed, dry run or create, and nothing charged or stored.
    assertApiError(await c.post('/v1/images/generate', { ...imageBody(t, 'urgent'), priority: 'high' }), 403, 'priority_not_allowed');
    assertApiError(await c.post('/v1/images/generate?dry_run=true', { ...imageBody(t, 'urgent'), priority: 'high' }), 403, 'priority_not_allowed');
    assert.equal(await creditsOf(tdb.db, t), 1000);
    assert.equal((await tdb.db.selectFrom('jobs').select('id').where('workspace_id', '=', t.workspaceId).execute()).length, 0);
    assertApiError(await c.post('/v1/images/generate', { ...imageBody(t, 'x'), priority: 'urgent' }), 400, 'invalid_request');

    // The catalog's discount, in GET /v1/models and in the quote.
    const models = await c.get('/v1/models');
    const nano = (models.body.data as { name: string; price: { low_priority_discount: number } }[]).find((m) => m.name === 'nano-banana-2')!;
    assert.equal(nano.price.low_priority_discount, catalog['nano-banana-2'].lowPriorityDiscount);
    assert.equal(priceAt(catalog['nano-banana-2'], { count: 1 }, 'low'), lowPrice);
    const quote = await c.post('/v1/images/generate?dry_run=true', { ...imageBody(t, 'cheap'), priority: 'low' });
    assert.equal(quote.status, 200, quote.text);
    assert.equal(quote.body.data.price, lowPrice);

    await setHighPriorityAllowed(tdb.db, t.workspaceId, true);
    const high = await create(t, 'urgent', 'high');
    const low = await create(t, 'cheap', 'low');
    const normal = await create(t, 'plain');
    for (const id of [high, low, normal]) {
      const job = await waitFor(`${id} completed`, async () => {
        const r = await c.get(`/v1/images/${id}`);
        return r.body?.data?.status === 'completed' ? r.body.data : undefined;
      });
      assert.equal(job.priority, id === high ? 'high' : id === low ? 'low' : 'normal');
    }
    // Each charged once, at its priority's price.
    assert.deepEqual(await jobLedger(tdb.db, low), [['charge', -lowPrice]]);
    assert.deepEqual(await jobLedger(tdb.db, normal), [['charge', -normalPrice]]);
    assert.deepEqual(await jobLedger(tdb.db, high), [['charge', -normalPrice]]);
    assert.equal(await creditsOf(tdb.db, t), 1000 - lowPrice - 2 * normalPrice);

    // The list filter, on every list.
    const lowOnly = await c.get('/v1/jobs?priority=low');
    assert.deepEqual(
      lowOnly.body.data.map((j: { id: string }) => j.id),
      [low],
    );
    const highImages = await c.get('/v1/images?priority=high');
    assert.deepEqual(
      highImages.body.data.map((j: { id: string; priority: string }) => [j.id, j.priority]),
      [[high, 'high']],
    );
    assertApiError(await c.get('/v1/jobs?priority=urgent'), 400, 'invalid_request');

    // The Web UI's search attribute.
    await waitFor('the high job found by JobPriority', async () => {
      const { count } = await gw.client.workflow.count(`WorkspaceId = '${t.workspaceId}' AND JobPriority = 'high'`);
      return count === 1;
    });

    // Off again: high refused, jobs already created keep theirs.
    await setHighPriorityAllowed(tdb.db, t.workspaceId, false);
    assertApiError(await c.post('/v1/images/generate', { ...imageBody(t, 'urgent'), priority: 'high' }), 403, 'priority_not_allowed');
    assert.equal((await c.get(`/v1/images/${high}`)).body.data.priority, 'high');
  });

  test('a high job created behind 200 normal jobs of its workspace starts within one slot release', async (ctx) => {
    const t = await createTenant(tdb.db, 10_000);
    await setHighPriorityAllowed(tdb.db, t.workspaceId, true);
    const held = await holdSlot(t);
    let normals: string[];
    let high: string;
    try {
      normals = await createMany(t, 200, 'normal');
      await waitQueued(t, 1 + normals.length);
      high = await create(t, 'urgent', 'high');
      await waitQueued(t, 2 + normals.length);
    } finally {
      held.release();
    }

    await waitFor(`${high} completed`, async () => (await client(t).get(`/v1/images/${high}`)).body?.data?.status === 'completed', 120_000, 200);
    const highStart = (await providerStart(high))!;
    const normalStarts = await providerStarts(normals);
    // Every slot was held when the high job was created, so no normal job had been handed to the
    // fleet: at most SLOTS of them (one per slot the release frees, were a task in flight) start first.
    const before = normalStarts.filter((s) => s !== undefined && s < highStart).length;
    assert.ok(before <= SLOTS, `${before} of the 200 normal jobs started before the high one (bound ${SLOTS})`);
    ctx.diagnostic(`normal jobs started before the high one: ${before} of 200 (bound ${SLOTS})`);

    // And the backlog still drains: every job completes, charged once.
    await waitAllCompleted(t, 2 + normals.length);
    const charges = await sql<{ n: number }>`
      select count(*)::int as n from credit_ledger where workspace_id = ${t.workspaceId} and job_id is not null group by job_id having count(*) <> 1 or sum(delta) <> ${-normalPrice}::int
    `.execute(tdb.db);
    assert.deepEqual(charges.rows, []);
    const charged = await sql<{ n: number }>`
      select count(distinct job_id)::int as n from credit_ledger where workspace_id = ${t.workspaceId} and reason = 'charge'
    `.execute(tdb.db);
    assert.equal(charged.rows[0]!.n, 2 + normals.length);
  });

  test('low jobs never delay normal ones: queued together, every normal job starts before any low one', async (ctx) => {
    const t = await createTenant(tdb.db, 10_000);
    const held = await holdSlot(t);
    let lows: string[];
    let normals: string[];
    try {
      // The low jobs first, so a first-in-first-out queue would serve them first.
      lows = await createMany(t, 20, 'low');
      await waitQueued(t, 1 + lows.length);
      normals = await createMany(t, 20, 'normal');
      await waitQueued(t, 1 + lows.length + normals.length);
    } finally {
      held.release();
    }
    await waitAllCompleted(t, 1 + lows.length + normals.length);

    const lowStarts = (await providerStarts(lows)) as number[];
    const normalStarts = (await providerStarts(normals)) as number[];
    const lastNormal = Math.max(...normalStarts);
    // Every slot was held while both were queued: no low job can be in a slot before a normal one,
    // bar one a slot had taken before the normal jobs arrived (there was none to take: SLOTS - 1).
    const lowsFirst = lowStarts.filter((s) => s < lastNormal).length;
    assert.ok(lowsFirst <= SLOTS - 1, `${lowsFirst} low jobs started before the last normal one (bound ${SLOTS - 1})`);
    ctx.diagnostic(`low jobs started before the last normal one: ${lowsFirst} of 20 (bound ${SLOTS - 1})`);
    // Each low job paid the low price, once.
    for (const id of lows.slice(0, 3)) assert.deepEqual(await jobLedger(tdb.db, id), [['charge', -lowPrice]]);
  });
});
