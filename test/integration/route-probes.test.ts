// The route health probe against the providers' fakes (each answering its provider's documented model
// get/list endpoint) and the real database: a listed model keeps its route available; a model the
// provider lost marks the route unavailable with the provider's answer as the reason, and finding it
// again brings it back; a 5xx or a timeout changes nothing; a refused key marks the route unavailable;
// of several replicas probing at once, one probes each route per period.
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { createTestDatabase, testConfig, type TestDatabase } from '../support/stack.js';
import { startFakeFal, type FakeFal } from '../support/fake-providers/fal.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-providers/openai.js';
import { startFakeXai, type FakeXai } from '../support/fake-providers/xai.js';
import { startFakeGoogle, type FakeGoogle } from '../support/fake-providers/google.js';
import { startFakeElevenLabs, type FakeElevenLabs } from '../support/fake-providers/elevenlabs.js';
import { json } from '../support/fake-providers/server.js';
import { routeProbes } from '../../activities/providers/probes.js';
import { createRouteProber, probedRoutes } from '../../worker/route-prober.js';
import { createProviderCircuits } from '../../db/provider-circuits.js';
import type { Config } from '../../shared/config.js';
import { unavailableRoutes } from '../../db/repos/route-probes.js';
import { modelInfo } from '../../api/routes/models.js';
import { catalog } from '../../shared/catalog.js';

let tdb: TestDatabase;
let fal: FakeFal;
let openai: FakeOpenAI;
let xai: FakeXai;
let google: FakeGoogle;
let elevenlabs: FakeElevenLabs;
let config: Config;

before(async () => {
  tdb = await createTestDatabase();
  [fal, openai, xai, google, elevenlabs] = await Promise.all([startFakeFal(), startFakeOpenAI(), startFakeXai(), startFakeGoogle(), startFakeElevenLabs()]);
  config = testConfig(tdb.url, {
    PROVIDERS_MODE: 'live',
    FAL_KEY: fal.key,
    FAL_QUEUE_URL: fal.url,
    FAL_API_URL: fal.url,
    OPENAI_API_KEY: openai.key,
    OPENAI_BASE_URL: openai.url,
    XAI_API_KEY: xai.key,
    XAI_BASE_URL: xai.url,
    GEMINI_API_KEY: google.key,
    GEMINI_BASE_URL: `${google.url}/v1beta`,
    ELEVENLABS_API_KEY: elevenlabs.key,
    ELEVENLABS_BASE_URL: elevenlabs.url,
    ARK_API_KEY: '',
    DASHSCOPE_API_KEY: '',
    AZURE_OPENAI_API_KEY: '',
    ROUTE_PROBE_INTERVAL_MS: '200',
  });
});

after(async () => {
  await Promise.all([fal, openai, xai, google, elevenlabs].map((f) => f?.close()));
  await tdb?.drop();
});

beforeEach(async () => {
  for (const f of [fal, openai, xai, google, elevenlabs]) f.restoreModel().up();
  await tdb.db.deleteFrom('route_probes').execute();
});

const signal = new AbortController().signal;

