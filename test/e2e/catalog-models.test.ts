// The newer catalog models, one job each over HTTP on the real stack (gateway, Temporal workflows,
// Postgres, MinIO) against local fakes speaking the providers' protocols: gpt-image-2 on OpenAI's
// Images API (sent its exact size per aspect ratio) and Kling 3.0 Turbo on fal's queue (the fake
// holds its body to the transcription of fal's page), and the models of the catalog refresh on fal's
// queue (the fake validates each body against fal's schema of the endpoint). Each job completes and is
// charged its catalog price once; a value the model's page does not list is a 400 that names the
// allowed values and charges nothing.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, testConfig, unhurriedLimits, type TestDatabase } from '../support/stack.js';
import { api, creditsOf, startService, type InProcessGateway as Gateway, type Service } from '../support/services.js';
import { startLiveFal, type LiveFal } from '../support/fake-providers/live-fal.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-providers/openai.js';
import { startFakeElevenLabs, type FakeElevenLabs } from '../support/fake-providers/elevenlabs.js';
import { jobFinished, jobLedger } from '../support/job-helpers.js';
import { catalog, priceFor } from '../../shared/catalog.js';
import { insertActor, insertUpload, insertVoice } from '../support/fixtures.js';
import { createStorage } from '../../shared/storage.js';

let suite: Service;
let tdb: TestDatabase;
let live: LiveFal;
let openai: FakeOpenAI;
let el: FakeElevenLabs;
let gw: Gateway;

before(async () => {
  [live, openai, el] = await Promise.all([startLiveFal(), startFakeOpenAI(), startFakeElevenLabs()]);
  suite = await startService(
    {
      ...live.env,
      OPENAI_API_KEY: openai.key,
      OPENAI_BASE_URL: openai.url,
      ...el.env,
      ...unhurriedLimits,
    },
    { roles: 'workflows,io,fetch,provider:openai,provider:fal,provider:elevenlabs' },
  );
  ({ tdb, gw } = suite);
});

after(async () => {
  await suite?.close();
  await Promise.all([live?.close(), openai?.close(), el?.close()]);
});

