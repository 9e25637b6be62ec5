// gpt-image-1.5's second route on the real stack: OpenAI's Images API first, then Azure OpenAI (a
// gpt-image-1.5 deployment in Microsoft Foundry), both local fakes speaking their providers' protocols.
// With OpenAI answering 503 to every call, an image job completes on Azure, charged once, with one Azure
// generation; a prompt Azure's content filter refuses fails the job without moving it anywhere else.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, unhurriedLimits, type TestDatabase } from '../support/stack.js';
import { api, creditsOf, startService, type InProcessGateway as Gateway, type Service } from '../support/services.js';
import { startLiveFal, type LiveFal } from '../support/fake-providers/live-fal.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-providers/openai.js';
import { startFakeAzure, type FakeAzure } from '../support/fake-providers/azure.js';
import { json } from '../support/fake-providers/server.js';
import { jobFinished, jobLedger } from '../support/job-helpers.js';

let suite: Service;
let tdb: TestDatabase;
let live: LiveFal;
let openai: FakeOpenAI;
let azure: FakeAzure;
let gw: Gateway;

before(async () => {
  [live, openai, azure] = await Promise.all([startLiveFal(), startFakeOpenAI(), startFakeAzure()]);
  suite = await startService(
    {
      ...live.env,
      OPENAI_API_KEY: openai.key,
      OPENAI_BASE_URL: openai.url,
      AZURE_OPENAI_API_KEY: azure.key,
      AZURE_OPENAI_ENDPOINT: azure.url,
      ...unhurriedLimits,
      PROVIDER_FAILOVER_BUDGET_MS: '1500',
      PROVIDER_BREAKER_OPEN_MS: '3600000',
    },
    {
      roles: 'workflows,io,fetch,provider:openai,provider:azure',
      // OpenAI shut gpt-image-1.5 down on 2026-12-01 (its catalog retiresAt): the gateway's clock stands
      // the day before, while both of its routes still served it.
      gateway: { clock: () => new Date('2026-11-30T12:00:00Z') },
    },
  );
  ({ tdb, gw } = suite);
});

after(async () => {
  await suite?.close();
  await Promise.all([live?.close(), openai?.close(), azure?.close()]);
});

const finished = (id: string) => jobFinished(tdb.db, id);

const azureCalls = (marker: string) => azure.requestsOf('images').filter((c) => (c.json as { prompt?: string } | undefined)?.prompt?.includes(marker));

describe('gpt-image-1.5 fails over from OpenAI to Azure OpenAI', () => {
  test('OpenAI answers 503 to everything: the job completes on Azure, charged once, with one Azure generation', async () => {
    openai.down(['images'], json(503, { error: { message: 'The engine is currently overloaded.', type: 'server_error', param: null, code: null } }));
    try {
      const t = await createTenant(tdb.db, 1000);
      const marker = '[gpt-image-openai-down]';
      const r = await api(gw.baseUrl, t.apiKey).post('/v1/images/generate', {
        project_id: t.projectId,
        prompt: `a kite over the dunes ${marker}`,
        model: 'gpt-image-1.5',
        aspect_ratio: '16:9',
        count: 2,
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.data.provider, 'openai', 'new jobs start on the first route');
      const id = r.body.data.id as string;
      const row = await finished(id);
      assert.equal(row.status, 'completed', JSON.stringify(row.error));
      assert.equal(row.outputs?.length, 2);

      const calls = azureCalls(marker);
      assert.equal(calls.length, 1, 'one Azure generation for both images');
      assert.deepEqual(calls[0]!.json, { model: 'gpt-image-1.5', prompt: `a kite over the dunes ${marker}`, n: 2, size: '1536x1024', output_format: 'png' });
      assert.equal(calls[0]!.headers['api-key'], azure.key);

      const price = 6 * 2;
      assert.deepEqual(await jobLedger(tdb.db, id), [['charge', -price]], 'charged once');
      assert.equal(await creditsOf(tdb.db, t), 1000 - price);
      const rec = await api(gw.baseUrl, t.apiKey).get(`/v1/images/${id}`);
      assert.equal(rec.status, 200, rec.text);
      assert.equal(rec.body.data.provider, 'azure');
      assert.deepEqual(
        rec.body.data.provider_attempts?.map((a: { provider: string }) => a.provider),
        ['openai'],
      );
    } finally {
      openai.up();
    }
  });

  test("a prompt Azure's content filter refuses fails the job there: no failover back, nothing charged", async () => {
    const t = await createTenant(tdb.db, 1000);
    const marker = '[gpt-image-azure-filter]';
    // OpenAI is out of the way for this job (503, or its circuit already open), so it reaches Azure, which refuses it.
    openai.down(['images'], json(503, { error: { message: 'The engine is currently overloaded.', type: 'server_error', param: null, code: null } }));
    try {
      const r = await api(gw.baseUrl, t.apiKey).post('/v1/images/generate', {
        project_id: t.projectId,
        prompt: `something forbidden ${marker}`,
        model: 'gpt-image-1.5',
        aspect_ratio: '1:1',
        count: 1,
      });
      assert.equal(r.status, 200, r.text);
      const id = r.body.data.id as string;
      const row = await finished(id);
      assert.equal(row.status, 'failed');
      assert.match(JSON.stringify(row.error), /content filter/);
      assert.equal(azureCalls(marker).length, 1, 'a content-filter refusal is not retried');
      assert.equal(await creditsOf(tdb.db, t), 1000, 'a failed job is not charged');
    } finally {
      openai.up();
    }
  });
});
