// The BytePlus, Alibaba and xAI adapters' bodies, for representative jobs (every aspect ratio,
// resolution and duration the catalog lets each route take, with and without image inputs), run
// through the fakes' own contracts (test/support/fake-providers/contracts/*), which are transcribed
// from the providers' SDKs apart from the adapters' contracts (providers/<name>/contract.ts): a
// body both accept is one neither transcription got wrong alone. Each fake contract also refuses a
// body with a misspelled field, so the check can fail.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createByteplusAdapter } from '../../providers/byteplus/adapter.js';
import { createAlibabaAdapter } from '../../providers/alibaba/adapter.js';
import { createXaiAdapter } from '../../providers/xai/adapter.js';
import { arkImageGenerationRequest, arkVideoTaskRequest } from '../../providers/byteplus/contract.js';
import { alibabaAnimateMixRequest } from '../../providers/alibaba/contract.js';
import { xaiVideoGenerationRequest } from '../../providers/xai/contract.js';
import { arkFakeImageRequest, arkFakeVideoTaskRequest } from '../support/fake-providers/contracts/byteplus.js';
import { dashscopeFakeAnimateMixRequest } from '../support/fake-providers/contracts/alibaba.js';
import { xaiFakeVideoGenerationRequest } from '../support/fake-providers/contracts/xai.js';
import { routeFor } from '../../shared/catalog.js';
import type { LiveProviderName } from '../../shared/catalog.js';
import { startFakeByteplus, type FakeByteplus } from '../support/fake-providers/byteplus.js';
import { startFakeAlibaba, type FakeAlibaba } from '../support/fake-providers/alibaba.js';
import { startFakeXai, type FakeXai } from '../support/fake-providers/xai.js';
import { providerContext, requestFor, stackStorage, storeInput, storeMotionVideo } from '../support/fake-providers/context.js';
import type { FakeServer } from '../support/fake-providers/server.js';
import type { z } from 'zod';

const storage = stackStorage();
const ctx = providerContext(storage);

/** The route of `model` on `provider`, and the values the catalog lets a job there ask for. */
function settings(model: string, provider: LiveProviderName) {
  const route = routeFor(model)!;
  const alt = route.alternates?.find((a) => a.provider === provider);
  assert.ok(alt, `${model} has a ${provider} route`);
  const a = alt.accepts ?? {};
  const durations =
    a.durations ??
    (route.durations && 'values' in route.durations ? route.durations.values : route.durations ? [route.durations.min, route.durations.max] : [undefined]);
  return {
    providerModelId: alt.providerModelId,
    aspectRatios: a.aspectRatios ?? route.aspectRatios,
    resolutions: a.resolutions ?? route.resolutions ?? [undefined],
    durations,
  };
}

/** The last submit body the fake received, checked against both contracts. */
function bothAccept(fake: FakeServer, op: string, adapterContract: z.ZodType, fakeContract: z.ZodType, what: string) {
  const body = fake.requestsOf(op).at(-1)!.json;
  const ours = adapterContract.safeParse(body);
  const theirs = fakeContract.safeParse(body);
  assert.ok(ours.success, `${what}: the adapter's contract refuses its own body: ${JSON.stringify(ours.error?.issues[0])}`);
  assert.ok(theirs.success, `${what}: the fake's contract refuses the adapter's body: ${JSON.stringify(theirs.error?.issues[0])}`);
  return body as Record<string, unknown>;
}

