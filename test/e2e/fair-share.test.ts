// Fair share per workspace on the real stack (Temporal with fairness on, one partition per queue),
// through the gateway over HTTP: a provider fleet of 4 slots (PROVIDER_CONCURRENCY local=4) serves
// the workspaces' backlogs in proportion to their weights instead of first in, first out. The
// provider fleet is a worker of its own beside the one running the workflow, io and fetch queues, so
// a test can hold it until the backlogs wait at the provider's queue: fairness there then decides
// every start, however slowly a busy machine moves jobs up to that queue.
//
// When a job's provider step started is read from its workflow history (the submitAndCheck
// activity's ActivityTaskStarted event): the moment a provider slot took it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, createTestDatabase, testConfig, waitFor, type TestDatabase, type Tenant } from '../support/stack.js';
import type { Config } from '../../shared/config.js';
import { startGateway, startWorkers, type InProcessGateway, type Workers } from '../support/services.js';
import { createImages, providerStarts, providerSteps, waitAllFinished } from '../support/fair-share.js';
import { runAdmin } from '../../admin/main.js';
import { BURST_JOBS } from '../../shared/task-priority.js';

/** The route's slots: at most this many provider steps run at once. */
const SLOTS = 4;
/**
 * How many of A's provider starts may come before one of B's jobs, all queued behind A's backlog at the
 * provider queue. Under FIFO: A's whole backlog. Under fair share: up to SLOTS of A's handed to the
 * first pollers, and A's beside B's other jobs as the two keys alternate.
 */
const A_PASSING_BOUND = 12;
/** A's backlog at the provider queue when B's jobs join it (FIFO: B's start after all of it). */
const A_BACKLOG = 150;
let tdb: TestDatabase;
let config: Config;
let gw: InProcessGateway;
/** Everything but the provider queue: workflows, io, fetch, webhooks, the reconciler. */
let upstream: Workers;
/** The provider queue of the local renderer, SLOTS steps at a time. */
let provider: Workers | undefined;

before(async () => {
  tdb = await createTestDatabase();
  config = testConfig(tdb.url, {
    PROVIDER_CONCURRENCY: `local=${SLOTS}`,
    RATE_LIMIT_GENERATE_PER_MIN: '100000',
    // The reconciler starts a job whose workflow start failed (a start timing out on a loaded machine).
    RECONCILE_INTERVAL_MS: '2000',
  });
  gw = await startGateway(config, tdb.db);
  upstream = await startWorkers(config, tdb.db, 'workflows,io,fetch,webhooks,reconciler');
  provider = await startWorkers(config, tdb.db, 'provider:local');
});

after(async () => {
  await provider?.stop();
  await upstream?.stop();
  await gw?.close();
  await tdb?.drop();
});

const baseUrl = () => gw.baseUrl;

/** Stops the provider fleet: jobs pile up at the provider queue. */
async function holdProviderFleet(): Promise<void> {
  await provider?.stop();
  provider = undefined;
}

async function releaseProviderFleet(): Promise<void> {
  provider = await startWorkers(config, tdb.db, 'provider:local');
}

/** Waits until every one of the jobs waits at the provider queue (its submit scheduled, no slot yet). */
async function waitAllAtProviderQueue(ids: string[]): Promise<void> {
  // The row says `submitting` when the step before ended; the workflow schedules the submit just after.
  await waitFor(
    `all ${ids.length} jobs to wait for a provider slot`,
    async () => {
      const { n } = await tdb.db
        .selectFrom('jobs')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('id', 'in', ids)
        .where('phase', '=', 'submitting')
        .executeTakeFirstOrThrow();
      return Number(n) === ids.length || undefined;
    },
    150_000,
    250,
  );
  const last = gw.client.workflow.getHandle(ids.at(-1)!);
  await waitFor(
    "the last job's submit to be scheduled",
    async () => ((await last.describe()).raw.pendingActivities ?? []).some((p) => p.activityType?.name === 'submitAndCheck') || undefined,
  );
}

/** Every job completed, and each was charged its price exactly once: one ledger row, the charge. */
async function assertCompletedChargedOnce(t: Tenant, ids: string[], credits: number) {
  const db = tdb.db;
  const rows = await db.selectFrom('jobs').select(['id', 'status', 'price']).where('workspace_id', '=', t.workspaceId).execute();
  assert.equal(rows.length, ids.length);
  assert.deepEqual(
    rows.filter((r) => r.status !== 'completed'),
    [],
  );
  const ledger = await db.selectFrom('credit_ledger').select(['job_id', 'reason', 'delta']).where('workspace_id', '=', t.workspaceId).execute();
  const perJob = new Map<string, string[]>();
  for (const l of ledger) if (l.job_id) perJob.set(l.job_id, [...(perJob.get(l.job_id) ?? []), `${l.reason} ${l.delta}`]);
  for (const r of rows) assert.deepEqual(perJob.get(r.id), [`charge ${-r.price}`], `job ${r.id}'s ledger`);
  const ws = await db.selectFrom('workspaces').select('credits').where('id', '=', t.workspaceId).executeTakeFirstOrThrow();
  assert.equal(ws.credits, credits - rows.reduce((s, r) => s + r.price, 0));
}

