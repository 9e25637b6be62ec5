// seedream-4.5's, seedance-1.5's and seedance-2.0's second route on the real stack: fal's queue first, then BytePlus
// ModelArk, both local fakes speaking their providers' protocols. With fal answering 503 to every
// call, an image job and a text-to-video job complete on Ark, each charged once with one Ark
// generation per image / one task; a video job the Ark route cannot take (1080p, or a generation
// control Ark does not take) is stored without failover routes and never reaches Ark; the controls both
// routes take (seed, audio) reach Ark when the job moves there.
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, type TestDatabase } from '../support/stack.js';
import { api, creditsOf, type InProcessGateway as Gateway } from '../support/services.js';
import { startFailoverStack, type FailoverStack } from '../support/failover-stack.js';
import { jobFinished, jobLedger, jobRow } from '../support/job-helpers.js';
import type { FakeFal } from '../support/fake-providers/fal.js';
import type { FakeByteplus } from '../support/fake-providers/byteplus.js';
import { json } from '../support/fake-providers/server.js';
import { catalog, priceFor } from '../../shared/catalog.js';

let stack: FailoverStack<'byteplus'>;
let tdb: TestDatabase;
let fal: FakeFal;
let ark: FakeByteplus;
let gw: Gateway;

const unavailable = json(503, { detail: 'Service Unavailable' });

before(async () => {
  stack = await startFailoverStack({
    secondary: 'byteplus',
    roles: 'workflows,io,fetch,provider:fal,provider:byteplus',
    env: { PROVIDER_BREAKER_OPEN_MS: '3600000' },
  });
  ({ tdb, fal, secondary: ark, gw } = stack);
});

after(() => stack?.close());

beforeEach(async () => {
  fal.up();
  ark.up();
  fal.flow = ['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED'];
  await tdb.db.deleteFrom('provider_circuits').execute();
});

const rowOf = (id: string) => jobRow(tdb.db, id);
const finished = (id: string) => jobFinished(tdb.db, id);
const ledger = (id: string) => jobLedger(tdb.db, id);

const arkCalls = (op: 'image' | 'submit', marker: string) => ark.requestsOf(op).filter((r) => JSON.stringify(r.json).includes(marker));