describe('newer catalog models, end to end against the fakes', () => {
  test('gpt-image-2: a 16:9 job is generated at 2560x1440 on OpenAI, completes, and is charged its price once', async () => {
    const t = await createTenant(tdb.db, 100);
    const c = api(gw.baseUrl, t.apiKey);
    const r = await c.post('/v1/images/generate', {
      project_id: t.projectId,
      prompt: 'a lighthouse at dusk',
      model: 'gpt-image-2',
      aspect_ratio: '16:9',
      count: 2,
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data.provider, 'openai');
    const price = priceFor(catalog['gpt-image-2'], { count: 2 });
    const row = await jobFinished(tdb.db, r.body.data.id);
    assert.equal(row.status, 'completed', JSON.stringify(row.error));
    const call = openai.requestsOf('images').at(-1)!.json as { model: string; size: string; n: number };
    assert.deepEqual([call.model, call.size, call.n], ['gpt-image-2', '2560x1440', 2]);
    assert.deepEqual(await jobLedger(tdb.db, row.id), [['charge', -price]]);
    assert.equal(await creditsOf(tdb.db, t), 100 - price);
  });

  for (const [model, size] of [
    ['gpt-image-2.5-sunburst', '2560x1440'],
    ['gpt-image-2.5-flare', '2560x1440'],
    ['gpt-image-2.6-sunburst', '1536x1024'],
    ['gpt-image-2.6-flare', '1536x1024'],
  ] as const) {
    test(`${model}: a 16:9 job is sent ${size} on OpenAI, completes, and is charged its price once; 4:3 is refused at create`, async () => {
      const t = await createTenant(tdb.db, 100);
      const c = api(gw.baseUrl, t.apiKey);
      const prompt = `a lighthouse at dawn (${model})`;
      const refused = await c.post('/v1/images/generate', { project_id: t.projectId, prompt, model, aspect_ratio: '4:3' });
      assert.equal(refused.status, 400, refused.text);
      assert.match(refused.body.error.message, /aspect_ratio/);
      assert.match(refused.body.error.message, /1:1.*9:16.*16:9/, refused.text);
      assert.equal(await creditsOf(tdb.db, t), 100);

      const r = await c.post('/v1/images/generate', { project_id: t.projectId, prompt, model, aspect_ratio: '16:9', count: 1 });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.data.provider, 'openai');
      const row = await jobFinished(tdb.db, r.body.data.id);
      assert.equal(row.status, 'completed', JSON.stringify(row.error));
      const call = openai.requestsOf('images').find((q) => (q.json as { prompt?: string }).prompt === prompt)!.json as { model: string; size: string };
      assert.deepEqual([call.model, call.size], [model, size]);
      const price = priceFor(catalog[model], { count: 1 });
      assert.deepEqual(await jobLedger(tdb.db, row.id), [['charge', -price]]);
      assert.equal(await creditsOf(tdb.db, t), 100 - price);
    });
  }

  test('kling-3.0-turbo: a 15 s job runs on fal text-to-video, completes, and is charged 15 s; 16 s is refused with nothing charged', async () => {
    const t = await createTenant(tdb.db, 1000);
    const c = api(gw.baseUrl, t.apiKey);
    const refused = await c.post('/v1/videos/generate', { project_id: t.projectId, prompt: 'a fox in the snow', model: 'kling-3.0-turbo', duration: 16 });
    assert.equal(refused.status, 400, refused.text);
    assert.equal(refused.body.error.code, 'invalid_request');
    assert.equal(await creditsOf(tdb.db, t), 1000);

    const r = await c.post('/v1/videos/generate', {
      project_id: t.projectId,
      prompt: 'a fox in the snow',
      model: 'kling-3.0-turbo',
      aspect_ratio: '1:1',
      duration: 15,
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data.provider, 'fal');
    const row = await jobFinished(tdb.db, r.body.data.id);
    assert.equal(row.status, 'completed', JSON.stringify(row.error));
    const submit = live.fal.requestsOf('submit').find((s) => (s.json as { prompt?: string }).prompt === 'a fox in the snow')!;
    assert.equal(submit.path, '/fal-ai/kling-video/v3/turbo/pro/text-to-video');
    assert.deepEqual(submit.json, { prompt: 'a fox in the snow', duration: '15', aspect_ratio: '1:1' });
    const price = priceFor(catalog['kling-3.0-turbo'], { duration: 15 });
    assert.equal(price, 15 * catalog['kling-3.0-turbo'].price.credits);
    assert.deepEqual(await jobLedger(tdb.db, row.id), [['charge', -price]]);
    assert.equal(await creditsOf(tdb.db, t), 1000 - price);
  });

  // The catalog refresh: each new model creates and completes on fal's fake at values of its own (not
  // another model's defaults), with the body fal's page documents; its own limits are refused at create.
  const refreshed = [
    {
      model: 'veo-3.1-lite',
      create: { aspect_ratio: '9:16', duration: 4, resolution: '1080p' },
      path: '/fal-ai/veo3.1/lite',
      body: { duration: '4s', resolution: '1080p', aspect_ratio: '9:16', generate_audio: true },
      refused: [
        { field: 'duration', value: 5, allowed: /4, 6, 8/ },
        { field: 'aspect_ratio', value: '1:1', allowed: /16:9.*9:16/ },
        { field: 'resolution', value: '480p', allowed: /720p.*1080p/ },
      ],
    },
    {
      model: 'kling-o3-4k',
      create: { aspect_ratio: '1:1', duration: 15 },
      path: '/fal-ai/kling-video/o3/4k/text-to-video',
      body: { duration: '15', aspect_ratio: '1:1' },
      refused: [
        { field: 'duration', value: 16, allowed: /3 to 15/ },
        { field: 'aspect_ratio', value: '4:3', allowed: /16:9.*9:16.*1:1/ },
        { field: 'resolution', value: '1080p', allowed: /2160p/ },
      ],
    },
    {
      model: 'seedance-2.0',
      create: { aspect_ratio: '21:9', duration: 15, resolution: '480p' },
      path: '/bytedance/seedance-2.0/text-to-video',
      body: { duration: '15', resolution: '480p', aspect_ratio: '21:9', generate_audio: true },
      refused: [
        { field: 'duration', value: 16, allowed: /4 to 15/ },
        { field: 'resolution', value: '1080p', allowed: /480p.*720p/ },
      ],
    },
    {
      model: 'seedance-2.0-fast',
      create: { aspect_ratio: '3:4', duration: 4 },
      path: '/bytedance/seedance-2.0/fast/text-to-video',
      body: { duration: '4', resolution: '720p', aspect_ratio: '3:4', generate_audio: true },
      refused: [
        { field: 'duration', value: 3, allowed: /4 to 15/ },
        { field: 'aspect_ratio', value: '2:3', allowed: /16:9.*21:9/ },
      ],
    },
  ] as const;

  test('talking-actor-v3: speaks with eleven_v3 (pcm_24000) on ElevenLabs, then lipsyncs on fal (two workflow steps), completes, and is charged its price once; a script past the lipsync cap is refused at create', async () => {
    const t = await createTenant(tdb.db, 1000);
    const c = api(gw.baseUrl, t.apiKey);
    const voice = await insertVoice(tdb.db, { providerVoiceId: [...el.voices][0]! });
    const actor = await insertActor(tdb.db, createStorage(testConfig(tdb.url)), { defaultVoiceId: voice });
    const body = { project_id: t.projectId, actor_id: actor, model: 'talking-actor-v3', aspect_ratio: '9:16' };

    const refused = await c.post('/v1/talking-actors/generate', { ...body, script: 'a'.repeat(404) });
    assert.equal(refused.status, 400, refused.text);
    assert.match(refused.body.error.message, /script: at most 403 characters at speed 1 here \(talking-actor-v3 lipsyncs at most 28\.8 seconds/);
    assert.equal(await creditsOf(tdb.db, t), 1000);

    const script = '[whispers] The lighthouse keeps its light on, even when nobody is at sea.';
    const r = await c.post('/v1/talking-actors/generate', { ...body, script });
    assert.equal(r.status, 200, r.text);
    const row = await jobFinished(tdb.db, r.body.data.id);
    assert.equal(row.status, 'completed', JSON.stringify(row.error));
    assert.equal(row.model, 'talking-actor-v3');
    const tts = el.requestsOf('tts').find((q) => (q.json as { text?: string }).text === script)!;
    assert.equal(tts.query.get('output_format'), 'pcm_24000');
    assert.equal((tts.json as { model_id: string }).model_id, 'eleven_v3');
    assert.equal(live.fal.requestsOf('submit').at(-1)!.path, '/fal-ai/infinitalk');
    const record = await c.get(`/v1/talking-actors/${row.id}`);
    assert.equal(record.body.data.model, 'talking-actor-v3');
    // fal makes the video (the route); ElevenLabs' speech is a step of its own in the job's workflow, before it.
    assert.equal(record.body.data.provider, 'fal');
    const events = (await gw.client.workflow.getHandle(row.id).fetchHistory()).events ?? [];
    const scheduled = events
      .map((e) => e.activityTaskScheduledEventAttributes)
      .filter((a) => a !== undefined && a !== null)
      .map((a) => `${a.activityType!.name!}@${a.taskQueue!.name!.replace(/^.*-provider-/, 'provider-')}`);
    assert.deepEqual(
      scheduled.filter((s) => /^(speak|submitAndCheck)@/.test(s)),
      ['speak@provider-elevenlabs', 'submitAndCheck@provider-fal'],
    );
    const price = priceFor(catalog['talking-actor-v3'], { script });
    assert.equal(price, 22);
    assert.deepEqual(await jobLedger(tdb.db, row.id), [['charge', -price]]);
    assert.equal(await creditsOf(tdb.db, t), 1000 - price);
  });

  test('seedream-5.0-lite: two 16:9 images on fal at 2560x1440, charged its price once; an aspect ratio it lacks is refused at create', async () => {
    const t = await createTenant(tdb.db, 100);
    const c = api(gw.baseUrl, t.apiKey);
    const prompt = 'a lantern on a snowy porch (seedream-5.0-lite)';
    const refused = await c.post('/v1/images/generate', { project_id: t.projectId, prompt, model: 'seedream-5.0-lite', aspect_ratio: '4:3' });
    assert.equal(refused.status, 400, refused.text);
    assert.match(refused.body.error.message, /aspect_ratio/);
    assert.match(refused.body.error.message, /1:1.*9:16.*16:9/, refused.text);
    assert.equal(await creditsOf(tdb.db, t), 100);

    const r = await c.post('/v1/images/generate', { project_id: t.projectId, prompt, model: 'seedream-5.0-lite', aspect_ratio: '16:9', count: 2 });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data.provider, 'fal');
    const row = await jobFinished(tdb.db, r.body.data.id);
    assert.equal(row.status, 'completed', JSON.stringify(row.error));
    const submit = live.fal.requestsOf('submit').find((s) => (s.json as { prompt?: string }).prompt === prompt)!;
    assert.equal(submit.path, '/fal-ai/bytedance/seedream/v5/lite/text-to-image');
    assert.deepEqual(submit.json, { prompt, num_images: 2, image_size: { width: 2560, height: 1440 } });
    const price = priceFor(catalog['seedream-5.0-lite'], { count: 2 });
    assert.equal(price, 6);
    assert.deepEqual(await jobLedger(tdb.db, row.id), [['charge', -price]]);
    assert.equal(await creditsOf(tdb.db, t), 100 - price);
  });

  test('seedance-2.0 with a start and an end frame runs on fal image-to-video, completes, and is charged its price once; two reference images are refused at create', async () => {
    const t = await createTenant(tdb.db, 1000);
    const c = api(gw.baseUrl, t.apiKey);
    const storage = createStorage(testConfig(tdb.url));
    const [start, end, other] = await Promise.all([1, 2, 3].map(() => insertUpload(tdb.db, storage, t, 'image')));
    const prompt = 'a paper boat sails from one frame to the next (seedance-2.0 image to video)';
    for (const model of ['seedance-2.0', 'seedance-2.0-fast']) {
      const refused = await c.post('/v1/videos/generate', { project_id: t.projectId, prompt, model, reference_file_ids: [start, other] });
      assert.equal(refused.status, 400, refused.text);
      assert.match(refused.body.error.message, /reference_file_ids/, refused.text);
    }
    const fast1080 = await c.post('/v1/videos/generate', {
      project_id: t.projectId,
      prompt,
      model: 'seedance-2.0-fast',
      start_frame_file_id: start,
      resolution: '1080p',
    });
    assert.equal(fast1080.status, 400, fast1080.text);
    assert.match(fast1080.body.error.message, /resolution.*480p.*720p/, fast1080.text);
    assert.equal(await creditsOf(tdb.db, t), 1000, 'a refused create charges nothing');

    const create = { aspect_ratio: '9:16', duration: 6, resolution: '480p' } as const;
    const r = await c.post('/v1/videos/generate', {
      project_id: t.projectId,
      prompt,
      model: 'seedance-2.0',
      start_frame_file_id: start,
      end_frame_file_id: end,
      ...create,
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data.provider, 'fal');
    const row = await jobFinished(tdb.db, r.body.data.id);
    assert.equal(row.status, 'completed', JSON.stringify(row.error));
    const submit = live.fal.requestsOf('submit').find((s) => (s.json as { prompt?: string }).prompt === prompt)!;
    assert.equal(submit.path, '/bytedance/seedance-2.0/image-to-video');
    const body = submit.json as Record<string, unknown>;
    assert.deepEqual(Object.keys(body).sort(), ['aspect_ratio', 'duration', 'end_image_url', 'generate_audio', 'image_url', 'prompt', 'resolution']);
    assert.deepEqual([body.duration, body.resolution, body.aspect_ratio, body.generate_audio], ['6', '480p', '9:16', true]);
    assert.notEqual(body.image_url, body.end_image_url, 'the start and end frames are sent as two images');
    const price = priceFor(catalog['seedance-2.0'], create);
    assert.deepEqual(await jobLedger(tdb.db, row.id), [['charge', -price]]);
    assert.equal(await creditsOf(tdb.db, t), 1000 - price);
  });

  test('grok-video-1.5 is image to video only: a job with a start frame runs on fal v1.5 image-to-video and is charged its price once; no first frame, 16 s, 1080p and an end frame are refused at create', async () => {
    const t = await createTenant(tdb.db, 1000);
    const c = api(gw.baseUrl, t.apiKey);
    const storage = createStorage(testConfig(tdb.url));
    const [start, end] = await Promise.all([1, 2].map(() => insertUpload(tdb.db, storage, t, 'image')));
    const prompt = 'the lantern flickers and the camera pushes in (grok-video-1.5)';
    const model = 'grok-video-1.5';
    for (const [extra, field, allowed] of [
      [{}, 'start_frame_file_id', /image to video only/],
      [{ start_frame_file_id: start, duration: 16 }, 'duration', /1 to 15/],
      [{ start_frame_file_id: start, resolution: '1080p' }, 'resolution', /480p.*720p/],
      [{ start_frame_file_id: start, end_frame_file_id: end }, 'end_frame_file_id', /no end frame/],
    ] as const) {
      const refused = await c.post('/v1/videos/generate', { project_id: t.projectId, prompt, model, ...extra });
      assert.equal(refused.status, 400, `${field}: ${refused.text}`);
      assert.equal(refused.body.error.code, 'invalid_request');
      assert.match(refused.body.error.message, new RegExp(field), refused.text);
      assert.match(refused.body.error.message, allowed, refused.text);
    }
    assert.equal(await creditsOf(tdb.db, t), 1000, 'a refused create charges nothing');

    const create = { duration: 15, resolution: '480p' } as const;
    const r = await c.post('/v1/videos/generate', { project_id: t.projectId, prompt, model, start_frame_file_id: start, ...create });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data.provider, 'fal');
    const row = await jobFinished(tdb.db, r.body.data.id);
    assert.equal(row.status, 'completed', JSON.stringify(row.error));
    const submit = live.fal.requestsOf('submit').find((s) => (s.json as { prompt?: string }).prompt === prompt)!;
    assert.equal(submit.path, '/xai/grok-imagine-video/v1.5/image-to-video');
    const body = submit.json as Record<string, unknown>;
    assert.deepEqual(Object.keys(body).sort(), ['duration', 'image_url', 'prompt', 'resolution']);
    assert.deepEqual([body.duration, body.resolution], [15, '480p']);
    assert.match(String(body.image_url), /^https?:\/\//);
    const price = priceFor(catalog[model], create);
    assert.equal(price, 15 * catalog[model].price.credits);
    assert.deepEqual(await jobLedger(tdb.db, row.id), [['charge', -price]]);
    assert.equal(await creditsOf(tdb.db, t), 1000 - price);
  });

  for (const m of refreshed) {
    test(`${m.model}: completes on fal at ${JSON.stringify(m.create)}, charged its price once; its own limits are refused at create`, async () => {
      const t = await createTenant(tdb.db, 1000);
      const c = api(gw.baseUrl, t.apiKey);
      const prompt = `a paper boat on a pond (${m.model})`;
      for (const r of m.refused) {
        const refused = await c.post('/v1/videos/generate', { project_id: t.projectId, prompt, model: m.model, [r.field]: r.value });
        assert.equal(refused.status, 400, `${r.field} ${r.value}: ${refused.text}`);
        assert.equal(refused.body.error.code, 'invalid_request');
        assert.match(refused.body.error.message, new RegExp(r.field), refused.text);
        assert.match(refused.body.error.message, r.allowed, refused.text);
      }
      assert.equal(await creditsOf(tdb.db, t), 1000, 'a refused create charges nothing');

      const r = await c.post('/v1/videos/generate', { project_id: t.projectId, prompt, model: m.model, ...m.create });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.data.provider, 'fal');
      const row = await jobFinished(tdb.db, r.body.data.id);
      assert.equal(row.status, 'completed', JSON.stringify(row.error));
      const submit = live.fal.requestsOf('submit').find((s) => (s.json as { prompt?: string }).prompt === prompt)!;
      assert.equal(submit.path, m.path);
      assert.deepEqual(submit.json, { prompt, ...m.body });
      const price = priceFor(catalog[m.model], m.create);
      assert.deepEqual(await jobLedger(tdb.db, row.id), [['charge', -price]]);
      assert.equal(await creditsOf(tdb.db, t), 1000 - price);
    });
  }
});
