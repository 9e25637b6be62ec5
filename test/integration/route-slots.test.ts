// Route slot pools on the real database (db/repos/route-slots.ts): a full route refuses and records
// the waiter; a freed slot goes to the waiter first in fair order (the workspace with the lowest
// held / weight, then priority, then age), never to a workspace that holds its share while another
// waits; a released or expired slot comes back; the reconciler's sweep clears the slots of jobs that
// ended; and concurrent takes never hold more slots than the route has.
import { after, before, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, createTestDatabase, testConfig, type TestDatabase } from '../support/stack.js';
import { newId } from '../../shared/ids.js';
import * as jobs from '../../db/repos/jobs.js';
import { createJobService } from '../../jobs/index.js';
import { createStorage } from '../../shared/storage.js';
import { grantExpired, releaseSlot, renewSlot, slotUsage, sweepSlots, takeSlot, type SlotClaimant, type SlotTiming } from '../../db/repos/route-slots.js';
import type { JobPriority } from '../../shared/job-model.js';

let tdb: TestDatabase;
const timing = { leaseMs: 600_000, waiterFreshMs: 60_000 };

before(async () => {
  tdb = await createTestDatabase();
});
after(async () => {
  await tdb?.drop();
});
beforeEach(async () => {
  await tdb.db.deleteFrom('route_slots').execute();
  await tdb.db.deleteFrom('route_slot_waiters').execute();
});

const who = (jobId: string, workspaceId: string, opts: { weight?: number; priority?: JobPriority } = {}): SlotClaimant => ({
  jobId,
  workspaceId,
  weight: opts.weight ?? 1,
  priority: opts.priority ?? 'normal',
});
const take = (route: string, slots: number, c: SlotClaimant, t: SlotTiming = timing) => takeSlot(tdb.db, { route, slots }, c, t);
const granted = async (route: string, slots: number, c: SlotClaimant) => (await take(route, slots, c)).granted;
/** Why the take was refused ('granted' when it was not). */
const refusal = async (route: string, slots: number, c: SlotClaimant) => {
  const r = await take(route, slots, c);
  return r.granted ? 'granted' : r.reason;
};
const holders = async (route: string) =>
  (await tdb.db.selectFrom('route_slots').select('job_id').where('route', '=', route).orderBy('job_id').execute()).map((r) => r.job_id);

test('a full route refuses; the freed slot is granted to the waiting workspace, not to the one holding its share', async () => {
  const route = 'fal';
  assert.equal(await granted(route, 2, who('a1', 'wsA')), true);
  assert.equal(await granted(route, 2, who('a2', 'wsA')), true);
  assert.deepEqual(await take(route, 2, who('a3', 'wsA')), { granted: false, reason: 'full', position: 0 });
  assert.equal((await take(route, 2, who('b1', 'wsB'))).granted, false);
  // A holder asking again keeps its slot.
  assert.equal(await granted(route, 2, who('a1', 'wsA')), true);
  // A holds 1 after the release, B none: the freed slot is granted to B's waiter at once, not to
  // A's older one, and A's next job asking finds the route full.
  assert.deepEqual(await releaseSlot(tdb.db, 'a1'), { released: true, grantees: ['b1'] });
  assert.deepEqual(await releaseSlot(tdb.db, 'a1'), { released: false, grantees: [] }, 'a release is idempotent');
  assert.equal(await refusal(route, 2, who('a3', 'wsA')), 'full');
  // The grant becomes the job's slot when its submit takes it, as taken by that attempt.
  assert.deepEqual(await take(route, 2, who('b1', 'wsB'), { ...timing, attempt: 1 }), { granted: true, takenAttempt: 1 });
  assert.deepEqual(await holders(route), ['a2', 'b1']);
  assert.deepEqual(await slotUsage(tdb.db, timing.waiterFreshMs), [{ route, inUse: 2, waiting: 1 }]);
  // With nobody else waiting, A's waiter is granted the freed slot.
  assert.deepEqual(await releaseSlot(tdb.db, 'b1'), { released: true, grantees: ['a3'] });
  assert.equal(await granted(route, 2, who('a3', 'wsA')), true);
});

test('freed slots are granted in fair order: lowest held / weight, then priority, then age', async () => {
  const route = 'xai';
  assert.equal(await granted(route, 1, who('c1', 'wsC')), true);
  // Waiting, in this order: A's a1, B's b1, A's a2, then B's high-priority b2.
  for (const [job, ws] of [
    ['a1', 'wsA'],
    ['b1', 'wsB'],
    ['a2', 'wsA'],
  ] as const)
    assert.equal(await granted(route, 1, who(job, ws)), false);
  // Both hold none: A's oldest waiter is older than B's, so A comes first, and within A its oldest.
  assert.deepEqual((await releaseSlot(tdb.db, 'c1')).grantees, ['a1']);
  assert.equal(await refusal(route, 1, who('a2', 'wsA')), 'full');
  assert.equal(await refusal(route, 1, who('b1', 'wsB')), 'full');
  assert.equal(await granted(route, 1, who('a1', 'wsA')), true);
  // B waits with a high-priority job too. Once a1 ends, A and B both hold none: B's best priority
  // puts B first (before A's older waiter), and within B its high job before its older b1.
  assert.equal(await granted(route, 1, who('b2', 'wsB', { priority: 'high' })), false);
  assert.deepEqual((await releaseSlot(tdb.db, 'a1')).grantees, ['b2']);
  assert.equal(await refusal(route, 1, who('a2', 'wsA')), 'full');
  assert.equal(await refusal(route, 1, who('b1', 'wsB')), 'full');
  assert.equal(await granted(route, 1, who('b2', 'wsB', { priority: 'high' })), true);
});

