// replace-actor's second route on the real stack: fal's queue first, then Alibaba Cloud Model Studio
// (DashScope, wan2.2-animate-mix), both local fakes speaking their providers' protocols. With fal
// answering 503 to every call, a replace-actor job from uploaded files completes on Alibaba, charged
// once, with one Alibaba submit whose inputs are presigned URLs of our store that DashScope downloads.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, type TestDatabase } from '../support/stack.js';
import { api, creditsOf, type InProcessGateway as Gateway } from '../support/services.js';
import { insertUpload } from '../support/fixtures.js';
import { startFailoverStack, type FailoverStack } from '../support/failover-stack.js';
import { jobFinished, jobLedger, jobRow } from '../support/job-helpers.js';
import type { LiveFal } from '../support/fake-providers/live-fal.js';
import type { FakeAlibaba } from '../support/fake-providers/alibaba.js';
import { json } from '../support/fake-providers/server.js';

let stack: FailoverStack<'alibaba'>;
let tdb: TestDatabase;
let live: LiveFal;
let alibaba: FakeAlibaba;
let gw: Gateway;

before(async () => {
  stack = await startFailoverStack({
    secondary: 'alibaba',
    roles: 'workflows,io,fetch,provider:fal,provider:alibaba',
    env: { PROVIDER_BREAKER_OPEN_MS: '3600000' },
  });
  ({ tdb, live, secondary: alibaba, gw } = stack);
});

after(() => stack?.close());

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
    const stored = (await jobRow(tdb.db, id)).params as { provider?: string; routes?: { provider: string }[] };
    assert.equal(stored.provider, 'fal', 'new jobs start on the first route');
    assert.deepEqual(
      stored.routes?.map((r) => r.provider),
      ['fal', 'alibaba'],
    );

    const row = await jobFinished(tdb.db, id);
    assert.equal(row.status, 'completed', JSON.stringify(row.error));
    assert.equal(row.outputs?.length, 1);

    const submits = alibaba.requestsOf('submit');
    assert.equal(submits.length, 1, 'exactly one submit on Alibaba');
    const body = submits[0]!.json as { model: string; input: { image_url: string; video_url: string }; parameters: unknown };
    assert.equal(body.model, 'wan2.2-animate-mix');
    assert.deepEqual(body.parameters, { mode: 'wan-std' });
    assert.equal(submits[0]!.headers['x-dashscope-async'], 'enable');
    for (const url of [body.input.image_url, body.input.video_url])
      assert.ok(
        alibaba.fetchedInputs.some((f) => f.url === url && f.bytes > 0),
        'DashScope downloaded the input',
      );

    const price = 8 * duration;
    assert.deepEqual(await jobLedger(tdb.db, id), [['charge', -price]], 'charged once');
    assert.equal(await creditsOf(tdb.db, t), 1000 - price);
    const r = await api(gw.baseUrl, t.apiKey).get(`/v1/replace-actors/generations/${id}`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data.provider, 'alibaba');
    assert.deepEqual(
      r.body.data.provider_attempts?.map((a: { provider: string }) => a.provider),
      ['fal'],
    );
  });
});
