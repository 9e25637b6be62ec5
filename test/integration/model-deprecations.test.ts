// Deprecated models over HTTP: a create of one (and its dry run) is served as usual and answered with
// the Deprecation header (RFC 9745) and X-Mediagen-Warning naming the replacement; a model that is
// not deprecated gets neither; GET /v1/models lists deprecated_at, replacement and retires_at.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, createTenant, type TestDatabase, type Tenant } from '../support/stack.js';
import { call, startInProcessGateway, type Gateway } from './gateway-harness.js';

describe('deprecated models', () => {
  let tdb: TestDatabase;
  let gw: Gateway;
  let t: Tenant;

  before(async () => {
    tdb = await createTestDatabase();
    // fal's key makes sora-2 and veo-3.1 live; no worker runs, so the fake provider is never reached.
    gw = await startInProcessGateway(tdb.db, tdb.url, { RATE_LIMIT_GENERATE_PER_MIN: '1000', PROVIDERS_MODE: 'live', FAL_KEY: 'fal-test-key-0123456789' });
    t = await createTenant(tdb.db, 10_000);
  });

  after(async () => {
    await gw?.close();
    await tdb?.drop();
  });

  const video = (model: string, query = '') =>
    call(gw.baseUrl, 'POST', `/v1/videos/generate${query}`, {
      key: t.apiKey,
      body: JSON.stringify({ project_id: t.projectId, prompt: 'a lighthouse at dusk', model, duration: 8 }),
      contentType: 'application/json',
    });

  const sora2Warning =
    'model sora-2 is deprecated since 2026-09-24 (OpenAI shut sora-2 down on 2026-09-24 (developers.openai.com/api/docs/models/sora-2); this name is served as Veo 3.1 Fast); use veo-3.1 instead';

  test('a create of sora-2 is served and answered with Deprecation and X-Mediagen-Warning, without Sunset', async () => {
    const res = await video('sora-2');
    assert.equal(res.status, 200, res.text);
    assert.match(res.body.data.id, /^vid_/);
    assert.equal(res.headers.get('deprecation'), '@1790208000');
    assert.equal(res.headers.get('x-mediagen-warning'), sora2Warning);
    assert.equal(res.headers.get('sunset'), null);
  });

  test('a dry run of sora-2-pro carries the same headers', async () => {
    const res = await video('sora-2-pro', '?dry_run=true');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.data.price, 20 * 8, 'priced as veo-3.1: the same fal endpoint');
    assert.equal(res.headers.get('deprecation'), '@1790208000');
    assert.match(res.headers.get('x-mediagen-warning')!, /^model sora-2-pro is deprecated since 2026-09-24 .*; use veo-3\.1 instead$/);
  });

  test('veo-3.1 (not deprecated) gets no deprecation headers, nor does a refused request of an unknown model', async () => {
    const res = await video('veo-3.1');
    assert.equal(res.status, 200, res.text);
    assert.equal(res.headers.get('deprecation'), null);
    assert.equal(res.headers.get('x-mediagen-warning'), null);
    const unknown = await video('sora-3');
    assert.equal(unknown.status, 400);
    assert.equal(unknown.body.error.code, 'invalid_model');
    assert.equal(unknown.headers.get('deprecation'), null);
  });

  test('GET /v1/models lists deprecated_at, replacement and retires_at', async () => {
    const res = await call(gw.baseUrl, 'GET', '/v1/models', { key: t.apiKey });
    assert.equal(res.status, 200, res.text);
    const byName = new Map((res.body.data as { name: string }[]).map((m) => [m.name, m as Record<string, unknown>]));
    for (const name of ['sora-2', 'sora-2-pro']) {
      const m = byName.get(name)!;
      assert.deepEqual([m.deprecated_at, m.replacement, m.retires_at], ['2026-09-24', 'veo-3.1', null], name);
    }
    const veo = byName.get('veo-3.1')!;
    assert.deepEqual([veo.deprecated_at, veo.replacement, veo.retires_at], [null, null, null]);
  });
});
