// gpt-image-2 jobs over HTTP on the real stack against the OpenAI fake, which echoes `size`,
// `output_format`, `quality` and `background` as OpenAI's ImagesResponse does: for each aspect ratio the
// job is sent its exact size (activities/providers/gpt-image-models.ts), the echoed size is the one the
// answer check expects, and the job completes, charged its price once.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, unhurriedLimits, type TestDatabase } from '../support/stack.js';
import { api, startService, type InProcessGateway as Gateway, type Service } from '../support/services.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-providers/openai.js';
import { jobFinished, jobLedger } from '../support/job-helpers.js';
import { catalog, priceFor } from '../../shared/catalog.js';
import { gptImage2Sizes } from '../../activities/providers/gpt-image-models.js';

let suite: Service;
let tdb: TestDatabase;
let openai: FakeOpenAI;
let gw: Gateway;

before(async () => {
  openai = await startFakeOpenAI();
  suite = await startService(
    {
      PROVIDERS_MODE: 'live',
      FAL_KEY: '',
      ELEVENLABS_API_KEY: '',
      XAI_API_KEY: '',
      GEMINI_API_KEY: '',
      ARK_API_KEY: '',
      DASHSCOPE_API_KEY: '',
      AZURE_OPENAI_API_KEY: '',
      OPENAI_API_KEY: openai.key,
      OPENAI_BASE_URL: openai.url,
      ...unhurriedLimits,
    },
    { roles: 'workflows,io,fetch,provider:openai' },
  );
  ({ tdb, gw } = suite);
});

after(async () => {
  await suite?.close();
  await openai?.close();
});

describe('gpt-image-2 jobs against the OpenAI fake', () => {
  for (const ratio of ['1:1', '16:9', '9:16'] as const) {
    test(`a ${ratio} job is sent ${gptImage2Sizes[ratio]}, OpenAI echoes it, and the job completes charged once`, async () => {
      const t = await createTenant(tdb.db, 100);
      const c = api(gw.baseUrl, t.apiKey);
      const before = openai.requestsOf('images').length;
      const r = await c.post('/v1/images/generate', {
        project_id: t.projectId,
        prompt: 'a lighthouse at dusk',
        model: 'gpt-image-2',
        aspect_ratio: ratio,
        count: 1,
      });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.data.provider, 'openai');
      const row = await jobFinished(tdb.db, r.body.data.id);
      assert.equal(row.status, 'completed', JSON.stringify(row.error));
      const calls = openai.requestsOf('images').slice(before);
      assert.equal(calls.length, 1, 'one paid generation');
      const sent = calls[0]!.json as { model: string; size: string; output_format: string };
      assert.deepEqual([sent.model, sent.size, sent.output_format], ['gpt-image-2', gptImage2Sizes[ratio], 'png']);
      assert.equal(openai.lastSize, gptImage2Sizes[ratio]);
      assert.deepEqual(await jobLedger(tdb.db, row.id), [['charge', -priceFor(catalog['gpt-image-2'], { count: 1 })]]);
    });
  }

  test('the fake answers as ImagesResponse documents: size, output_format, quality and background echoed', async () => {
    const res = await fetch(`${openai.url}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${openai.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-image-2', prompt: 'a cat', size: '2560x1440', quality: 'high', background: 'auto' }),
    });
    assert.equal(res.status, 200);
    const body = (await res.json()) as Record<string, unknown>;
    assert.deepEqual([body.size, body.output_format, body.quality, body.background], ['2560x1440', 'png', 'high', 'opaque']);
  });
});
