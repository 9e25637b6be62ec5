// gpt-image-1.5's retirement over HTTP on a frozen gateway clock: OpenAI shuts it down on 2026-12-01
// (developers.openai.com/api/docs/deprecations). Before that day a create (and its dry run) is served
// with Deprecation (RFC 9745, since the notice date 2026-06-02), Sunset (RFC 8594, the shutdown) and
// X-Mediagen-Warning naming the replacement; from it, 410 model_retired naming the replacement, with
// nothing charged. GET /v1/models shows the record.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, createTenant, testConfig, type TestDatabase, type Tenant } from '../support/stack.js';
import { startGateway, creditsOf, type InProcessGateway } from '../support/services.js';
import { call } from './gateway-harness.js';
import { catalog } from '../../shared/catalog.js';

describe('gpt-image-1.5 is retired on OpenAI’s shutdown date', () => {
  let tdb: TestDatabase;
  let now = new Date('2026-11-30T23:59:00Z');
  let gw: InProcessGateway;
  let t: Tenant;

  before(async () => {
    tdb = await createTestDatabase();
    // OpenAI's key makes gpt-image-1.5 live; no worker runs, so no provider is reached.
    const config = testConfig(tdb.url, { RATE_LIMIT_GENERATE_PER_MIN: '1000', PROVIDERS_MODE: 'live', OPENAI_API_KEY: 'sk-test-openai-0123456789' });
    gw = await startGateway(config, tdb.db, { clock: () => now });
    t = await createTenant(tdb.db, 1000);
  });

  after(async () => {
    await gw?.close();
    await tdb?.drop();
  });

  const image = (model: string, query = '') =>
    call(gw.baseUrl, 'POST', `/v1/images/generate${query}`, {
      key: t.apiKey,
      body: JSON.stringify({ project_id: t.projectId, prompt: 'a lighthouse at dusk', model, aspect_ratio: '1:1', count: 1 }),
      contentType: 'application/json',
    });

  test('the catalog record says so: deprecated since OpenAI’s notice, retiring on its shutdown date, replaced by gpt-image-2.6-sunburst', async () => {
    const entry = catalog['gpt-image-1.5'].deprecation;
    assert.deepEqual([entry.since, entry.retiresAt, entry.replacement], ['2026-06-02', '2026-12-01', 'gpt-image-2.6-sunburst']);
    assert.match(entry.reason, /gpt-image-2\.6-sunburst or gpt-image-2\.6-flare/);
    const res = await call(gw.baseUrl, 'GET', '/v1/models', { key: t.apiKey });
    assert.equal(res.status, 200, res.text);
    const m = (res.body.data as Array<Record<string, unknown>>).find((x) => x.name === 'gpt-image-1.5')!;
    assert.deepEqual([m.deprecated_at, m.replacement, m.retires_at], ['2026-06-02', 'gpt-image-2.6-sunburst', '2026-12-01']);
  });

  test('before the date a create is served with Deprecation, Sunset and the warning naming the replacement', async () => {
    now = new Date('2026-11-30T23:59:00Z');
    for (const query of ['', '?dry_run=true']) {
      const res = await image('gpt-image-1.5', query);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.headers.get('deprecation'), `@${Date.parse('2026-06-02T00:00:00Z') / 1000}`);
      assert.equal(res.headers.get('sunset'), new Date('2026-12-01T00:00:00Z').toUTCString());
      assert.match(
        res.headers.get('x-mediagen-warning')!,
        /^model gpt-image-1\.5 is deprecated since 2026-06-02 .*; creates are refused from 2026-12-01; use gpt-image-2\.6-sunburst instead$/,
      );
    }
  });

  test('from the date a create answers 410 model_retired naming the replacement, and charges nothing', async () => {
    now = new Date('2026-12-01T00:00:00Z');
    const before = await creditsOf(tdb.db, t);
    for (const query of ['', '?dry_run=true']) {
      const res = await image('gpt-image-1.5', query);
      assert.equal(res.status, 410, res.text);
      assert.equal(res.body.error.code, 'model_retired');
      assert.match(res.body.error.message, /^model gpt-image-1\.5 was retired on 2026-12-01 \(.*\); use gpt-image-2\.6-sunburst instead$/);
    }
    assert.equal(await creditsOf(tdb.db, t), before);
    // The replacement is served as usual, without deprecation headers.
    const next = await image('gpt-image-2.6-sunburst');
    assert.equal(next.status, 200, next.text);
    assert.equal(next.headers.get('deprecation'), null);
  });
});