describe("the adapters' bodies pass the fakes' independently transcribed contracts", () => {
  let ark: FakeByteplus;
  let dashscope: FakeAlibaba;
  let xai: FakeXai;

  before(async () => {
    [ark, dashscope, xai] = await Promise.all([startFakeByteplus(), startFakeAlibaba(), startFakeXai()]);
  });
  after(async () => {
    await Promise.all([ark.close(), dashscope.close(), xai.close()]);
  });

  test('BytePlus: seedream (with and without reference images) and seedance at every setting the route takes', async () => {
    const adapter = createByteplusAdapter({ key: ark.key, baseUrl: ark.url, timeoutMs: 5000 });
    const image = settings('seedream-4.5', 'byteplus');
    const ref = await storeInput(storage, 'reference');
    for (const aspectRatio of image.aspectRatios)
      for (const inputs of [[], [ref]]) {
        await adapter.submit(requestFor('seedream-4.5', { providerModelId: image.providerModelId, aspectRatio, inputs }), ctx);
        bothAccept(ark, 'image', arkImageGenerationRequest, arkFakeImageRequest, `seedream ${aspectRatio} with ${inputs.length} reference(s)`);
      }
    const video = settings('seedance-1.5', 'byteplus');
    for (const aspectRatio of video.aspectRatios)
      for (const resolution of video.resolutions)
        for (const duration of video.durations) {
          await adapter.submit(requestFor('seedance-1.5', { providerModelId: video.providerModelId, aspectRatio, resolution, duration }), ctx);
          bothAccept(ark, 'submit', arkVideoTaskRequest, arkFakeVideoTaskRequest, `seedance ${aspectRatio} ${resolution} ${duration}s`);
        }
    const typo = arkFakeVideoTaskRequest.safeParse({ model: 'm', content: [{ type: 'text', text: 'a fox' }], aspect_ratio: '16:9' });
    assert.equal(typo.success, false, "the fake's contract refuses a field Ark does not have");
  });

  test('Alibaba: replace-actor at every aspect ratio the route takes', async () => {
    const adapter = createAlibabaAdapter({ key: dashscope.key, baseUrl: dashscope.url, timeoutMs: 5000 });
    const s = settings('replace-actor', 'alibaba');
    const inputs = [await storeInput(storage, 'image'), await storeMotionVideo(storage)];
    for (const aspectRatio of s.aspectRatios) {
      await adapter.submit(requestFor('replace-actor', { providerModelId: s.providerModelId, aspectRatio, duration: 3, inputs }), ctx);
      const body = bothAccept(dashscope, 'submit', alibabaAnimateMixRequest, dashscopeFakeAnimateMixRequest, `replace-actor ${aspectRatio}`);
      assert.deepEqual(body.parameters, { mode: 'wan-std' });
    }
    const typo = dashscopeFakeAnimateMixRequest.safeParse({
      model: 'wan2.2-animate-mix',
      input: { image_url: 'https://a.test/i.png', video_url: 'https://a.test/v.mp4' },
      parameters: { mode: 'wan-std', resolution: '720p' },
    });
    assert.equal(typo.success, false, "the fake's contract refuses a parameter the model does not document");
  });

  test('xAI: grok-video at every aspect ratio, resolution and duration bound the route takes, with and without a first frame', async () => {
    const adapter = createXaiAdapter({ key: xai.key, baseUrl: xai.url, timeoutMs: 5000 });
    const s = settings('grok-video', 'xai');
    const start = await storeInput(storage, 'start_frame');
    for (const aspectRatio of s.aspectRatios)
      for (const resolution of s.resolutions)
        for (const duration of s.durations)
          for (const inputs of [[], [start]]) {
            await adapter.submit(requestFor('grok-video', { providerModelId: s.providerModelId, aspectRatio, resolution, duration, inputs }), ctx);
            const body = bothAccept(xai, 'submit', xaiVideoGenerationRequest, xaiFakeVideoGenerationRequest, `grok ${aspectRatio} ${resolution} ${duration}s`);
            assert.equal(body.aspect_ratio, aspectRatio);
          }
    const typo = xaiFakeVideoGenerationRequest.safeParse({ prompt: 'a fox', image: { image_url: 'https://a.test/i.png' } });
    assert.equal(typo.success, false, "the fake's contract refuses the gRPC spelling of the image's URL");
  });
});