describe('seedream-4.5, seedance-1.5 and seedance-2.0 fail over from fal to BytePlus ModelArk', () => {
  test('seedream-4.5: fal answers 503 to everything; the job completes on Ark, charged once, one Ark call per image', async () => {
    fal.down(['submit', 'status', 'result', 'cancel'], unavailable);
    const t = await createTenant(tdb.db, 1000);
    const marker = '[seedream-fal-down]';
    const r = await api(gw.baseUrl, t.apiKey).post('/v1/images/generate', {
      project_id: t.projectId,
      prompt: `a paper boat on a pond ${marker}`,
      model: 'seedream-4.5',
      aspect_ratio: '9:16',
      count: 2,
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data.provider, 'fal', 'new jobs start on the first route');
    const id = r.body.data.id as string;
    const row = await finished(id);
    assert.equal(row.status, 'completed', JSON.stringify(row.error));
    assert.equal(row.outputs?.length, 2);
    const calls = arkCalls('image', marker);
    assert.equal(calls.length, 2, 'one Ark generation per image');
    assert.deepEqual(
      calls.map((c) => (c.json as { size: string; model: string }).size),
      ['1440x2560', '1440x2560'],
    );
    assert.equal((calls[0]!.json as { model: string }).model, 'seedream-4-5-251128');
    const price = 4 * 2;
    assert.deepEqual(await ledger(id), [['charge', -price]], 'charged once');
    assert.equal(await creditsOf(tdb.db, t), 1000 - price);
    const rec = await api(gw.baseUrl, t.apiKey).get(`/v1/images/${id}`);
    assert.equal(rec.status, 200, rec.text);
    assert.equal(rec.body.data.provider, 'byteplus');
    assert.equal(rec.body.data.provider_attempts?.[0]?.provider, 'fal');
  });

  test('seedance-1.5: fal answers 503 to everything; the text-to-video job completes on Ark, charged once, one Ark task', async () => {
    fal.down(['submit', 'status', 'result', 'cancel'], unavailable);
    const t = await createTenant(tdb.db, 1000);
    const marker = '[seedance-fal-down]';
    const r = await api(gw.baseUrl, t.apiKey).post('/v1/videos/generate', {
      project_id: t.projectId,
      prompt: `a lighthouse at dusk ${marker}`,
      model: 'seedance-1.5',
      aspect_ratio: '16:9',
      duration: 6,
      resolution: '720p',
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data.provider, 'fal');
    const id = r.body.data.id as string;
    const row = await finished(id);
    assert.equal(row.status, 'completed', JSON.stringify(row.error));
    assert.equal(row.outputs?.length, 1);
    const calls = arkCalls('submit', marker);
    assert.equal(calls.length, 1, 'exactly one task on Ark');
    const body = calls[0]!.json as Record<string, unknown>;
    assert.deepEqual([body.model, body.ratio, body.duration, body.resolution], ['seedance-1-5-pro-251215', '16:9', 6, '720p']);
    const price = 8 * 6;
    assert.deepEqual(await ledger(id), [['charge', -price]], 'charged once');
    assert.equal(await creditsOf(tdb.db, t), 1000 - price);
    const rec = await api(gw.baseUrl, t.apiKey).get(`/v1/videos/${id}`);
    assert.equal(rec.status, 200, rec.text);
    assert.equal(rec.body.data.provider, 'byteplus');
    assert.equal(rec.body.data.provider_attempts?.[0]?.provider, 'fal');
  });

  for (const [model, id] of [
    ['seedance-2.0', 'dreamina-seedance-2-0-260128'],
    ['seedance-2.0-fast', 'dreamina-seedance-2-0-fast-260128'],
  ] as const) {
    test(`${model}: fal answers 503 to everything; a 15 s text-to-video job completes on Ark as ${id}, charged once, one Ark task`, async () => {
      fal.down(['submit', 'status', 'result', 'cancel'], unavailable);
      const t = await createTenant(tdb.db, 1000);
      const marker = `[${model}-fal-down]`;
      const r = await api(gw.baseUrl, t.apiKey).post('/v1/videos/generate', {
        project_id: t.projectId,
        prompt: `a paper boat on a pond ${marker}`,
        model,
        aspect_ratio: '21:9',
        duration: 15,
        resolution: '480p',
      });
      assert.equal(r.status, 200, r.text);
      const jobId = r.body.data.id as string;
      const row = await finished(jobId);
      assert.equal(row.status, 'completed', JSON.stringify(row.error));
      const calls = arkCalls('submit', marker);
      assert.equal(calls.length, 1, 'exactly one task on Ark');
      const body = calls[0]!.json as Record<string, unknown>;
      assert.deepEqual([body.model, body.ratio, body.duration, body.resolution, body.generate_audio], [id, '21:9', 15, '480p', true]);
      const price = priceFor(catalog[model], { duration: 15 });
      assert.deepEqual(await ledger(jobId), [['charge', -price]], 'charged once');
      assert.equal(await creditsOf(tdb.db, t), 1000 - price);
      assert.equal((await api(gw.baseUrl, t.apiKey).get(`/v1/videos/${jobId}`)).body.data.provider, 'byteplus');
    });
  }

  test('seedance-1.5 with a seed and audio off: fal answers 503; the job moves to Ark with both, and its record shows them', async () => {
    fal.down(['submit', 'status', 'result', 'cancel'], unavailable);
    const t = await createTenant(tdb.db, 1000);
    const marker = '[seedance-controls]';
    const r = await api(gw.baseUrl, t.apiKey).post('/v1/videos/generate', {
      project_id: t.projectId,
      prompt: `a lighthouse at dusk ${marker}`,
      model: 'seedance-1.5',
      aspect_ratio: '16:9',
      duration: 5,
      resolution: '720p',
      seed: 424242,
      audio: false,
    });
    assert.equal(r.status, 200, r.text);
    const id = r.body.data.id as string;
    assert.deepEqual(
      ((await rowOf(id)).params as { routes?: { provider: string }[] }).routes?.map((x) => x.provider),
      ['fal', 'byteplus'],
      'both routes take a seed and the audio switch',
    );
    const falBody = fal.requestsOf('submit').find((c) => JSON.stringify(c.json).includes(marker));
    const row = await finished(id);
    assert.equal(row.status, 'completed', JSON.stringify(row.error));
    assert.equal(falBody, undefined, 'fal refused every submit');
    const [call] = arkCalls('submit', marker);
    const body = call!.json as Record<string, unknown>;
    assert.deepEqual([body.seed, body.generate_audio], [424242, false]);
    const rec = await api(gw.baseUrl, t.apiKey).get(`/v1/videos/${id}`);
    assert.equal(rec.body.data.provider, 'byteplus');
    assert.deepEqual([rec.body.data.seed, rec.body.data.audio, rec.body.data.negative_prompt], [424242, false, undefined]);
  });

  test('seedream-4.5 with a seed: Ark takes none, so the job has no failover route; it completes on fal with the seed', async () => {
    const t = await createTenant(tdb.db, 1000);
    const marker = '[seedream-seed]';
    const r = await api(gw.baseUrl, t.apiKey).post('/v1/images/generate', {
      project_id: t.projectId,
      prompt: `a paper boat on a pond ${marker}`,
      model: 'seedream-4.5',
      aspect_ratio: '1:1',
      count: 1,
      seed: 7,
    });
    assert.equal(r.status, 200, r.text);
    const id = r.body.data.id as string;
    assert.equal(((await rowOf(id)).params as { routes?: unknown }).routes, undefined, 'no failover to a route without a seed');
    const row = await finished(id);
    assert.equal(row.status, 'completed', JSON.stringify(row.error));
    const sent = fal.requestsOf('submit').filter((c) => JSON.stringify(c.json).includes(marker));
    assert.deepEqual(
      sent.map((c) => (c.json as { seed?: number }).seed),
      [7],
    );
    assert.equal(arkCalls('image', marker).length, 0);
    assert.equal((await api(gw.baseUrl, t.apiKey).get(`/v1/images/${id}`)).body.data.seed, 7);
    // The same request without a seed may fail over, as before.
    const plain = await api(gw.baseUrl, t.apiKey).post('/v1/images/generate', {
      project_id: t.projectId,
      prompt: 'a paper boat on a pond [seedream-no-seed]',
      model: 'seedream-4.5',
      aspect_ratio: '1:1',
      count: 1,
    });
    assert.equal(plain.status, 200, plain.text);
    const plainRoutes = ((await rowOf(plain.body.data.id as string)).params as { routes?: { provider: string }[] }).routes;
    assert.deepEqual(
      plainRoutes?.map((x) => x.provider),
      ['fal', 'byteplus'],
    );
    assert.equal('seed' in (await api(gw.baseUrl, t.apiKey).get(`/v1/images/${plain.body.data.id}`)).body.data, false, 'no seed asked: none on the record');
    await finished(plain.body.data.id as string);
  });

  test('a seedance-1.5 job Ark cannot take (1080p) is stored without failover routes and stays on fal', async () => {
    const t = await createTenant(tdb.db, 1000);
    const marker = '[seedance-1080p]';
    const r = await api(gw.baseUrl, t.apiKey).post('/v1/videos/generate', {
      project_id: t.projectId,
      prompt: `a lighthouse at dusk ${marker}`,
      model: 'seedance-1.5',
      aspect_ratio: '16:9',
      duration: 5,
      resolution: '1080p',
    });
    assert.equal(r.status, 200, r.text);
    const id = r.body.data.id as string;
    assert.equal(((await rowOf(id)).params as { routes?: unknown }).routes, undefined, 'no failover routes for a job only fal can take');
    const row = await finished(id);
    assert.equal(row.status, 'completed', JSON.stringify(row.error));
    assert.equal(arkCalls('submit', marker).length, 0);
  });
});
