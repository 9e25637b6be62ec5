// A cancel refunds only what the provider did not bill, against fal's queue as fal documents its
// cancel ("Cancel a request": a queued request is removed and never runs; a request in progress only
// has a cancellation signal sent to its runner, answered with the same 202 CANCELLATION_REQUESTED, and
// runs on). On the real stack (gateway over HTTP, Temporal, Postgres, MinIO): a cancel of a running
// request keeps the provider cost (the ledger shows the charge and a refund of the price less that
// cost, and no second refund); a cancel of a queued one is confirmed and refunds the whole price. A
// talking actor's lipsync is a fal request too, but its speech step paid ElevenLabs before it was
// queued: fal removes the queued lipsync, and the provider cost is kept all the same.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, unhurriedLimits, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, creditsOf, startService, type InProcessGateway as Gateway, type Service } from '../support/services.js';
import { startLiveFal, type LiveFal } from '../support/fake-providers/live-fal.js';
import { jobFinished, jobLedger } from '../support/job-helpers.js';
import { Holds } from '../support/holds.js';
import { catalog, priceFor, providerCostFor } from '../../shared/catalog.js';
import { startFakeElevenLabs, type FakeElevenLabs } from '../support/fake-providers/elevenlabs.js';
import { insertActor, insertVoice } from '../support/fixtures.js';

let suite: Service;
let tdb: TestDatabase;
let live: LiveFal;
let el: FakeElevenLabs;
let gw: Gateway;
const holds = new Holds();
const price = priceFor(catalog['nano-banana-2'], { count: 1 });
const cost = catalog['nano-banana-2'].price.providerCost;

before(async () => {
  [live, el] = await Promise.all([startLiveFal(), startFakeElevenLabs()]);
  suite = await startService(
    {
      ...live.env,
      ...el.env,
      ...unhurriedLimits,
    },
    { roles: 'workflows,io,fetch,provider:fal,provider:elevenlabs', workers: { activityInterceptors: [holds.activityInterceptor] } },
  );
  ({ tdb, gw } = suite);
});

after(async () => {
  await suite?.close();
  await Promise.all([live?.close(), el?.close()]);
});

/** Creates an image job held right after its submit (the request is at fal and recorded), cancels it, and answers what the cancel asked of fal. */
async function cancelAfterSubmit(t: Tenant, marker: string) {
  const c = api(gw.baseUrl, t.apiKey);
  const held = holds.activity('submitAndCheck', 'after');
  try {
    const r = await c.post('/v1/images/generate', {
      project_id: t.projectId,
      prompt: `a lighthouse at dusk ${marker}`,
      model: 'nano-banana-2',
      aspect_ratio: '1:1',
      count: 1,
    });
    assert.equal(r.status, 200, r.text);
    const id = r.body.data.id as string;
    assert.equal(await held.reached, id);
    const canceled = await c.post(`/v1/images/${id}/cancel`, {});
    assert.equal(canceled.status, 200, canceled.text);
    const row = await jobFinished(tdb.db, id, 60_000);
    assert.deepEqual([row.status, row.error?.code], ['failed', 'canceled']);
    // The provider's answer to the cancel goes on the job's timeline.
    const upstream = await waitFor(
      'the cancel asked of fal',
      async () => {
        const tl = await c.get(`/v1/images/${id}/timeline`);
        return (tl.body.data.entries as { type: string; details: Record<string, unknown> }[]).find((e) => e.type === 'cancel_upstream');
      },
      60_000,
      100,
    );
    const request = [...live.fal.states.values()].find((s) => JSON.stringify(s.input).includes(marker))!;
    return { id, upstream, request };
  } finally {
    held.release();
    await held.finished;
  }
}

