// Lifecycle signals arrive by themselves: the route probe reads what a provider publishes of a model's
// end on the endpoint it already calls — OpenAI's `shutdown_date` on GET /v1/models/{id}, fal's
// `status: "deprecated"` in its model search — against the providers' fakes and the real database. On
// the next probe the route's record gets deprecated_at (the day it was read) and the shutdown date,
// GET /v1/models shows the model deprecated, and one alert fires (an error line "route lifecycle: …",
// never again for the same announcement); a provider taking its announcement back clears it.
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { createTestDatabase, testConfig, type TestDatabase } from '../support/stack.js';
import { startFakeFal, type FakeFal } from '../support/fake-providers/fal.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-providers/openai.js';
import { createRouteProber } from '../../worker/route-prober.js';
import { deprecatedRoutes } from '../../db/repos/route-probes.js';
import { modelCatalog, readProviderDeprecations } from '../../api/routes/models.js';
import type { Config } from '../../shared/config.js';

let tdb: TestDatabase;
let fal: FakeFal;
let openai: FakeOpenAI;
let config: Config;

before(async () => {
  tdb = await createTestDatabase();
  [fal, openai] = await Promise.all([startFakeFal(), startFakeOpenAI()]);
  config = testConfig(tdb.url, {
    PROVIDERS_MODE: 'live',
    FAL_KEY: fal.key,
    FAL_QUEUE_URL: fal.url,
    FAL_API_URL: fal.url,
    OPENAI_API_KEY: openai.key,
    OPENAI_BASE_URL: openai.url,
    XAI_API_KEY: '',
    GEMINI_API_KEY: '',
    ELEVENLABS_API_KEY: '',
    ARK_API_KEY: '',
    DASHSCOPE_API_KEY: '',
    AZURE_OPENAI_API_KEY: '',
    ROUTE_PROBE_INTERVAL_MS: '200',
  });
});

after(async () => {
  await Promise.all([fal?.close(), openai?.close()]);
  await tdb?.drop();
});

beforeEach(async () => {
  openai.shutdownDates.clear();
  fal.deprecatedModels.clear();
  await tdb.db.deleteFrom('route_probes').execute();
});

/** A logger whose lines the test reads. */
function capturedLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), alerts: () => lines.filter((l) => l.alert === 'route_lifecycle') };
}

const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const today = () => isoDay(Date.now());
// The claim holds a route for most of a period: the next pass one interval later probes it again.
const nextPeriod = () => new Promise((r) => setTimeout(r, 250));

describe('lifecycle signals arrive by themselves through the route probe', () => {
  test("OpenAI's shutdown_date 30 days out marks the model deprecated on the next probe and fires the alert once", async () => {
    const { logger, alerts } = capturedLogger();
    const prober = createRouteProber({ config, db: tdb.db, providers: ['openai'], logger });
    await prober.runOnce();
    assert.deepEqual(await deprecatedRoutes(tdb.db), [], 'nothing announced, nothing recorded');
    assert.equal(alerts().length, 0);

    const shutdown = isoDay(Date.now() + 30 * 86_400_000);
    openai.shutdownDates.set('gpt-image-2', shutdown);
    await nextPeriod();
    const found = await prober.runOnce();
    const probed = found.find((f) => f.model === 'gpt-image-2')!;
    assert.deepEqual(probed.outcome, {
      state: 'available',
      lifecycle: { shutdownAt: shutdown, signal: `OpenAI announces shutdown_date ${shutdown} (GET /v1/models/gpt-image-2)` },
    });
    const rows = await deprecatedRoutes(tdb.db);
    assert.deepEqual(
      rows.map((r) => [r.provider, r.model, r.deprecated_at, r.shutdown_at]),
      [['openai', 'gpt-image-2', today(), shutdown]],
    );
    // The model record: GET /v1/models shows the model deprecated since the day it was read.
    const listed = modelCatalog(config, new Map(), new Map(), await readProviderDeprecations(tdb.db)).find((m) => m.name === 'gpt-image-2')!;
    assert.equal(listed.deprecated_at, today());
    assert.equal(modelCatalog(config).find((m) => m.name === 'gpt-image-2')!.deprecated_at, null, 'without the probe it is not deprecated');
    // The alert, never silent, and once per announcement.
    assert.equal(alerts().length, 1);
    assert.equal(alerts()[0]!.level, 50, 'an error line');
    assert.equal(alerts()[0]!.shutdownAt, shutdown);
    assert.match(String(alerts()[0]!.msg), new RegExp(`route lifecycle: openai's gpt-image-2 shuts down on ${shutdown}`));
    await nextPeriod();
    await prober.runOnce();
    assert.equal(alerts().length, 1, 'the same announcement alerts once');

    // A moved date is a new announcement; deprecated_at keeps the day it was first read.
    const moved = isoDay(Date.now() + 10 * 86_400_000);
    openai.shutdownDates.set('gpt-image-2', moved);
    await nextPeriod();
    await prober.runOnce();
    assert.equal(alerts().length, 2);
    assert.deepEqual(
      (await deprecatedRoutes(tdb.db)).map((r) => [r.deprecated_at, r.shutdown_at]),
      [[today(), moved]],
    );

    // Taken back: the route's lifecycle is cleared.
    openai.shutdownDates.clear();
    await nextPeriod();
    await prober.runOnce();
    assert.deepEqual(await deprecatedRoutes(tdb.db), []);
    await prober.stop();
  });

  test("fal's deprecated status in its model search marks the model deprecated (no shutdown date) and fires the alert", async () => {
    const { logger, alerts } = capturedLogger();
    const prober = createRouteProber({ config, db: tdb.db, providers: ['fal'], logger });
    fal.deprecatedModels.add('fal-ai/nano-banana-2');
    await prober.runOnce();
    const rows = await deprecatedRoutes(tdb.db);
    assert.deepEqual(
      rows.filter((r) => r.provider === 'fal').map((r) => [r.model, r.deprecated_at, r.shutdown_at]),
      [['nano-banana-2', today(), null]],
    );
    assert.match(rows[0]!.signal!, /fal lists the endpoint with status deprecated/);
    assert.equal(alerts().length, 1);
    assert.match(String(alerts()[0]!.msg), /route lifecycle: fal's fal-ai\/nano-banana-2 is deprecated \(no shutdown date given\)/);
    const listed = modelCatalog(config, new Map(), new Map(), await readProviderDeprecations(tdb.db)).find((m) => m.name === 'nano-banana-2')!;
    assert.equal(listed.deprecated_at, today());
    await prober.stop();
  });
});
