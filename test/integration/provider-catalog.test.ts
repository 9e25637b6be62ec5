// Every catalog entry has a live route and a test: each model routes to an adapter whose request the
// provider's local server accepts, for every allowed aspect ratio, duration bound and resolution, and
// the job then completes. Also the registry's modes (local / live / auto) and the start-log lines.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { catalog, durationAllowed, routeFor, type ModelRoute } from '../../shared/catalog.js';
import { imageModels } from '../../kinds/image/models.js';
import { videoModels } from '../../kinds/video/models.js';
import { replaceActorModel } from '../../kinds/replace-actor/models.js';
import { talkingActorModels } from '../../kinds/talking-actor/models.js';
import { createProviders, describeRoutes, type ProvidersConfig } from '../../activities/providers/index.js';
import type { ProviderAdapter, ProviderRequest } from '../../activities/providers/types.js';
import { startFakeFal, type FakeFal } from '../support/fake-providers/fal.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-providers/openai.js';
import { startFakeElevenLabs, type FakeElevenLabs } from '../support/fake-providers/elevenlabs.js';
import { startFakeXai, type FakeXai } from '../support/fake-providers/xai.js';
import { startFakeGoogle, type FakeGoogle } from '../support/fake-providers/google.js';
import { startFakeByteplus, type FakeByteplus } from '../support/fake-providers/byteplus.js';
import { pollToEnd, providerContext, requestFor, stackStorage, storeInput, storeMotionVideo, testVoice } from '../support/fake-providers/context.js';

const localAdapter: ProviderAdapter = {
  name: 'local',
  submit: async () => ({ provider: 'local' }),
  poll: async () => ({ state: 'succeeded', outputs: [] }),
  cancel: async () => ({ confirmed: false }),
};

const noKeys: ProvidersConfig = {
  PROVIDERS_MODE: 'live',
  FAL_KEY: undefined,
  FAL_QUEUE_URL: 'http://127.0.0.1:9',
  FAL_API_URL: 'http://127.0.0.1:9',
  OPENAI_API_KEY: undefined,
  OPENAI_BASE_URL: 'http://127.0.0.1:9',
  ELEVENLABS_API_KEY: undefined,
  ELEVENLABS_BASE_URL: 'http://127.0.0.1:9',
  XAI_API_KEY: undefined,
  XAI_BASE_URL: 'http://127.0.0.1:9',
  GEMINI_API_KEY: undefined,
  GEMINI_BASE_URL: 'http://127.0.0.1:9',
  ARK_API_KEY: undefined,
  ARK_BASE_URL: 'http://127.0.0.1:9',
  DASHSCOPE_API_KEY: undefined,
  DASHSCOPE_BASE_URL: 'http://127.0.0.1:9',
  AZURE_OPENAI_API_KEY: undefined,
  AZURE_OPENAI_ENDPOINT: undefined,
  FAL_CDN_REQUIRES_KEY: false,
  ARK_SEEDREAM_MODEL: undefined,
  ARK_SEEDANCE_MODEL: undefined,
  AZURE_OPENAI_IMAGE_DEPLOYMENT: 'gpt-image-1.5',
  AZURE_OPENAI_API_VERSION: '2025-04-01-preview',
};

function durationsToTry(route: ModelRoute): (number | undefined)[] {
  const d = route.durations;
  if (!d) return [undefined];
  return 'values' in d ? [...d.values] : [d.min, d.max];
}

