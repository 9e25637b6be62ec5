// ?dry_run=true on the generate endpoints over HTTP on the real gateway and Postgres: the create's
// validation, 403/404 checks and price, with nothing charged, stored or started; the generation
// rate class; and the model catalog checked against it value by value. The local renderer serves
// every model here, so a cancel after the submit keeps nothing (non_refundable_after_submit 0).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, createTenant, type TestDatabase, type Tenant } from '../support/stack.js';
import { api, assertApiError, creditsOf } from '../support/services.js';
import { startInProcessGateway, type Gateway } from '../integration/gateway-harness.js';
import { insertActor, insertUpload, insertVoice } from '../support/fixtures.js';
import { createStorage } from '../../shared/storage.js';
import { testConfig } from '../support/stack.js';
import { routeFor } from '../../shared/catalog.js';

let tdb: TestDatabase;
let gw: Gateway;
let limited: Gateway;

before(async () => {
  tdb = await createTestDatabase();
  gw = await startInProcessGateway(tdb.db, tdb.url, { RATE_LIMIT_GENERATE_PER_MIN: '100000', RATE_LIMIT_POLL_PER_MIN: '100000' });
  limited = await startInProcessGateway(tdb.db, tdb.url, { RATE_LIMIT_GENERATE_PER_MIN: '3' });
});

after(async () => {
  await limited?.close();
  await gw?.close();
  await tdb?.drop();
});

const image = (t: Tenant, extra: Record<string, unknown> = {}) => ({
  project_id: t.projectId,
  prompt: 'a fox',
  model: 'nano-banana-2',
  aspect_ratio: '1:1',
  count: 2,
  ...extra,
});

async function nothingStored(t: Tenant, credits: number) {
  assert.equal(await creditsOf(tdb.db, t), credits, 'nothing charged');
  assert.equal((await tdb.db.selectFrom('jobs').select('id').where('workspace_id', '=', t.workspaceId).execute()).length, 0, 'no job');
  assert.equal(
    (await tdb.db.selectFrom('credit_ledger').select('id').where('workspace_id', '=', t.workspaceId).where('reason', '!=', 'grant').execute()).length,
    0,
    'no ledger row',
  );
}

