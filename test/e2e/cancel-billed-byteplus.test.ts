// A cancel refunds only what the provider did not bill, against BytePlus ModelArk as its "Cancel or
// delete a video generation task" documents DELETE …/tasks/{id}: a queued task is cancelled (never
// run), a finished one has its record deleted (a 2xx too), a running one is refused. On the real stack
// (gateway over HTTP, Temporal, Postgres, MinIO), seedance-1.5 live on Ark alone: a cancel of a task
// that already finished keeps the provider cost and never deletes the task; a cancel of a queued one
// is confirmed and refunds the whole price.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, unhurriedLimits, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, creditsOf, startService, type InProcessGateway as Gateway, type Service } from '../support/services.js';
import { startLiveFal, type LiveFal } from '../support/fake-providers/live-fal.js';
import { startFakeByteplus, type FakeByteplus } from '../support/fake-providers/byteplus.js';
import { jobFinished, jobLedger, jobRow } from '../support/job-helpers.js';
import { Holds } from '../support/holds.js';
import { catalog, priceFor } from '../../shared/catalog.js';

let suite: Service;
let tdb: TestDatabase;
let live: LiveFal;
let ark: FakeByteplus;
let gw: Gateway;
const holds = new Holds();
const duration = 5;
const price = priceFor(catalog['seedance-1.5'], { duration });
const cost = catalog['seedance-1.5'].price.providerCost * duration;

before(async () => {
  [live, ark] = await Promise.all([startLiveFal(), startFakeByteplus()]);
  ark.filesBaseUrl = live.cdn.origin;
  // No fal key: seedance-1.5 is live on its BytePlus route only.
  suite = await startService(
    {
      ...live.env,
      FAL_KEY: '',
      ARK_API_KEY: ark.key,
      ARK_BASE_URL: ark.url,
      ...unhurriedLimits,
    },
    { roles: 'workflows,io,fetch,provider:byteplus', workers: { activityInterceptors: [holds.activityInterceptor] } },
  );
  ({ tdb, gw } = suite);
});

after(async () => {
  await suite?.close();
  await Promise.all([live?.close(), ark?.close()]);
});

/** Creates a video job held right after its submit (the task is at Ark and recorded), lets `meanwhile` act at Ark, cancels it. */
async function cancelAfterSubmit(t: Tenant, marker: string, meanwhile: (taskId: string) => void) {
  const c = api(gw.baseUrl, t.apiKey);
  const held = holds.activity('submitAndCheck', 'after');
  try {
    const r = await c.post('/v1/videos/generate', { project_id: t.projectId, prompt: `a paper boat on a pond ${marker}`, model: 'seedance-1.5', duration });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data.provider, 'byteplus');
    const id = r.body.data.id as string;
    assert.equal(await held.reached, id);
    // The task the job's recorded request names (the fake's task list loses records a DELETE removes).
    const taskId = ((await jobRow(tdb.db, id)).provider_ref as { taskId?: string } | null)?.taskId;
    assert.ok(taskId && ark.tasks.has(taskId), 'the task was created at Ark');
    meanwhile(taskId);
    const canceled = await c.post(`/v1/videos/${id}/cancel`, {});
    assert.equal(canceled.status, 200, canceled.text);
    const row = await jobFinished(tdb.db, id, 60_000);
    assert.deepEqual([row.status, row.error?.code], ['failed', 'canceled']);
    const upstream = await waitFor(
      'the cancel asked of Ark',
      async () => {
        const tl = await c.get(`/v1/videos/${id}/timeline`);
        return (tl.body.data.entries as { type: string; details: Record<string, unknown> }[]).find((e) => e.type === 'cancel_upstream');
      },
      60_000,
      100,
    );
    return { id, taskId, upstream };
  } finally {
    held.release();
    await held.finished;
  }
}

const deletesOf = (taskId: string) => ark.requestsOf('cancel').filter((r) => r.path.endsWith(`/${taskId}`)).length;

describe('BytePlus: a cancel is confirmed only for a task Ark had not started', () => {
  test('a cancel of a task that already finished keeps the provider cost, and its record is not deleted', async () => {
    ark.queuedPolls = 0;
    ark.runningPolls = 1000;
    const t = await createTenant(tdb.db, 1000);
    const { id, taskId, upstream } = await cancelAfterSubmit(t, `[finished-${t.workspaceId}]`, (task) => ark.finishTask(task));
    assert.equal(upstream.details.outcome, 'not_confirmed');
    assert.equal(deletesOf(taskId), 0, 'no DELETE: on a finished task it would delete the record, not cancel anything');
    assert.equal(ark.tasks.get(taskId)?.status, 'succeeded', 'the finished task is still there');
    assert.deepEqual(await jobLedger(tdb.db, id), [
      ['charge', -price],
      ['refund', price - cost],
    ]);
    assert.equal(await creditsOf(tdb.db, t), 1000 - cost);
  });

  test('a cancel of a queued task is confirmed: Ark cancels it, and the whole price is refunded', async () => {
    ark.queuedPolls = 1000;
    ark.runningPolls = 1;
    const t = await createTenant(tdb.db, 1000);
    const { id, taskId, upstream } = await cancelAfterSubmit(t, `[queued-${t.workspaceId}]`, () => {});
    assert.equal(upstream.details.outcome, 'confirmed');
    assert.equal(deletesOf(taskId), 1);
    assert.equal(ark.tasks.get(taskId)?.status, 'cancelled');
    await waitFor('the confirmed cancel to be refunded', async () => ((await creditsOf(tdb.db, t)) === 1000 ? true : undefined), 60_000, 100);
    assert.equal(
      (await jobLedger(tdb.db, id)).reduce((sum, [, delta]) => sum + Number(delta), 0),
      0,
    );
  });
});