test("a workspace's share follows the weights: 3:1 on four slots", async () => {
  const route = 'byteplus';
  const a = (job: string) => who(job, 'wsA', { weight: 3 });
  for (const job of ['a1', 'a2', 'a3', 'a4']) assert.equal(await granted(route, 4, a(job)), true);
  assert.equal(await granted(route, 4, who('b1', 'wsB')), false);
  // A holds 3 = 4 × 3 / (3 + 1), B none: the freed slot is granted to B.
  assert.deepEqual((await releaseSlot(tdb.db, 'a1')).grantees, ['b1']);
  assert.equal(await refusal(route, 4, a('a5')), 'full');
  assert.equal(await granted(route, 4, who('b1', 'wsB')), true);
  // B holds 1 = 4 × 1 / 4, A 2 of its 3 with a5 waiting: the next freed slot is A's.
  assert.equal(await granted(route, 4, who('b2', 'wsB')), false);
  assert.deepEqual((await releaseSlot(tdb.db, 'a2')).grantees, ['a5']);
  assert.equal(await refusal(route, 4, who('b2', 'wsB')), 'full');
  assert.equal(await granted(route, 4, a('a5')), true);
  assert.deepEqual(await holders(route), ['a3', 'a4', 'a5', 'b1']);
});

test('between workspaces equal on held slots and priority, the one served longest ago is granted first, before an older waiter', async () => {
  const route = 'fal:turns';
  // B's b1 took its slot before A's a1; C's c1 holds the third.
  for (const [job, ws] of [
    ['b1', 'wsB'],
    ['a1', 'wsA'],
    ['c1', 'wsC'],
  ] as const)
    assert.equal(await granted(route, 3, who(job, ws)), true);
  await tdb.db
    .updateTable('route_slots')
    .set({ taken_at: new Date(Date.now() - 60_000) })
    .where('job_id', '=', 'b1')
    .execute();
  // A's waiter is older than B's.
  assert.equal(await granted(route, 3, who('a2', 'wsA')), false);
  assert.equal(await granted(route, 3, who('b2', 'wsB')), false);
  // A and B hold one each: B's turn, its last slot being the older.
  assert.deepEqual((await releaseSlot(tdb.db, 'c1')).grantees, ['b2']);
  // Now B holds two, A one: A's.
  assert.deepEqual((await releaseSlot(tdb.db, 'b1')).grantees, ['a2']);
});

test('a grant its job never takes goes back when its lease passes: the reconciler grants it to the next waiter', async () => {
  const route = 'fal:grant-expiry';
  assert.equal(await granted(route, 1, who('h1', 'wsA')), true);
  assert.equal(await granted(route, 1, who('w1', 'wsB')), false);
  assert.equal(await granted(route, 1, who('w2', 'wsC')), false);
  assert.deepEqual((await releaseSlot(tdb.db, 'h1')).grantees, ['w1']);
  // Nothing is granted while the grant is live.
  assert.deepEqual(await grantExpired(tdb.db), []);
  // w1's workflow is gone: its grant's lease passes.
  await tdb.db
    .updateTable('route_slots')
    .set({ lease_until: new Date(Date.now() - 1_000) })
    .where('job_id', '=', 'w1')
    .execute();
  assert.deepEqual(await grantExpired(tdb.db), ['w2']);
  assert.deepEqual(await holders(route), ['w2']);
});

test("the job service wakes the job its failed job's slot was granted to", async () => {
  const woken: string[] = [];
  const service = createJobService({
    db: tdb.db,
    storage: createStorage(testConfig(tdb.url)),
    wakeSlotGrantee: async (id) => {
      woken.push(id);
    },
  });
  const t = await createTenant(tdb.db, 100);
  const route = 'fal:wake';
  const holder = await insertClaimed(t, 'run-h');
  assert.equal(await granted(route, 1, who(holder, t.workspaceId)), true);
  assert.equal(await granted(route, 1, who('waiting-job', 'wsOther')), false);
  await service.fail(holder, { code: 'generation_failed', message: 'failed at the provider' }, 'run-h');
  assert.deepEqual(woken, ['waiting-job']);
  assert.deepEqual(await holders(route), ['waiting-job']);

  async function insertClaimed(tenant: typeof t, runId: string): Promise<string> {
    const id = newId('img');
    await tdb.db.transaction().execute((tx) =>
      jobs.insertJobWithCharge(tx, {
        id,
        kind: 'image',
        workspaceId: tenant.workspaceId,
        projectId: tenant.projectId,
        apiKeyId: tenant.apiKeyId,
        model: 'nano-banana-2',
        params: { prompt: 'p', aspect_ratio: '1:1', count: 1, provider: 'fal', provider_model_id: 'fal-ai/nano-banana-2' },
        price: 4,
      }),
    );
    await service.claim(id, runId);
    return id;
  }
});

