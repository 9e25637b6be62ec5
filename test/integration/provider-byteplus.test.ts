// Contract tests of the BytePlus ModelArk adapter, the second route of seedream-4.5 and seedance-1.5,
// against a local server speaking Ark's protocol (providers/byteplus/contract.ts): the exact request bodies,
// synchronous images stored from base64, task polling queued → running → final, cancel, and how
// errors are classed (outage and rate limit: retried, then failover; credentials, quota and a missing
// model: our account, failover at once; sensitive content and invalid parameters: final).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { arkOrigin, createByteplusAdapter } from '../../providers/byteplus/adapter.js';
import { ProviderError } from '../../activities/providers/types.js';
import { routeFor, requestRefusal } from '../../shared/catalog.js';
import { resolveJobRoute } from '../../shared/routing.js';
import { startFakeByteplus, type FakeByteplus } from '../support/fake-providers/byteplus.js';
import { errorOf, pollToEnd, providerContext, requestFor, stackStorage, storeInput } from '../support/fake-providers/context.js';
import { tinyPng } from '../support/fake-providers/server.js';
import { liveKeys } from '../support/provider-keys.js';

describe('BytePlus ModelArk adapter', () => {
  let fake: FakeByteplus;
  const storage = stackStorage();
  const ctx = providerContext(storage);
  let ark: ReturnType<typeof createByteplusAdapter>;
  const seedream = (over: Parameters<typeof requestFor>[1] = {}) => requestFor('seedream-4.5', { providerModelId: 'seedream-4-5-251128', ...over });
  const seedance = (over: Parameters<typeof requestFor>[1] = {}) => requestFor('seedance-1.5', { providerModelId: 'seedance-1-5-pro-251215', ...over });

  before(async () => {
    fake = await startFakeByteplus();
    ark = createByteplusAdapter({ key: fake.key, baseUrl: fake.url, timeoutMs: 2000, imageTimeoutMs: 2000 });
  });
  after(() => fake.close());

  test('seedream: one call per image with the Bearer key and the documented body; the base64 images land in our store', async () => {
    const req = seedream({ aspectRatio: '16:9', count: 2 });
    const before = fake.requestsOf('image').length;
    const ref = await ark.submit(req, ctx);
    const calls = fake.requestsOf('image').slice(before);
    assert.equal(calls.length, 2, 'one generation per image');
    assert.equal(calls[0]!.headers.authorization, `Bearer ${fake.key}`);
    assert.deepEqual(calls[0]!.json, {
      model: 'seedream-4-5-251128',
      prompt: 'A lighthouse on a cliff at dawn, waves below',
      size: '2560x1440',
      sequential_image_generation: 'disabled',
      response_format: 'b64_json',
      watermark: false,
    });
    const end = await ark.poll(ref, ctx);
    assert.equal(end.state, 'succeeded');
    assert.equal(end.outputs!.length, 2);
    for (const [i, out] of end.outputs!.entries()) {
      assert.match(out.key!, new RegExp(`/${req.jobId}/(.+/)?output-${i + 1}\\.png$`));
      assert.equal(out.contentType, 'image/png');
      assert.equal(out.size, tinyPng.length);
      assert.equal((await storage.stat(out.key!))?.size, tinyPng.length);
    }

    // A retried submit reuses what an earlier attempt stored: no second paid generation.
    const again = await ark.submit(req, ctx);
    assert.equal(fake.requestsOf('image').length, before + 2);
    assert.deepEqual((await ark.poll(again, ctx)).outputs, end.outputs);
  });

  test('seedream: sizes for every aspect ratio meet the 2560×1440 pixel minimum; reference images go as `image`', async () => {
    for (const [aspectRatio, size] of [
      ['1:1', '2048x2048'],
      ['9:16', '1440x2560'],
    ] as const) {
      await ark.submit(seedream({ aspectRatio }), ctx);
      assert.equal((fake.requestsOf('image').at(-1)!.json as { size: string }).size, size);
    }
    const refs = [await storeInput(storage, 'reference'), await storeInput(storage, 'reference')];
    await ark.submit(seedream({ inputs: refs }), ctx);
    const image = (fake.requestsOf('image').at(-1)!.json as { image: string[] }).image;
    assert.equal(image.length, 2);
    assert.ok(
      image.every((u) => /^https?:\/\//.test(u)),
      'presigned URLs of our stored inputs',
    );
    await ark.submit(seedream({ inputs: [refs[0]!] }), ctx);
    assert.equal(typeof (fake.requestsOf('image').at(-1)!.json as { image: unknown }).image, 'string', 'one reference image is a plain string');
  });

  test('seedance: creates a text-to-video task with top-level ratio/duration/resolution, polls queued → running → succeeded', async () => {
    const ref = await ark.submit(seedance({ aspectRatio: '9:16', duration: 7, resolution: '480p' }), ctx);
    const call = fake.requestsOf('submit').at(-1)!;
    assert.equal(call.path, '/api/v3/contents/generations/tasks');
    assert.equal(call.headers.authorization, `Bearer ${fake.key}`);
    assert.deepEqual(call.json, {
      model: 'seedance-1-5-pro-251215',
      content: [{ type: 'text', text: 'A lighthouse on a cliff at dawn, waves below' }],
      ratio: '9:16',
      duration: 7,
      resolution: '480p',
      generate_audio: true,
      watermark: false,
    });
    assert.match(String(ref.taskId), /^cgt-/);
    const seen = await pollToEnd(ark, ref, ctx);
    assert.deepEqual(
      seen.map((s) => s.state),
      ['queued', 'running', 'succeeded'],
    );
    assert.equal(fake.requestsOf('status').at(-1)!.path, `/api/v3/contents/generations/tasks/${String(ref.taskId)}`);
    const out = seen.at(-1)!.outputs![0]!;
    assert.equal(out.url, `${fake.url}/files/${String(ref.taskId)}.mp4`);
    assert.equal(ark.outputHeaders, undefined, 'the signed video URL is fetched without our key');
  });

  test("seedance 2.0 and 2.0 fast: a 15 s text-to-video task goes to Ark with the model ids of BytePlus's ark-cli and completes; 16 s is refused by the fake as by Ark", async () => {
    for (const [model, id] of [
      ['seedance-2.0', 'dreamina-seedance-2-0-260128'],
      ['seedance-2.0-fast', 'dreamina-seedance-2-0-fast-260128'],
    ] as const) {
      const providerModelId = routeFor(model)!.alternates!.find((a) => a.provider === 'byteplus')!.providerModelId;
      assert.equal(providerModelId, id);
      const ref = await ark.submit(requestFor(model, { providerModelId, aspectRatio: '21:9', duration: 15, resolution: '480p' }), ctx);
      assert.deepEqual(fake.requestsOf('submit').at(-1)!.json, {
        model: id,
        content: [{ type: 'text', text: 'A lighthouse on a cliff at dawn, waves below' }],
        ratio: '21:9',
        duration: 15,
        resolution: '480p',
        generate_audio: true,
        watermark: false,
      });
      assert.equal((await pollToEnd(ark, ref, ctx)).at(-1)!.state, 'succeeded');
    }
    // Seedance 1.5 pro stops at 12 s on the fake, as third-party Ark references state.
    const tooLong = await errorOf(() => ark.submit(seedance({ duration: 15 }), ctx));
    assert.ok(tooLong instanceof ProviderError);
    assert.match(tooLong.message, /duration/);
  });

  test("every setting the catalog's byteplus `accepts` allows passes the contract the fake enforces", async () => {
    for (const model of ['seedream-4.5', 'seedance-1.5', 'seedance-2.0', 'seedance-2.0-fast'] as const) {
      const route = routeFor(model)!;
      const accepts = route.alternates!.find((a) => a.provider === 'byteplus')!.accepts!;
      const providerModelId = route.alternates!.find((a) => a.provider === 'byteplus')!.providerModelId;
      for (const aspectRatio of accepts.aspectRatios ?? route.aspectRatios)
        for (const duration of accepts.durations ?? [undefined])
          for (const resolution of accepts.resolutions ?? [route.defaultResolution]) {
            const ref = await ark.submit(requestFor(model, { providerModelId, aspectRatio, duration, resolution }), ctx);
            assert.ok(ref.taskId || ref.outputs, `${model} ${aspectRatio} ${duration ?? ''} ${resolution ?? ''}`);
          }
    }
  });

  test("a base URL given with the SDK's /api/v3 does not yield /api/v3/api/v3; the model ids are configurable", async () => {
    assert.equal(arkOrigin('https://ark.ap-southeast.bytepluses.com/api/v3/'), 'https://ark.ap-southeast.bytepluses.com');
    const withPath = createByteplusAdapter({
      key: fake.key,
      baseUrl: `${fake.url}/api/v3`,
      timeoutMs: 2000,
      seedanceModel: 'ep-20261125-abcde',
      seedreamModel: 'ep-20261125-fghij',
    });
    await withPath.submit(seedance(), ctx);
    const call = fake.requestsOf('submit').at(-1)!;
    assert.equal(call.path, '/api/v3/contents/generations/tasks');
    assert.equal((call.json as { model: string }).model, 'ep-20261125-abcde');
    await withPath.submit(seedream(), ctx);
    assert.equal((fake.requestsOf('image').at(-1)!.json as { model: string }).model, 'ep-20261125-fghij');
  });

  test('a failed task is final with its code and message; a sensitive-content code is a content-policy refusal', async () => {
    fake.nextTask('failed');
    const failed = (await pollToEnd(ark, await ark.submit(seedance(), ctx), ctx)).at(-1)!;
    assert.equal(failed.state, 'failed');
    assert.equal(failed.message, 'BytePlus: request rejected: The generation could not be completed with the given parameters. (InvalidParameter)');

    fake.nextTask('sensitive');
    const blocked = (await pollToEnd(ark, await ark.submit(seedance(), ctx), ctx)).at(-1)!;
    assert.equal(blocked.state, 'failed');
    assert.match(blocked.message!, /content policy: .*output video may contain sensitive information\. \(OutputVideoSensitiveContentDetected\)/);

    fake.nextImage('sensitive');
    const refused = await errorOf(() => ark.submit(seedream(), ctx));
    assert.ok(refused instanceof ProviderError);
    assert.equal(refused.retryable, false);
    assert.equal(refused.account, false, 'the customer’s prompt: no failover');
    assert.match(refused.message, /rejected by the provider's content policy \(HTTP 400\).*InputTextSensitiveContentDetected/);
  });

  test('5xx, a task failed with InternalServiceError and a plain 429 are retryable; polling then goes on', async () => {
    fake.nextTask('unavailable');
    const down = await errorOf(() => ark.submit(seedance(), ctx));
    assert.equal((down as ProviderError).retryable, true);
    assert.equal((down as ProviderError).account, false);
    assert.match(down.message, /BytePlus video generation: provider error \(HTTP 503\): The service is temporarily unavailable/);

    fake.nextImage('unavailable');
    assert.equal((await errorOf(() => ark.submit(seedream(), ctx))).retryable, true);

    const ref = await ark.submit(seedance(), ctx);
    fake.script('status', {
      status: 500,
      body: { error: { code: 'InternalServiceError', message: 'The service encountered an unexpected internal error.', type: 'InternalServerError' } },
    });
    assert.equal((await errorOf(() => ark.poll(ref, ctx))).retryable, true);
    assert.equal((await pollToEnd(ark, ref, ctx)).at(-1)!.state, 'succeeded');

    fake.nextTask('internal');
    const ref2 = await ark.submit(seedance(), ctx);
    await ark.poll(ref2, ctx);
    await ark.poll(ref2, ctx);
    const internal = await errorOf(() => ark.poll(ref2, ctx));
    assert.equal((internal as ProviderError).retryable, true, 'the provider’s own failure: retried, then failover');
    assert.match(internal.message, /provider error: .*InternalServiceError/);

    fake.script('submit', {
      status: 429,
      headers: { 'retry-after': '5' },
      body: {
        error: {
          code: 'RateLimitExceeded.EndpointRPMExceeded',
          message: 'The Requests Per Minute (RPM) limit of the associated endpoint for your account has been exceeded.',
          type: 'TooManyRequests',
        },
      },
    });
    const limited = await errorOf(() => ark.submit(seedance(), ctx));
    assert.equal((limited as ProviderError).retryable, true);
    assert.equal(limited.retryAfterMs, 5000);
  });

  test('quota and a wrong key are our account, a model not enabled the route: no retry, failover; the key never appears', async () => {
    fake.nextTask('quota');
    const quota = await errorOf(() => ark.submit(seedance(), ctx));
    assert.ok(quota instanceof ProviderError);
    assert.equal(quota.retryable, false);
    assert.equal(quota.account, true);
    assert.match(quota.message, /cannot serve this \(HTTP 429\).*QuotaExceeded/);

    const wrong = createByteplusAdapter({ key: 'wrong-ark-key-0000', baseUrl: fake.url, timeoutMs: 2000 });
    const denied = await errorOf(() => wrong.submit(seedance(), ctx));
    assert.equal((denied as ProviderError).account, true);
    assert.match(denied.message, /refused our credentials \(HTTP 401\)/);
    assert.ok(!denied.message.includes('wrong-ark-key-0000'));

    const missing = await errorOf(() => ark.submit(seedance({ providerModelId: 'seedance-9-9-pro-000000' }), ctx));
    assert.equal((missing as ProviderError).route, true, 'the model is gone from this route');
    assert.equal((missing as ProviderError).account, false);
    assert.equal((missing as ProviderError).retryable, false);
    assert.equal((missing as ProviderError).status, 404);
  });

  test('invalid input (400 InvalidParameter) is the request’s fault: final, not an account error', async () => {
    fake.script('submit', {
      status: 400,
      body: {
        error: {
          code: 'InvalidParameter',
          message: 'The parameter `resolution` specified in the request is not valid.',
          param: 'resolution',
          type: 'BadRequest',
        },
      },
    });
    const err = await errorOf(() => ark.submit(seedance(), ctx));
    assert.ok(err instanceof ProviderError);
    assert.equal(err.retryable, false);
    assert.equal(err.account, false);
    assert.match(err.message, /request rejected \(HTTP 400\): The parameter `resolution` specified in the request is not valid. \(InvalidParameter\)/);
  });

  test('cancel DELETEs a queued task (it ends cancelled); a running task is not sent the DELETE; image refs send nothing', async () => {
    const ref = await ark.submit(seedance(), ctx);
    await ark.cancel(ref, ctx);
    const del = fake.requestsOf('cancel').at(-1)!;
    assert.equal(del.method, 'DELETE');
    assert.equal(del.path, `/api/v3/contents/generations/tasks/${String(ref.taskId)}`);
    assert.equal(del.headers.authorization, `Bearer ${fake.key}`);
    const end = await ark.poll(ref, ctx);
    assert.equal(end.state, 'failed');
    assert.match(end.message!, /cancelled at the provider/);

    // Read queued once; the cancel's own read finds it running: Ark refuses a running task's DELETE, so none is sent.
    const running = await ark.submit(seedance(), ctx);
    await ark.poll(running, ctx);
    assert.deepEqual(await ark.cancel(running, ctx), { confirmed: false });
    assert.equal(fake.requestsOf('cancel').length, 1);

    const queued = await ark.submit(seedance(), ctx);
    fake.script('cancel', { status: 503, body: { error: { code: 'ServiceUnavailable', message: 'unavailable', type: 'ServiceUnavailable' } } });
    assert.equal((await errorOf(() => ark.cancel(queued, ctx))).retryable, true, 'an outage during cancel is retried');
    fake.script('status', { status: 503, body: { error: { code: 'ServiceUnavailable', message: 'unavailable', type: 'ServiceUnavailable' } } });
    assert.equal((await errorOf(() => ark.cancel(queued, ctx))).retryable, true, 'an outage reading the task before the cancel is retried too');

    const image = await ark.submit(seedream(), ctx);
    const calls = fake.requests.length;
    await ark.cancel(image, ctx);
    assert.equal(fake.requests.length, calls);
  });

  test('a malformed answer is a clear error; image inputs on a video job are refused by the adapter', async () => {
    fake.script('submit', { status: 200, body: {} });
    assert.equal((await errorOf(() => ark.submit(seedance(), ctx))).message, 'BytePlus video generation: malformed answer: no task id in the answer');
    const ref = await ark.submit(seedance(), ctx);
    fake.script('status', { status: 200, body: { id: ref.taskId, status: 'succeeded', content: {} } });
    assert.equal((await errorOf(() => ark.poll(ref, ctx))).message, 'BytePlus status: malformed answer: a succeeded task without content.video_url');
    fake.script('image', { status: 200, body: { data: [{ b64_json: Buffer.from('not an image').toString('base64') }] } });
    assert.match((await errorOf(() => ark.submit(seedream(), ctx))).message, /image 1 is not a JPEG, PNG or WebP image/);

    const start = await storeInput(storage, 'start_frame');
    const refused = await errorOf(() => ark.submit(seedance({ inputs: [start] }), ctx));
    assert.equal((refused as ProviderError).retryable, false);
    assert.match(refused.message, /text-to-video only/);
  });

  test('routing: both models fail over between fal and byteplus only for jobs the Ark route takes', () => {
    const keys = liveKeys({ FAL_KEY: 'k-fal-1234', ARK_API_KEY: 'k-ark-1234' });
    const image = routeFor('seedream-4.5')!;
    assert.deepEqual(
      resolveJobRoute(keys, image, { prompt: 'x', aspect_ratio: '16:9', count: 2 })?.routes?.map((r) => r.provider),
      ['fal', 'byteplus'],
    );
    assert.deepEqual(
      resolveJobRoute(keys, image, { prompt: 'x', aspect_ratio: '1:1', reference_file_ids: ['upl_1'] })?.routes?.map((r) => r.provider),
      ['fal', 'byteplus'],
      'edits too',
    );

    const video = routeFor('seedance-1.5')!;
    const text = { prompt: 'x', duration: 5, resolution: '720p', aspect_ratio: '16:9' };
    const routes = resolveJobRoute(keys, video, text)?.routes;
    assert.deepEqual(routes, [
      { provider: 'fal', provider_model_id: 'fal-ai/bytedance/seedance/v1.5/pro/text-to-video' },
      { provider: 'byteplus', provider_model_id: 'seedance-1-5-pro-251215' },
    ]);
    assert.equal(resolveJobRoute(keys, video, { ...text, resolution: '1080p' })?.routes, undefined, 'a 1080p job stays on fal');
    assert.equal(resolveJobRoute(keys, video, { ...text, start_frame_file_id: 'upl_1' })?.routes, undefined, 'an image-to-video job stays on fal');
    // With only ARK_API_KEY, byteplus is the first route, and what it cannot take is refused at create.
    const arkOnly = { ...keys, FAL_KEY: undefined };
    assert.equal(resolveJobRoute(arkOnly, video, text)?.provider, 'byteplus');
    assert.equal(requestRefusal(video, text, 'byteplus'), undefined);
    assert.match(requestRefusal(video, { ...text, resolution: '1080p' }, 'byteplus')!, /resolution: seedance-1.5 on byteplus supports 480p, 720p/);
    assert.match(requestRefusal(video, { ...text, start_frame_file_id: 'u' }, 'byteplus')!, /takes no image inputs/);
    assert.equal(resolveJobRoute(arkOnly, image, { prompt: 'x', aspect_ratio: '9:16' })?.provider, 'byteplus');

    // Seedance 2.0: fal then BytePlus for text-to-video jobs (4–15 s, 480p/720p); a start frame stays on fal.
    for (const [model, id] of [
      ['seedance-2.0', 'dreamina-seedance-2-0-260128'],
      ['seedance-2.0-fast', 'dreamina-seedance-2-0-fast-260128'],
    ] as const) {
      const route = routeFor(model)!;
      const long = { prompt: 'x', duration: 15, resolution: '480p', aspect_ratio: '21:9' };
      assert.deepEqual(
        resolveJobRoute(keys, route, long)?.routes?.map((r) => [r.provider, r.provider_model_id]),
        [
          ['fal', route.providerModelId],
          ['byteplus', id],
        ],
      );
      assert.equal(resolveJobRoute(keys, route, { ...long, start_frame_file_id: 'upl_1' })?.routes, undefined, 'an image-to-video job stays on fal');
      assert.equal(resolveJobRoute(arkOnly, route, long)?.provider, 'byteplus');
      assert.match(requestRefusal(route, { ...long, start_frame_file_id: 'u' }, 'byteplus')!, /takes no image inputs/);
    }
  });
});