describe('?dry_run=true', () => {
  test('answers the price and the balance, and creates, charges and starts nothing', async () => {
    const t = await createTenant(tdb.db, 100);
    const c = api(gw.baseUrl, t.apiKey);
    const r = await c.post('/v1/images/generate?dry_run=true', image(t));
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, {
      data: { price: 8, available: 100, sufficient: true, non_refundable_after_submit: 0, deadline_at: null, within_budget: null, budget_remaining: null },
    });
    const video = await c.post('/v1/videos/generate?dry_run=true', { project_id: t.projectId, prompt: 'waves', model: 'kling-3.0', duration: 8 });
    assert.deepEqual(
      video.body,
      {
        data: {
          price: 14 * 8,
          available: 100,
          sufficient: false,
          non_refundable_after_submit: 0,
          deadline_at: null,
          within_budget: null,
          budget_remaining: null,
        },
      },
      'an insufficient balance is a 200 with sufficient false',
    );
    await nothingStored(t, 100);
    // dry_run=false is an ordinary create.
    const made = await c.post('/v1/images/generate?dry_run=false', image(t));
    assert.equal(made.status, 200, made.text);
    assert.equal(made.body.data.status, 'pending');
    assert.equal(await creditsOf(tdb.db, t), 92);
  });

  test('runs the full validation: 400 invalid_request / invalid_model, 403 foreign project, 404 missing references', async () => {
    const t = await createTenant(tdb.db, 100);
    const other = await createTenant(tdb.db, 100);
    const c = api(gw.baseUrl, t.apiKey);
    assertApiError(await c.post('/v1/images/generate?dry_run=true', image(t, { count: 5 })), 400, 'invalid_request');
    assertApiError(await c.post('/v1/images/generate?dry_run=true', image(t, { model: 'dall-e-9' })), 400, 'invalid_model');
    assertApiError(
      await c.post('/v1/videos/generate?dry_run=true', { project_id: t.projectId, prompt: 'x', model: 'sora-2', aspect_ratio: '1:1' }),
      400,
      'invalid_request',
    );
    assertApiError(await c.post('/v1/images/generate?dry_run=true', image(t, { project_id: other.projectId })), 403, 'forbidden');
    assertApiError(
      await c.post('/v1/videos/generate?dry_run=true', { project_id: t.projectId, prompt: 'x', model: 'sora-2', start_frame_file_id: 'file_missing' }),
      404,
      'not_found',
    );
    // Another workspace's upload is as missing as an unknown one.
    const storage = createStorage(testConfig(tdb.url));
    const theirs = await insertUpload(tdb.db, storage, other, 'image');
    assertApiError(
      await c.post('/v1/videos/generate?dry_run=true', { project_id: t.projectId, prompt: 'x', model: 'sora-2', start_frame_file_id: theirs }),
      404,
      'not_found',
    );
    assertApiError(
      await c.post('/v1/talking-actors/generate?dry_run=true', { project_id: t.projectId, actor_id: 'actor_missing', script: 'hi' }),
      404,
      'not_found',
    );
    assertApiError(await c.post('/v1/images/generate?dry_run=maybe', image(t)), 400, 'invalid_request');
    await nothingStored(t, 100);
  });

  test('every kind quotes its catalog price (talking actor by script length, replace actor by duration)', async () => {
    const t = await createTenant(tdb.db, 1000);
    const c = api(gw.baseUrl, t.apiKey);
    const storage = createStorage(testConfig(tdb.url));
    const voice = await insertVoice(tdb.db);
    const actor = await insertActor(tdb.db, storage, { defaultVoiceId: voice });
    const talking = await c.post('/v1/talking-actors/generate?dry_run=true', { project_id: t.projectId, actor_id: actor, script: 'x'.repeat(250) });
    assert.deepEqual(talking.body, {
      data: {
        price: 20 + 2 * 3,
        available: 1000,
        sufficient: true,
        non_refundable_after_submit: 0,
        deadline_at: null,
        within_budget: null,
        budget_remaining: null,
      },
    });
    const img = await insertUpload(tdb.db, storage, t, 'image');
    const vid = await insertUpload(tdb.db, storage, t, 'video');
    const replace = await c.post('/v1/replace-actors/generations?dry_run=true', {
      project_id: t.projectId,
      image_file_id: img,
      video_file_id: vid,
      duration: 10,
    });
    assert.deepEqual(replace.body, {
      data: {
        price: 8 * 10,
        available: 1000,
        sufficient: true,
        non_refundable_after_submit: 0,
        deadline_at: null,
        within_budget: null,
        budget_remaining: null,
      },
    });
    await nothingStored(t, 1000);
  });

  test('the model catalog and the create validation agree value by value', async () => {
    const t = await createTenant(tdb.db, 0);
    const c = api(gw.baseUrl, t.apiKey);
    const all = (await c.get('/v1/models')).body.data as any[];
    // A model past its retirement date stays listed (its creates are told the replacement) and its dry
    // run answers as its create does: 410 model_retired.
    const retired = (m: any) => m.retires_at != null && Date.parse(m.retires_at) <= Date.now();
    for (const m of all.filter((x) => retired(x) && (x.kind === 'image' || x.kind === 'video'))) {
      const path = m.kind === 'image' ? '/v1/images/generate' : '/v1/videos/generate';
      assertApiError(await c.post(`${path}?dry_run=true`, { project_id: t.projectId, prompt: 'p', model: m.name }), 410, 'model_retired');
      // A malformed dry_run is the request's first fault, before the model's retirement.
      assertApiError(await c.post(`${path}?dry_run=1`, { project_id: t.projectId, prompt: 'p', model: m.name }), 400, 'invalid_request');
    }
    const models = all.filter((m) => !retired(m));
    const frame = await insertUpload(tdb.db, createStorage(testConfig(tdb.url)), t, 'image');
    for (const m of models.filter((x) => x.kind === 'video')) {
      // An image-to-video-only model is asked with its first frame (without one it is refused, as its
      // create would be); every other is asked with text alone.
      const firstFrame = routeFor(m.name)?.takes?.startFrame === 'required' ? { start_frame_file_id: frame } : {};
      const base = { project_id: t.projectId, prompt: 'p', model: m.name, ...firstFrame };
      for (const aspect_ratio of m.aspect_ratios) {
        const r = await c.post('/v1/videos/generate?dry_run=true', { ...base, aspect_ratio });
        assert.equal(r.status, 200, `${m.name} ${aspect_ratio}: ${r.text}`);
        assert.equal(r.body.data.price, m.price.credits * m.default_duration, `${m.name} priced per second of its default duration`);
      }
      for (const resolution of m.resolutions)
        assert.equal((await c.post('/v1/videos/generate?dry_run=true', { ...base, resolution })).status, 200, `${m.name} ${resolution}`);
      const durations: number[] = 'values' in m.durations ? m.durations.values : [m.durations.min, m.durations.max];
      for (const duration of durations)
        assert.equal((await c.post('/v1/videos/generate?dry_run=true', { ...base, duration })).status, 200, `${m.name} ${duration}s`);
      const outside = 'values' in m.durations ? Math.max(...m.durations.values) + 1 : m.durations.max + 1;
      assertApiError(await c.post('/v1/videos/generate?dry_run=true', { ...base, duration: outside }), 400, 'invalid_request');
      assertApiError(await c.post('/v1/videos/generate?dry_run=true', { ...base, aspect_ratio: '5:4' }), 400, 'invalid_request');
    }
    for (const m of models.filter((x) => x.kind === 'image')) {
      const r = await c.post('/v1/images/generate?dry_run=true', {
        project_id: t.projectId,
        prompt: 'p',
        model: m.name,
        aspect_ratio: m.aspect_ratios[0],
        count: 3,
      });
      assert.deepEqual(
        r.body.data,
        {
          price: m.price.credits * 3,
          available: 0,
          sufficient: false,
          non_refundable_after_submit: 0,
          deadline_at: null,
          within_budget: null,
          budget_remaining: null,
        },
        m.name,
      );
    }
  });

  test('counts in the generation rate class', async () => {
    const t = await createTenant(tdb.db, 100);
    const c = api(limited.baseUrl, t.apiKey);
    for (let i = 0; i < 3; i++) assert.equal((await c.post('/v1/images/generate?dry_run=true', image(t))).status, 200);
    const r = await c.post('/v1/images/generate?dry_run=true', image(t));
    assertApiError(r, 429, 'rate_limited');
    assert.equal(r.headers.get('ratelimit-limit'), '3');
    await nothingStored(t, 100);
  });
});