test('a slot whose lease expired comes back; a renewal keeps it', async () => {
  const route = 'alibaba:replace-actor';
  const short = { leaseMs: 1_000, waiterFreshMs: 60_000 };
  assert.equal((await take(route, 1, who('x1', 'wsA'), short)).granted, true);
  assert.equal((await take(route, 1, who('y1', 'wsB'), short)).granted, false);
  // Renewed for long: it outlives the short lease.
  await renewSlot(tdb.db, { route, slots: 1 }, who('x1', 'wsA'), 600_000);
  const started = Date.now();
  assert.equal((await take(route, 1, who('y1', 'wsB'), short)).granted, false);
  // Its holder vanishes (no check renews it): once the lease passes, the waiter gets the slot.
  await tdb.db
    .updateTable('route_slots')
    .set({ lease_until: new Date(Date.now() + 1_000) })
    .where('job_id', '=', 'x1')
    .execute();
  let got = false;
  while (!got) {
    assert.ok(Date.now() - started < 10_000, 'the expired slot never came back');
    got = (await take(route, 1, who('y1', 'wsB'), short)).granted;
    if (!got) await new Promise((r) => setTimeout(r, 100));
  }
  assert.deepEqual(await holders(route), ['y1']);
});

test('the sweep clears the slots and waiters of jobs no longer in flight', async () => {
  const route = 'fal:kling-3.0';
  assert.equal(await granted(route, 1, who('gone1', 'wsA')), true);
  assert.equal(await granted(route, 1, who('gone2', 'wsB')), false);
  // Neither job exists as a job in flight (these ids name no row): both are swept.
  assert.deepEqual(await sweepSlots(tdb.db, 60_000), { slots: 1, waiters: 1 });
  assert.deepEqual(await holders(route), []);
});

test('concurrent takes never hold more slots than the route has', async () => {
  const route = 'fal:concurrent';
  const slots = 5;
  const results = await Promise.all(Array.from({ length: 40 }, (_, i) => take(route, slots, who(`job${i}`, `ws${i % 4}`))));
  assert.equal(results.filter((r) => r.granted).length, slots);
  assert.equal((await holders(route)).length, slots);
  // Free them one by one while everyone asks again at once: never more than five at a time.
  for (let round = 0; round < 5; round++) {
    await releaseSlot(tdb.db, (await holders(route))[0]!);
    const again = await Promise.all(Array.from({ length: 40 }, (_, i) => take(route, slots, who(`job${i}`, `ws${i % 4}`))));
    assert.ok(again.filter((r) => r.granted).length <= slots);
    assert.equal((await holders(route)).length, slots);
  }
});

test("the job service gives a job's slot back when it fails, and when it gives its route up", async () => {
  const service = createJobService({ db: tdb.db, storage: createStorage(testConfig(tdb.url)) });
  const t = await createTenant(tdb.db, 100);
  const routes = [
    { provider: 'fal', provider_model_id: 'xai/grok-imagine-video/text-to-video' },
    { provider: 'xai', provider_model_id: 'grok-imagine-video' },
  ];
  const newJob = async (runId: string) => {
    const id = newId('vid');
    const params = {
      prompt: 'p',
      aspect_ratio: '16:9',
      duration: 1,
      resolution: '480p',
      provider: 'fal',
      provider_model_id: routes[0]!.provider_model_id,
      deadline_seconds: 600,
      routes,
    };
    await tdb.db.transaction().execute((tx) =>
      jobs.insertJobWithCharge(tx, {
        id,
        kind: 'video',
        workspaceId: t.workspaceId,
        projectId: t.projectId,
        apiKeyId: t.apiKeyId,
        model: 'grok-video',
        params,
        price: 6,
      }),
    );
    await service.claim(id, runId);
    assert.equal(await granted('fal', 4, who(id, t.workspaceId)), true);
    assert.ok(await jobs.recordProviderRef(tdb.db, id, runId, { provider: 'fal', requestId: `${id}-fal` }));
    return id;
  };
  const failed = await newJob('run-f');
  await service.fail(failed, { code: 'generation_failed', message: 'the provider reported the generation as failed' }, 'run-f');
  assert.deepEqual(await holders('fal'), []);
  // A give-up by failover frees the slot at the route it left; the next submit takes one at the new route.
  const moved = await newJob('run-m');
  const decision = await service.routeJob(moved, 'run-m', { provider: 'fal', error: 'fal was unreachable past the failover budget' }, 1);
  assert.equal(decision.route?.provider, 'xai');
  assert.deepEqual(await holders('fal'), []);
  assert.equal(await granted('xai', 1, who(moved, t.workspaceId)), true);
});