describe('fair share across workspaces', () => {
  test(`each of B's 5 jobs starts before A's ${A_PASSING_BOUND}th provider start, behind A's backlog of ${A_BACKLOG} at the provider queue`, async () => {
    const db = tdb.db;
    const a = await createTenant(db, 100_000);
    const b = await createTenant(db, 1_000);
    // A's whole backlog waits at the provider queue, then B's jobs behind it, before a slot serves
    // any: first in, first out, B's would start after all of A's; fairness decides every start.
    await holdProviderFleet();
    const aIds = await createImages(baseUrl(), a, A_BACKLOG, 'backlog of A');
    await waitAllAtProviderQueue(aIds);
    const bIds = await createImages(baseUrl(), b, 5, 'a few of B');
    await waitAllAtProviderQueue(bIds);
    await releaseProviderFleet();
    await waitAllFinished(db, [...aIds, ...bIds], 300_000);

    const steps = await providerSteps(gw.client, [...aIds, ...bIds]);
    const aSteps = aIds.map((id) => steps.get(id)!);
    for (const id of bIds) {
      const bStep = steps.get(id)!;
      // A's jobs queued before B's that started before it.
      const waiting = aSteps.filter((s) => s.scheduled <= bStep.scheduled).length;
      const passing = aSteps.filter((s) => s.scheduled <= bStep.scheduled && s.started < bStep.started).length;
      console.log(`B's ${id}: ${waiting} of A's waiting at the provider queue before it; ${passing} of them started before it (FIFO: ${waiting})`);
      assert.equal(waiting, A_BACKLOG, `all of A's backlog was queued before B's ${id}`);
      assert.ok(
        passing < A_PASSING_BOUND,
        `B's ${id} started after ${passing} of A's jobs queued before it (bound ${A_PASSING_BOUND}; FIFO would be ${waiting})`,
      );
    }
    await assertCompletedChargedOnce(a, aIds, 100_000);
    await assertCompletedChargedOnce(b, bIds, 1_000);
  });

  test('weights 3:1 (tiers priority and standard): two workspaces backlogged at the provider queue get provider starts 3:1 within ±20%', async () => {
    const db = tdb.db;
    const heavy = await createTenant(db, 100_000);
    const light = await createTenant(db, 100_000);
    const set = await runAdmin(['workspace', 'set-share', '--workspace', heavy.workspaceId, '--tier', 'priority'], { DATABASE_URL: tdb.url });
    assert.equal(set.code, 0, set.stderr);
    // No provider slot until both backlogs wait at the provider's queue.
    await holdProviderFleet();
    const [heavyIds, lightIds] = await Promise.all([createImages(baseUrl(), heavy, 240, 'heavy', 12), createImages(baseUrl(), light, 100, 'light', 12)]);
    const all = [...heavyIds, ...lightIds];
    // Each job carries its workspace's weight, or that times BURST_JOBS: its workspace's burst, the
    // jobs created while it had fewer than BURST_JOBS in flight (up to BURST_JOBS plus the creates
    // racing them). The burst goes first; the 3:1 promise is the backlogs', counted without it.
    const weights = await db.selectFrom('jobs').select(['id', 'workspace_id', 'fairness_weight']).where('id', 'in', all).execute();
    const burst = new Set(weights.filter((w) => w.fairness_weight > (w.workspace_id === heavy.workspaceId ? 3 : 1)).map((w) => w.id));
    assert.deepEqual(
      [...new Set(weights.map((w) => `${w.workspace_id === heavy.workspaceId ? 'heavy' : 'light'} ${w.fairness_weight}`))].sort(),
      ['heavy 3', `heavy ${3 * BURST_JOBS}`, 'light 1', `light ${BURST_JOBS}`].sort(),
      'each job carries its workspace weight, times BURST_JOBS in its burst',
    );
    for (const ids of [heavyIds, lightIds])
      assert.ok(ids.filter((id) => burst.has(id)).length <= BURST_JOBS + 12, 'a burst of at most BURST_JOBS + the racing creates');
    await waitAllAtProviderQueue(all);
    const releasedAt = Date.now();
    await releaseProviderFleet();
    await waitAllFinished(db, all, 300_000);

    const starts = await providerStarts(gw.client, all);
    assert.ok(
      all.every((id) => starts.get(id)! >= releasedAt - 1_000),
      'no provider step started while the provider fleet was stopped',
    );
    const timeline = all
      .filter((id) => !burst.has(id))
      .map((id) => ({ t: starts.get(id)!, heavy: heavyIds.includes(id) }))
      .sort((x, y) => x.t - y.t);
    // After 200 starts at 3:1 both still have a backlog (heavy at least 240 - 20 - 150, light 100 - 20 - 50).
    const window = timeline.slice(0, 200);
    const h = window.filter((s) => s.heavy).length;
    const ratio = h / (window.length - h);
    console.log(`first 200 provider starts of the backlogs (bursts aside): ${h} heavy, ${window.length - h} light (ratio ${ratio.toFixed(2)})`);
    assert.ok(ratio >= 3 * 0.8 && ratio <= 3 * 1.2, `heavy:light ${h}:${window.length - h} = ${ratio.toFixed(2)}, not 3 ± 20%`);
    await assertCompletedChargedOnce(heavy, heavyIds, 100_000);
    await assertCompletedChargedOnce(light, lightIds, 100_000);
  });
});