describe('fal: a cancel is confirmed only for a request fal had not started', () => {
  test('a cancel of a running request keeps the provider cost: fal signals the runner and the request runs on, billed', async () => {
    live.fal.flow = [...Array<'IN_PROGRESS'>(2000).fill('IN_PROGRESS'), 'COMPLETED'];
    const t = await createTenant(tdb.db, 100);
    const { id, upstream, request } = await cancelAfterSubmit(t, `[running-${t.workspaceId}]`);
    assert.equal(request.cancelsAsked, 1, 'the cancel was asked of fal');
    assert.equal(request.canceled, false, 'fal answered 202 and the request runs on');
    assert.equal(upstream.details.outcome, 'not_confirmed');
    assert.deepEqual(await jobLedger(tdb.db, id), [
      ['charge', -price],
      ['refund', price - cost],
    ]);
    assert.equal(await creditsOf(tdb.db, t), 100 - cost);
    const rec = await api(gw.baseUrl, t.apiKey).get(`/v1/images/${id}`);
    assert.deepEqual(rec.body.data.cancel, { refunded: price - cost, kept: cost, after_submit: true });
  });

  test('a cancel of a queued request is confirmed: fal removes it from the queue, and the whole price is refunded', async () => {
    live.fal.flow = [...Array<'IN_QUEUE'>(2000).fill('IN_QUEUE'), 'COMPLETED'];
    const t = await createTenant(tdb.db, 100);
    const { id, upstream, request } = await cancelAfterSubmit(t, `[queued-${t.workspaceId}]`);
    assert.equal(request.canceled, true, 'removed from the queue');
    assert.equal(upstream.details.outcome, 'confirmed');
    await waitFor('the confirmed cancel to be refunded', async () => ((await creditsOf(tdb.db, t)) === 100 ? true : undefined), 60_000, 100);
    assert.deepEqual(
      (await jobLedger(tdb.db, id)).reduce((sum, [, delta]) => sum + Number(delta), 0),
      0,
    );
  });
});

describe('talking actor: its lipsync is a fal request, but its speech was paid first', () => {
  test('a cancel while the lipsync is queued is confirmed by fal, and the provider cost (the speech step) is kept', async () => {
    live.fal.flow = [...Array<'IN_QUEUE'>(2000).fill('IN_QUEUE'), 'COMPLETED'];
    const t = await createTenant(tdb.db, 1000);
    const c = api(gw.baseUrl, t.apiKey);
    const voice = await insertVoice(tdb.db, { providerVoiceId: [...el.voices][0]! });
    const actor = await insertActor(tdb.db, gw.storage, { defaultVoiceId: voice });
    const script = 'The lighthouse keeps its light on, even when nobody is at sea.';
    const route = catalog['talking-actor'];
    const [jobPrice, kept] = [priceFor(route, { script }), providerCostFor(route, { script })];
    const held = holds.activity('submitAndCheck', 'after');
    let id: string;
    try {
      const r = await c.post('/v1/talking-actors/generate', { project_id: t.projectId, actor_id: actor, script });
      assert.equal(r.status, 200, r.text);
      id = r.body.data.id as string;
      assert.equal(await held.reached, id);
      assert.equal(el.requestsOf('tts').filter((q) => (q.json as { text?: string }).text === script).length, 1, 'the speech was made (and paid) first');
      const canceled = await c.post(`/v1/talking-actors/${id}/cancel`, {});
      assert.equal(canceled.status, 200, canceled.text);
      const row = await jobFinished(tdb.db, id, 60_000);
      assert.deepEqual([row.status, row.error?.code], ['failed', 'canceled']);
    } finally {
      held.release();
      await held.finished;
    }
    const upstream = await waitFor(
      'the cancel asked of fal',
      async () => {
        const tl = await c.get(`/v1/talking-actors/${id}/timeline`);
        return (tl.body.data.entries as { type: string; details: Record<string, unknown> }[]).find((e) => e.type === 'cancel_upstream');
      },
      60_000,
      100,
    );
    const lipsync = [...live.fal.states.values()].find((s) => JSON.stringify(s.input).includes(id))!;
    assert.equal(lipsync.canceled, true, 'fal removed the queued lipsync');
    assert.deepEqual([upstream.details.provider, upstream.details.outcome], ['fal', 'not_cancellable']);
    assert.deepEqual(await jobLedger(tdb.db, id), [
      ['charge', -jobPrice],
      ['refund', jobPrice - kept],
    ]);
    assert.equal(await creditsOf(tdb.db, t), 1000 - kept);
    const rec = await c.get(`/v1/talking-actors/${id}`);
    assert.deepEqual(rec.body.data.cancel, { refunded: jobPrice - kept, kept, after_submit: true });
    const models = await c.get('/v1/models');
    const listed = (models.body.data as { name: string; cancel_policy: { provider_cancel: string; provider_cost: number } }[]).find(
      (m) => m.name === 'talking-actor',
    )!;
    assert.deepEqual([listed.cancel_policy.provider_cancel, listed.cancel_policy.provider_cost], ['never', route.price.providerCost]);
  });
});