describe('each provider probe reads its documented model endpoint', () => {
  const cases = [
    {
      provider: 'fal',
      id: 'xai/grok-imagine-video/text-to-video',
      kind: 'video',
      fake: () => fal,
      gone: /fal route for xai\/grok-imagine-video\/text-to-video: model gone \(not listed by GET \/v1\/models\?endpoint_id=/,
    },
    {
      provider: 'openai',
      id: 'gpt-image-1.5',
      kind: 'image',
      fake: () => openai,
      gone: /openai route for gpt-image-1\.5: model gone \(404 from GET \/v1\/models\/gpt-image-1\.5\)/,
    },
    {
      provider: 'xai',
      id: 'grok-imagine-video',
      kind: 'video',
      fake: () => xai,
      gone: /model gone \(404 from GET \/v1\/video-generation-models\/grok-imagine-video\)/,
    },
    {
      provider: 'google',
      id: 'veo-3.1-generate-preview',
      kind: 'video',
      fake: () => google,
      gone: /model gone \(404 from GET \/v1beta\/models\/veo-3\.1-generate-preview\)/,
    },
    {
      provider: 'elevenlabs',
      id: 'eleven_multilingual_v2',
      kind: 'talking_actor',
      fake: () => elevenlabs,
      gone: /model gone \(not listed by GET \/v1\/models\)/,
    },
  ] as const;
  for (const c of cases) {
    test(`${c.provider}: listed → available; lost → gone; 5xx → unknown; wrong key → refused`, async () => {
      const probe = routeProbes(config)[c.provider]!;
      const ctx = { signal, kind: c.kind } as const;
      assert.deepEqual(await probe(c.id, ctx), { state: 'available' });
      c.fake().loseModel(c.id);
      const gone = await probe(c.id, ctx);
      assert.equal(gone.state, 'gone');
      assert.match((gone as { reason: string }).reason, c.gone);
      c.fake().restoreModel();
      c.fake().script('models', json(503, { error: 'overloaded' }));
      assert.equal((await probe(c.id, ctx)).state, 'unknown');
      const keyless = routeProbes({
        ...config,
        FAL_KEY: 'wrong',
        OPENAI_API_KEY: 'wrong',
        XAI_API_KEY: 'wrong',
        GEMINI_API_KEY: 'wrong',
        ELEVENLABS_API_KEY: 'wrong',
      });
      const refused = await keyless[c.provider]!(c.id, ctx);
      assert.equal(refused.state, 'refused');
      assert.match((refused as { reason: string }).reason, /credentials refused \((401|403) from GET /);
    });
  }

  test('providers without a documented model endpoint that says whether a model exists have no probe', () => {
    const probes = routeProbes(config);
    assert.deepEqual(
      ['azure', 'byteplus', 'alibaba'].filter((p) => p in probes),
      [],
    );
  });
});

describe('the route prober', () => {
  const logger = pino({ level: 'silent' });
  const grokOnFal = (db = tdb.db) =>
    db
      .selectFrom('route_probes')
      .select(['status', 'reason', 'last_error'])
      .where('provider', '=', 'fal')
      .where('model', '=', 'grok-video')
      .executeTakeFirstOrThrow();

  test('probes the live routes of its providers that have a probe', () => {
    const routes = probedRoutes(config, ['fal', 'xai', 'azure']);
    assert.ok(routes.some((r) => r.provider === 'fal' && r.model === 'grok-video' && r.providerModelId === 'xai/grok-imagine-video/text-to-video'));
    assert.ok(routes.some((r) => r.provider === 'xai' && r.model === 'grok-video' && r.providerModelId === 'grok-imagine-video'));
    assert.ok(routes.every((r) => r.provider === 'fal' || r.provider === 'xai'));
  });

  test("a route's speech step is probed on its speech provider; its model gone shows the route unavailable in GET /v1/models", async () => {
    const routes = probedRoutes(config, ['elevenlabs']);
    assert.deepEqual(
      routes.map((r) => `${r.provider}/${r.model}/${r.providerModelId}`).sort(),
      ['elevenlabs/talking-actor-v3/eleven_v3', 'elevenlabs/talking-actor/eleven_multilingual_v2'],
      "ElevenLabs has no route of its own: only the talking actors' speech steps",
    );
    assert.ok(
      probedRoutes(config, ['fal']).some((r) => r.model === 'talking-actor' && r.providerModelId === 'fal-ai/infinitalk'),
      'the lipsync route on fal',
    );
    // A provider fleet holds its own key only (the Helm chart's): each still probes its part of the talking actor.
    const fleetOf = (key: 'FAL_KEY' | 'ELEVENLABS_API_KEY') => ({ ...config, FAL_KEY: undefined, ELEVENLABS_API_KEY: undefined, [key]: config[key] });
    assert.deepEqual(
      probedRoutes(fleetOf('ELEVENLABS_API_KEY'), ['elevenlabs']).map((r) => r.providerModelId),
      routes.map((r) => r.providerModelId),
      "ElevenLabs' fleet, without fal's key",
    );
    assert.ok(
      probedRoutes(fleetOf('FAL_KEY'), ['fal']).some((r) => r.model === 'talking-actor-v3' && r.providerModelId === 'fal-ai/infinitalk'),
      "fal's fleet, without ElevenLabs' key",
    );
    assert.deepEqual(probedRoutes({ ...config, PROVIDERS_MODE: 'local' }, ['elevenlabs']), [], 'nothing probed where the local renderer serves every model');

    const prober = createRouteProber({ config, db: tdb.db, providers: ['elevenlabs'], logger });
    elevenlabs.loseModel('eleven_multilingual_v2');
    const found = await prober.runOnce();
    assert.equal(found.find((f) => f.model === 'talking-actor')?.outcome.state, 'gone');
    assert.equal(found.find((f) => f.model === 'talking-actor-v3')?.outcome.state, 'available');
    const probes = new Map((await unavailableRoutes(tdb.db)).map((r) => [`${r.provider}/${r.model}`, r.reason!]));
    const shown = modelInfo(catalog['talking-actor'], config, new Map(), probes);
    assert.equal(shown.availability, 'unavailable');
    assert.equal(shown.routes[0]!.provider, 'fal');
    assert.match(shown.routes[0]!.unavailable_reason!, /^elevenlabs route for eleven_multilingual_v2: model gone/);
    assert.equal(modelInfo(catalog['talking-actor-v3'], config, new Map(), probes).availability, 'available');
    await prober.stop();
  });

  test('a lost model takes the route out of rotation with why; a 5xx changes nothing; found again, it is back', async () => {
    const prober = createRouteProber({ config, db: tdb.db, providers: ['fal'], logger });
    const circuits = createProviderCircuits(tdb.db, { windowMs: 60_000, minAttempts: 5, failurePercent: 50, openMs: 60_000, trialMs: 60_000 });
    await prober.runOnce();
    assert.equal((await grokOnFal()).status, 'available');

    fal.loseModel('xai/grok-imagine-video/text-to-video');
    // The claim holds the route for most of a period: the next pass one interval later probes it.
    await new Promise((r) => setTimeout(r, 200));
    const found = await prober.runOnce();
    assert.equal(found.find((f) => f.model === 'grok-video')?.outcome.state, 'gone');
    const gone = await grokOnFal();
    assert.equal(gone.status, 'unavailable');
    assert.match(gone.reason!, /^fal route for xai\/grok-imagine-video\/text-to-video: model gone/);
    assert.deepEqual([...(await circuits.outOfRotation('grok-video'))], ['fal']);

    fal.restoreModel();
    fal.down(['models'], json(502, { detail: 'Bad Gateway' }));
    await new Promise((r) => setTimeout(r, 200));
    await prober.runOnce();
    const still = await grokOnFal();
    assert.deepEqual([still.status, still.reason], ['unavailable', gone.reason], 'a probe that cannot tell leaves the route as it was');
    assert.match(still.last_error!, /502 from GET \/v1\/models\?endpoint_id=/);

    fal.up();
    await new Promise((r) => setTimeout(r, 200));
    await prober.runOnce();
    assert.deepEqual([(await grokOnFal()).status, (await grokOnFal()).reason], ['available', null]);
    assert.deepEqual([...(await circuits.outOfRotation('grok-video'))], []);
    await prober.stop();
  });

  test('a transient failure never takes an available route out', async () => {
    const prober = createRouteProber({ config, db: tdb.db, providers: ['xai'], logger });
    xai.down(['models'], { status: 500, body: { code: 'internal', error: 'internal error' } });
    await prober.runOnce();
    const row = await tdb.db.selectFrom('route_probes').select(['status', 'last_error']).where('provider', '=', 'xai').executeTakeFirstOrThrow();
    assert.equal(row.status, 'available');
    assert.match(row.last_error!, /500 from GET \/v1\/video-generation-models\/grok-imagine-video/);
    await prober.stop();
  });

  test('of replicas probing at once, one probes each route in a period', async () => {
    // A period longer than the passes take, however slow the machine.
    const minute = { ...config, ROUTE_PROBE_INTERVAL_MS: 60_000 };
    const replicas = [1, 2, 3].map(() => createRouteProber({ config: minute, db: tdb.db, providers: ['fal'], logger }));
    const before = fal.requestsOf('models').length;
    const passes = await Promise.all(replicas.map((p) => p.runOnce()));
    const routes = probedRoutes(config, ['fal']).length;
    assert.equal(
      fal.requestsOf('models').length - before,
      routes,
      fal
        .requestsOf('models')
        .slice(before)
        .map((r) => r.query.get('endpoint_id'))
        .join(','),
    );
    assert.equal(passes.flat().length, routes);
    await Promise.all(replicas.map((p) => p.stop()));
  });
});
