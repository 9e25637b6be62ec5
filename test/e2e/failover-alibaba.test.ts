// replace-actor's second route on the real stack: fal's queue first, then Alibaba Cloud Model Studio
// (DashScope, wan2.2-animate-mix), both local fakes speaking their providers' protocols. With fal
// answering 503 to every call, a replace-actor job from uploaded files completes on Alibaba, charged
// once, with one Alibaba submit whose inputs are presigned URLs of our store that DashScope downloads.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, createTestDatabase, testConfig, waitFor, type TestDatabase } from '../support/stack.js';
import { api, creditsOf, startGateway, startWorkers, type InProcessGateway as Gateway, type Workers } from '../support/services.js';
import { insertUpload } from '../support/fixtures.js';
import { startLiveFal, type LiveFal } from '../support/fake-providers/live-fal.js';
import { startFakeAlibaba, type FakeAlibaba } from '../support/fake-providers/alibaba.js';
import { json } from '../support/fake-providers/server.js';
import { ledgerForJob } from '../../db/repos/jobs.js';

let tdb: TestDatabase;
let live: LiveFal;
let alibaba: FakeAlibaba;
let gw: Gateway;
let workers: Workers;

before(async () => {
  tdb = await createTestDatabase();
  live = await startLiveFal();
  alibaba = await startFakeAlibaba();
  alibaba.filesBaseUrl = live.cdn.origin;
  const config = testConfig(tdb.url, {
    ...live.env,
    DASHSCOPE_API_KEY: alibaba.key,
    DASHSCOPE_BASE_URL: alibaba.url,
    RATE_LIMIT_GENERATE_PER_MIN: '1000',
    RATE_LIMIT_POLL_PER_MIN: '100000',
    RECONCILE_INTERVAL_MS: '3600000',
    PROVIDER_FAILOVER_ATTEMPTS: '2',
    PROVIDER_BREAKER_OPEN_MS: '3600000',
  });
  gw = await startGateway(config, tdb.db);
  workers = await startWorkers(config, tdb.db, 'workflows,io,fetch,provider:fal,provider:alibaba');
});

after(async () => {
  await workers?.stop();
  await gw?.close();
  await Promise.all([live?.close(), alibaba?.close()]);
  await tdb?.drop();
});

describe('replace-actor fails over from fal to Alibaba (Model Studio)', () => {
  test('fal answers 503 to everything: the job completes on Alibaba, charged once, with one Alibaba submit', async () => {
    live.fal.down(['submit', 'status', 'result', 'cancel'], json(503, { detail: 'Service Unavailable' }));
    const t = await createTenant(tdb.db, 1000);
    const duration = 3;
    const created = await api(gw.baseUrl, t.apiKey).post('/v1/replace-actors/generations', {
      project_id: t.projectId,
      image_file_id: await insertUpload(tdb.db, gw.storage, t, 'image'),
      video_file_id: await insertUpload(tdb.db, gw.storage, t, 'video'),
      duration,
    });
    assert.equal(created.status, 200, created.text);
    const id = created.body.data.id as string;
    const stored = (await tdb.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow()).params as { provider?: string; routes?: { provider: string }[] };
    assert.equal(stored.provider, 'fal', 'new jobs start on the first route');
    assert.deepEqual(stored.routes?.map((r) => r.provider), ['fal', 'alibaba']);

    const row = await waitFor(`${id} to finish`, async () => {
      const r = await tdb.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      return r.status === 'completed' || r.status === 'failed' ? r : undefined;
    }, 180_000, 200);
    assert.equal(row.status, 'completed', JSON.stringify(row.error));
    assert.equal(row.outputs?.length, 1);

    const submits = alibaba.requestsOf('submit');
    assert.equal(submits.length, 1, 'exactly one submit on Alibaba');
    const body = submits[0]!.json as { model: string; input: { image_url: string; video_url: string }; parameters: unknown };
    assert.equal(body.model, 'wan2.2-animate-mix');
    assert.deepEqual(body.parameters, { mode: 'wan-std' });
    assert.equal(submits[0]!.headers['x-dashscope-async'], 'enable');
    for (const url of [body.input.image_url, body.input.video_url]) assert.ok(alibaba.fetchedInputs.some((f) => f.url === url && f.bytes > 0), 'DashScope downloaded the input');

    const price = 8 * duration;
    assert.deepEqual((await ledgerForJob(tdb.db, id)).map((l) => [l.reason, Number(l.delta)]), [['charge', -price]], 'charged once');
    assert.equal(await creditsOf(tdb.db, t), 1000 - price);
    const r = await api(gw.baseUrl, t.apiKey).get(`/v1/replace-actors/generations/${id}`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data.provider, 'alibaba');
    assert.deepEqual(r.body.data.provider_attempts?.map((a: { provider: string }) => a.provider), ['fal']);
  });
});