describe('routing catalog', () => {
  let fal: FakeFal, openai: FakeOpenAI, el: FakeElevenLabs, xai: FakeXai, google: FakeGoogle, ark: FakeByteplus;
  let config: ProvidersConfig;
  const storage = stackStorage();
  const ctx = providerContext(storage);

  before(async () => {
    [fal, openai, el, xai, google, ark] = await Promise.all([
      startFakeFal(),
      startFakeOpenAI(),
      startFakeElevenLabs(),
      startFakeXai(),
      startFakeGoogle(),
      startFakeByteplus(),
    ]);
    config = {
      ...noKeys,
      PROVIDERS_MODE: 'live',
      FAL_KEY: fal.key,
      FAL_QUEUE_URL: fal.url,
      OPENAI_API_KEY: openai.key,
      OPENAI_BASE_URL: openai.url,
      ...el.env,
      XAI_API_KEY: xai.key,
      XAI_BASE_URL: xai.url,
      GEMINI_API_KEY: google.key,
      GEMINI_BASE_URL: google.url,
      ARK_API_KEY: ark.key,
      ARK_BASE_URL: ark.url,
      DASHSCOPE_API_KEY: undefined,
      DASHSCOPE_BASE_URL: 'http://127.0.0.1:9',
      AZURE_OPENAI_API_KEY: undefined,
      AZURE_OPENAI_ENDPOINT: undefined,
    };
  });
  after(() => Promise.all([fal.close(), openai.close(), el.close(), xai.close(), google.close(), ark.close()]));

  test('the public model lists and the catalog agree, and every entry is well formed', () => {
    assert.deepEqual(new Set(Object.keys(catalog)), new Set([...imageModels, ...videoModels, replaceActorModel, ...talkingActorModels]));
    for (const route of Object.values(catalog) as ModelRoute[]) {
      assert.ok(route.source.length > 10, `${route.model} names its source`);
      assert.ok(route.aspectRatios.includes(route.defaultAspectRatio), `${route.model} default aspect ratio`);
      if (route.resolutions) assert.ok(route.resolutions.includes(route.defaultResolution!), `${route.model} default resolution`);
      if (route.durations) assert.ok(durationAllowed(route, route.defaultDuration!), `${route.model} default duration`);
      assert.ok(route.deadlineSeconds >= 60);
    }
    for (const m of imageModels) assert.deepEqual([...routeFor(m)!.aspectRatios].sort(), ['16:9', '1:1', '9:16']);
    assert.deepEqual(routeFor('replace-actor')!.durations, { min: 3, max: 30 });
    assert.equal(routeFor('replace-actor')!.defaultDuration, 30);
  });

  for (const [model, route] of Object.entries(catalog) as [string, ModelRoute][]) {
    test(`${model}: routes live to ${route.provider}, every allowed setting is accepted, and the job completes`, async () => {
      const providers = createProviders(config, localAdapter);
      assert.equal(providers.routeMode(model), 'live');
      const name = providers.providerFor(model)!;
      assert.equal(name, route.provider);
      const adapter = providers.adapterFor(name);

      const base: Partial<ProviderRequest> = {};
      if (route.kind === 'replace_actor') base.inputs = [await storeInput(storage, 'image'), await storeMotionVideo(storage)];
      if (route.kind === 'talking_actor')
        Object.assign(base, { script: 'Welcome to the demo.', voice: testVoice, inputs: [await storeInput(storage, 'actor_image')] });
      // An image-to-video-only model is never sent a job without its first frame (refused at create).
      if (route.takes?.startFrame === 'required') base.inputs = [await storeInput(storage, 'start_frame')];

      const settings: Partial<ProviderRequest>[] = [];
      for (const aspectRatio of route.aspectRatios)
        for (const duration of durationsToTry(route))
          for (const resolution of route.resolutions ?? [undefined])
            settings.push({ aspectRatio, duration, resolution, ...(route.kind === 'image' ? { count: 4 } : {}) });

      // A route with a speech step (a talking actor) is submitted with the speech that step stored, as the workflow does.
      const speaker = route.speech ? providers.adapterFor(route.speech.provider) : undefined;
      const withSpeech = async (req: ProviderRequest) => (speaker?.speak ? { ...req, speech: await speaker.speak(req, ctx) } : req);
      let last;
      for (const s of settings) {
        const ref = await adapter.submit(await withSpeech(requestFor(model, { ...base, ...s })), ctx);
        last = ref;
      }
      const end = (await pollToEnd(adapter, last!, ctx)).at(-1)!;
      assert.equal(end.state, 'succeeded', end.message);
      assert.ok(end.outputs!.length >= 1);
      if (route.kind === 'image') assert.equal(end.outputs!.length, 4);

      // Models with image-to-video endpoints accept a start frame too.
      if (route.secondaryModelIds?.imageToVideo) {
        const start = await storeInput(storage, 'start_frame');
        const ref = await adapter.submit(requestFor(model, { inputs: [start] }), ctx);
        assert.equal((await pollToEnd(adapter, ref, ctx)).at(-1)!.state, 'succeeded');
      }
    });
  }

  test('grok-video falls back to xAI when only XAI_API_KEY is set', async () => {
    const providers = createProviders({ ...config, FAL_KEY: undefined }, localAdapter);
    assert.equal(providers.providerFor('grok-video'), 'xai');
    const adapter = providers.adapterFor('xai');
    const ref = await adapter.submit(requestFor('grok-video'), ctx);
    assert.equal((await pollToEnd(adapter, ref, ctx)).at(-1)!.state, 'succeeded');
    assert.equal(providers.routeMode('nano-banana-2'), 'unavailable');
  });

  test('modes: local serves everything locally, live needs keys, auto falls back to local', () => {
    const local = createProviders({ ...config, PROVIDERS_MODE: 'local' }, localAdapter);
    for (const m of Object.keys(catalog)) {
      assert.equal(local.routeMode(m), 'local');
      assert.equal(local.providerFor(m), 'local');
    }
    assert.equal(local.adapterFor('local'), localAdapter);
    assert.deepEqual(local.liveRoutes(), []);

    const falOnly = createProviders({ ...noKeys, FAL_KEY: 'k-fal-1234' }, localAdapter);
    assert.equal(falOnly.providerFor('veo-3.1'), 'fal');
    assert.equal(falOnly.routeMode('gpt-image-1.5'), 'unavailable');
    assert.equal(falOnly.providerFor('gpt-image-1.5'), undefined);
    assert.equal(falOnly.routeMode('talking-actor'), 'unavailable', 'talking actor needs ElevenLabs too');
    assert.throws(() => falOnly.adapterFor('openai'), /OPENAI_API_KEY is not set/);

    const elOnly = createProviders({ ...noKeys, ELEVENLABS_API_KEY: 'k-el-1234' }, localAdapter);
    assert.equal(elOnly.routeMode('talking-actor'), 'unavailable', 'talking actor needs fal too');
    const both = createProviders({ ...noKeys, ELEVENLABS_API_KEY: 'k-el-1234', FAL_KEY: 'k-fal-1234' }, localAdapter);
    assert.equal(both.providerFor('talking-actor'), 'fal', "fal's lipsync is the route, ElevenLabs' speech its step");

    const auto = createProviders({ ...noKeys, PROVIDERS_MODE: 'auto', OPENAI_API_KEY: 'k-oa-1234' }, localAdapter);
    assert.equal(auto.providerFor('gpt-image-1.5'), 'openai');
    assert.equal(auto.providerFor('kling-3.0'), 'local');
    assert.deepEqual(auto.liveRoutes(), [
      'gpt-image-1.5',
      'gpt-image-2',
      'gpt-image-2.5-sunburst',
      'gpt-image-2.5-flare',
      'gpt-image-2.6-sunburst',
      'gpt-image-2.6-flare',
    ]);

    for (const p of [local, falOnly, auto]) {
      assert.equal(p.routeMode('dall-e-2'), 'unavailable');
      assert.equal(p.providerFor('dall-e-2'), undefined);
    }
  });

  test('the start-log lines say how each model is served and never contain a key', () => {
    const keys = { ...noKeys, FAL_KEY: 'secret-fal-key-999', OPENAI_API_KEY: 'secret-openai-key-999' };
    const lines = describeRoutes(keys);
    const text = lines.join('\n');
    assert.ok(!text.includes('secret-fal-key-999') && !text.includes('secret-openai-key-999'));
    assert.ok(lines.includes('route gpt-image-1.5: live via openai (gpt-image-1.5)'));
    assert.ok(lines.includes('route sora-2: live via fal (fal-ai/veo3.1/fast)'));
    assert.ok(lines.includes('route talking-actor: unavailable (provider key missing)'));
    assert.equal(lines.length, Object.keys(catalog).length);
    assert.ok(describeRoutes({ ...noKeys, XAI_API_KEY: 'x-1234' }).includes('route grok-video: live via xai (grok-imagine-video)'));
    assert.ok(describeRoutes({ ...keys, PROVIDERS_MODE: 'local' }).includes('route veo-3.1: local renderer'));
  });
});
