// Route slot pools on the real stack (gateway over HTTP, workflows on Temporal, Postgres, MinIO)
// with a local fal queue as the live provider: with ROUTE_SLOTS fal=2, workspace A submits ten slow
// jobs, then workspace B submits one. A's first two hold both slots at fal; the other eight wait
// without being submitted. When a slot frees, A holds its share (2 × 1 / 2) while B waits, so B's job
// is the third request fal ever sees, before any of A's remaining eight; fal never has more than two
// requests in flight; every job completes, charged its price once; and a job canceled while it
// waits was never submitted and is refunded in full.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, startService, type InProcessGateway as Gateway, type Service } from '../support/services.js';
import { startLiveFal, type LiveFal } from '../support/fake-providers/live-fal.js';
import { imageBody, jobFinished, jobLedger } from '../support/job-helpers.js';
import { slotUsage } from '../../db/repos/route-slots.js';
import { SLOT_WAITER_FRESH_MS } from '../../shared/route-slots.js';

// nano-banana-2 on fal: 4 credits per image (shared/catalog.ts).
const price = 4;
const slots = 2;

let suite: Service;
let tdb: TestDatabase;
let live: LiveFal;
let gateway: Gateway;

before(async () => {
  live = await startLiveFal();
  suite = await startService(
    {
      ...live.env,
      ROUTE_SLOTS: `fal=${slots}`,
      RATE_LIMIT_GENERATE_PER_MIN: '100000',
      RATE_LIMIT_POLL_PER_MIN: '100000',
      RECONCILE_INTERVAL_MS: '3600000',
    },
    { roles: 'workflows,io,fetch,provider:fal' },
  );
  ({ tdb, gw: gateway } = suite);
});

after(async () => {
  await suite?.close();
  await live?.close();
});

async function create(t: Tenant, prompt: string): Promise<string> {
  const r = await api(gateway.baseUrl, t.apiKey).post('/v1/images/generate', imageBody(t, prompt));
  assert.equal(r.status, 200, r.text);
  return r.body.data.id as string;
}

/** The prompts of fal's requests in the order fal received them. */
const submittedPrompts = () => [...live.fal.states.values()].map((s) => String(s.input.prompt));

const waitersOf = async (workspaceId: string) =>
  Number(
    (
      await tdb.db
        .selectFrom('route_slot_waiters')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('workspace_id', '=', workspaceId)
        .executeTakeFirstOrThrow()
    ).n,
  );

describe('route slot pools', () => {
  test("B's one job is served before A's backlog on a full route, never more than the route's slots in flight, each job charged once", async () => {
    const [a, b] = [await createTenant(tdb.db, 1000), await createTenant(tdb.db, 1000)];
    // Slow jobs: fal runs each request until the flow is shortened below.
    live.fal.flow = ['IN_PROGRESS', ...Array<'IN_PROGRESS'>(10_000).fill('IN_PROGRESS'), 'COMPLETED'];
    const aJobs: string[] = [];
    for (let i = 0; i < 10; i++) aJobs.push(await create(a, `A job ${i}`));
    // Two of A's jobs hold both slots; the other eight wait, not submitted.
    await waitFor('both slots taken and A waiting', async () => live.fal.states.size === slots && (await waitersOf(a.workspaceId)) === 8, 60_000, 100);
    const bJob = await create(b, 'B job');
    await waitFor("B's job waiting for a slot", async () => (await waitersOf(b.workspaceId)) === 1, 60_000, 100);
    assert.equal(live.fal.states.size, slots, 'nothing more was submitted while the route was full');
    assert.deepEqual(await slotUsage(tdb.db, SLOT_WAITER_FRESH_MS), [{ route: 'fal', inUse: slots, waiting: 9 }]);

    // A job canceled while it waits was never submitted: it is refunded in full and waits no more.
    const canceledJob = aJobs.pop()!;
    const r = await api(gateway.baseUrl, a.apiKey).post(`/v1/images/${canceledJob}/cancel`, {});
    assert.equal(r.status, 200, r.text);
    const canceled = await jobFinished(tdb.db, canceledJob, 60_000);
    assert.equal(canceled.error?.code, 'canceled');
    assert.deepEqual(await jobLedger(tdb.db, canceledJob), [
      ['charge', -price],
      ['refund', price],
    ]);
    await waitFor('the canceled job no longer waiting', async () => (await waitersOf(a.workspaceId)) === 7, 30_000, 100);

    // fal finishes every request from now on: slots free one after another.
    live.fal.flow = ['IN_PROGRESS', 'COMPLETED'];
    for (const id of [...aJobs, bJob]) {
      const row = await jobFinished(tdb.db, id, 180_000);
      assert.equal(row.status, 'completed', `${id}: ${JSON.stringify(row.error)}`);
      assert.deepEqual(await jobLedger(tdb.db, id), [['charge', -price]], `${id} is charged its price once`);
    }

    const order = submittedPrompts();
    assert.equal(order.length, 10, 'each job but the canceled one was submitted, once');
    assert.ok(!order.includes('A job 9'), 'the job canceled while waiting was never submitted');
    // The slots free together: B gets one of them and A's longest waiting job the other, in either
    // order. First in, first out would put B after all of A's waiting jobs (last).
    const bAt = order.indexOf('B job');
    assert.ok(bAt >= slots && bAt < 2 * slots, `B's job is among the first ${slots} submitted after A's first ${slots}: ${order.join(', ')}`);
    assert.ok(live.fal.maxInFlight <= slots, `fal had ${live.fal.maxInFlight} requests in flight at once`);
    assert.equal(live.fal.maxInFlight, slots, 'the route was used to its slots');
    // Every slot went back.
    assert.deepEqual(await slotUsage(tdb.db, SLOT_WAITER_FRESH_MS), [{ route: 'fal', inUse: 0, waiting: 0 }]);
  });
});
