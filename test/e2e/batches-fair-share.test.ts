// A batch never starves another workspace, end to end (as test/e2e/fair-share-end-to-end.test.ts
// asserts fairness for single jobs): the gateway over HTTP, one worker process running every role,
// Temporal, Postgres, MinIO, and the local fal queue as the live provider on a route of 2 slots
// (ROUTE_SLOTS fal=2). Workspace A submits a batch of 40 image items; once its items hold the
// route's slots, workspace B creates 2 jobs at the batch's own priority (low, so priority is not
// what lets them through). First in, first out, B's jobs would finish after all 40 of A's items;
// with the route's slots shared by workspace, both are done before A's 10th item is. Every item and
// job is charged once and fal never has more than the route's slots in flight.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, waitFor, type TestDatabase } from '../support/stack.js';
import { api, startService, type InProcessGateway, type Service } from '../support/services.js';
import { startLiveFal, type LiveFal } from '../support/fake-providers/live-fal.js';
import { waitAllFinished } from '../support/fair-share.js';
import { jobLedger } from '../support/job-helpers.js';

const SLOTS = 2;
const A_ITEMS = 40;
const B_JOBS = 2;

let suite: Service;
let tdb: TestDatabase;
let live: LiveFal;
let gw: InProcessGateway;

before(async () => {
  live = await startLiveFal();
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

const image = (prompt: string) => ({ prompt, model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });

test(`B's ${B_JOBS} low-priority jobs created while A's ${A_ITEMS}-item batch holds a ${SLOTS}-slot route are done before A's 10th item`, async () => {
  const a = await createTenant(tdb.db, 10_000);
  const b = await createTenant(tdb.db, 10_000);
  const created = await api(gw.baseUrl, a.apiKey).post('/v1/batches', {
    project_id: a.projectId,
    items: Array.from({ length: A_ITEMS }, (_, i) => ({ custom_id: `a-${i}`, kind: 'image', body: image(`A ${i}`) })),
  });
  assert.equal(created.status, 200, created.text);
  const batchId = created.body.data.id as string;
  await waitFor("A's items holding the route's slots", async () => live.fal.states.size >= SLOTS || undefined, 120_000, 50);
  const bIds: string[] = [];
  for (let i = 0; i < B_JOBS; i++) {
    const r = await api(gw.baseUrl, b.apiKey).post('/v1/images/generate', { project_id: b.projectId, ...image(`B ${i}`), priority: 'low' });
    assert.equal(r.status, 200, r.text);
    bIds.push(r.body.data.id as string);
  }
  await waitFor(
    'the batch to complete',
    async () => ((await api(gw.baseUrl, a.apiKey).get(`/v1/batches/${batchId}`)).body.data.status === 'completed' ? true : undefined),
    300_000,
    200,
  );
  const aIds = (await tdb.db.selectFrom('batch_items').select('job_id').where('batch_id', '=', batchId).execute()).map((r) => r.job_id!);
  await waitAllFinished(tdb.db, [...aIds, ...bIds], 300_000);

  const rows = await tdb.db
    .selectFrom('jobs')
    .select(['id', 'status', 'finished_at', 'price'])
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
  const bLast = Math.max(...bIds.map((id) => finished.get(id)!));
  assert.ok(
    bLast < aDone[9]!,
    `B's last job was done after ${aDone.filter((f) => f < bLast).length} of A's items (bound: before A's 10th; first in, first out: after ${A_ITEMS}); ` +
      `completion order: ${order.map((id) => (bIds.includes(id) ? 'B' : 'a')).join('')}`,
  );
  for (const r of rows) assert.deepEqual(await jobLedger(tdb.db, r.id), [['charge', -r.price]], `${r.id} is charged its price once`);
  assert.ok(live.fal.maxInFlight <= SLOTS, `fal had ${live.fal.maxInFlight} requests in flight at once (route of ${SLOTS})`);
  assert.equal(live.fal.states.size, A_ITEMS + B_JOBS, 'each job was submitted to fal once');
});
