// Fair share as a customer sees it, end to end: the gateway over HTTP, one worker process running
// every role (workflows, io, fetch and the fal provider queue), Temporal, Postgres, MinIO, and a
// local fal queue as the live provider on a route of 2 slots (ROUTE_SLOTS fal=2). Workspace A
// submits 40 jobs; once its first two hold the route's slots, workspace B submits 2. First in, first
// out, B's jobs would finish after all 40 of A's; with the route's slots shared by workspace, B's
// two take turns with A's and both are done before A's 10th job is. A job that finds the route full
// waits in its workflow for a grant (db/repos/route-slots.ts), woken when a release hands it a slot,
// so B's submits never retry. Completion order is read from the stack itself (the rows' finished_at,
// written by the workflows' last step). Each job is charged once and fal never has more than the
// route's slots in flight.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, waitFor, type TestDatabase } from '../support/stack.js';
import { startService, type InProcessGateway, type Service } from '../support/services.js';
import { startLiveFal, type LiveFal } from '../support/fake-providers/live-fal.js';
import { createImages, describeTimeline, jobTimeline, waitAllFinished } from '../support/fair-share.js';
import { jobLedger } from '../support/job-helpers.js';
import { SLOT_GRANT_FALLBACK_MS } from '../../shared/route-slots.js';

const SLOTS = 2;
const A_JOBS = 40;
const B_JOBS = 2;
// nano-banana-2 on fal: 4 credits per image (shared/catalog.ts).
const price = 4;

let suite: Service;
let tdb: TestDatabase;
let live: LiveFal;
let gw: InProcessGateway;

before(async () => {
  live = await startLiveFal();
  // Each request runs until its first status check (about a second after its submit).
  live.fal.flow = ['IN_PROGRESS', 'COMPLETED'];
  suite = await startService(
    {
      ...live.env,
      ROUTE_SLOTS: `fal=${SLOTS}`,
      RATE_LIMIT_GENERATE_PER_MIN: '100000',
      RATE_LIMIT_POLL_PER_MIN: '100000',
      RECONCILE_INTERVAL_MS: '3600000',
    },
    { roles: 'workflows,io,fetch,provider:fal' },
  );
  ({ tdb, gw } = suite);
});

after(async () => {
  await suite?.close();
  await live?.close();
});

test(`B's ${B_JOBS} jobs submitted behind A's ${A_JOBS} on a ${SLOTS}-slot route, one worker, are done before A's 10th`, async () => {
  const a = await createTenant(tdb.db, 10_000);
  const b = await createTenant(tdb.db, 10_000);
  const aIds = await createImages(gw.baseUrl, a, A_JOBS, 'A', A_JOBS);
  // B comes once A's jobs hold the route: A's others wait for a slot.
  await waitFor("A's jobs holding the route's slots", async () => live.fal.states.size >= SLOTS || undefined, 120_000, 50);
  const bIds = await createImages(gw.baseUrl, b, B_JOBS, 'B', B_JOBS);
  await waitAllFinished(tdb.db, [...aIds, ...bIds], 300_000);

  const rows = await tdb.db
    .selectFrom('jobs')
    .select(['id', 'status', 'finished_at'])
    .where('id', 'in', [...aIds, ...bIds])
    .execute();
  assert.deepEqual(
    rows.filter((r) => r.status !== 'completed').map((r) => r.id),
    [],
    'every job completed',
  );
  const finished = new Map(rows.map((r) => [r.id, r.finished_at!.getTime()]));
  const aDone = aIds.map((id) => finished.get(id)!).sort((x, y) => x - y);
  const order = [...aIds, ...bIds].sort((x, y) => finished.get(x)! - finished.get(y)!);
  for (const id of bIds) {
    const t = await jobTimeline(gw.client, tdb.db, id);
    const aBefore = aDone.filter((f) => f < finished.get(id)!).length;
    console.log(`B's ${id}: done after ${aBefore} of A's ${A_JOBS}; ${describeTimeline(t)}`);
    // It waited for a grant, not by retrying: one submit refused (registering it as a waiter), then
    // the one that took the slot, at its first attempt. A job left waiting longer than the fallback
    // ask (SLOT_GRANT_FALLBACK_MS, for a lost signal; a loaded machine slows every job) asks once
    // more per fallback period: never the retry every second a submit without grants makes.
    const waited = t.submitStarted - t.submitScheduled;
    const asks = 2 + Math.floor(waited / SLOT_GRANT_FALLBACK_MS);
    assert.ok(
      t.submits <= asks && t.submitAttempt === 1,
      `B's ${id} took its slot with submit ${t.submits} (at most ${asks} after ${waited} ms waiting), attempt ${t.submitAttempt}`,
    );
  }
  const bLast = Math.max(...bIds.map((id) => finished.get(id)!));
  const aBeforeB = aDone.filter((f) => f < bLast).length;
  assert.ok(
    bLast < aDone[9]!,
    `B's last job was done after ${aBeforeB} of A's jobs (bound: before A's 10th; first in, first out: after ${A_JOBS}); ` +
      `completion order: ${order.map((id) => (bIds.includes(id) ? 'B' : 'a')).join('')}`,
  );

  for (const id of [...aIds, ...bIds]) assert.deepEqual(await jobLedger(tdb.db, id), [['charge', -price]], `${id} is charged its price once`);
  assert.ok(live.fal.maxInFlight <= SLOTS, `fal had ${live.fal.maxInFlight} requests in flight at once (route of ${SLOTS})`);
  assert.equal(live.fal.states.size, A_JOBS + B_JOBS, 'each job was submitted to fal once');
});
