// Contract tests of the Google Gemini API (Veo 3.1) adapter, veo-3.1's declared second route (not
// offered while Google documents no Veo model on the Gemini API: the last test), against a local
// server speaking the long-running-operation protocol of providers/google/contract.ts: the submit body (checked
// against the body Google's own SDK sends for the same job, images included), polling
// running → done (video or error), the download with the key header, and how errors are classed
// (outage and rate limit: retried, then failover; credentials and quota: our account, failover at
// once; invalid argument and safety blocks: the customer's, final).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createGoogleAdapter } from '../../providers/google/adapter.js';
import { ProviderError } from '../../activities/providers/types.js';
import { routeFor } from '../../shared/catalog.js';
import { parseRouteOrder, resolveJobRoute } from '../../shared/routing.js';
import { modelInfo } from '../../api/routes/models.js';
import { startFakeGoogle, type FakeGoogle } from '../support/fake-providers/google.js';
import { tinyPng } from '../support/fake-providers/server.js';
import { GoogleGenAI, VideoGenerationReferenceType } from '@google/genai';
import { buffer } from 'node:stream/consumers';
import { jobOutputKey } from '../../shared/job-media.js';
import { errorOf, pollToEnd, providerContext, requestFor, stackStorage, storeInput } from '../support/fake-providers/context.js';
import { liveKeys } from '../support/provider-keys.js';

describe('Google Gemini API (Veo) adapter', () => {
  let fake: FakeGoogle;
  const storage = stackStorage();
  const ctx = providerContext(storage);
  let google: ReturnType<typeof createGoogleAdapter>;
  const veo = (over: Parameters<typeof requestFor>[1] = {}) => requestFor('veo-3.1', { providerModelId: 'veo-3.1-generate-preview', duration: 8, ...over });

  before(async () => {
    fake = await startFakeGoogle();
    google = createGoogleAdapter({ key: fake.key, baseUrl: fake.url, timeoutMs: 2000 });
  });
  after(() => fake.close());

  test('submits veo-3.1-generate-preview with the key header and the documented body, polls running then done, and returns the video uri', async () => {
    const ref = await google.submit(veo({ aspectRatio: '9:16', resolution: '1080p' }), ctx);
    const call = fake.requestsOf('submit').at(-1)!;
    assert.equal(call.path, '/v1beta/models/veo-3.1-generate-preview:predictLongRunning');
    assert.equal(call.headers['x-goog-api-key'], fake.key);
    assert.equal(call.headers.authorization, undefined, 'the key goes in x-goog-api-key only');
    assert.deepEqual(call.json, {
      instances: [{ prompt: 'A lighthouse on a cliff at dawn, waves below' }],
      parameters: { aspectRatio: '9:16', resolution: '1080p', durationSeconds: 8 },
    });
    assert.match(String(ref.operation), /^models\/veo-3\.1-generate-preview\/operations\/[0-9a-f]+$/);

    const seen = await pollToEnd(google, ref, ctx);
    assert.deepEqual(
      seen.map((s) => s.state),
      ['running', 'running', 'succeeded'],
    );
    assert.equal(fake.requestsOf('status').at(-1)!.path, `/v1beta/${String(ref.operation)}`);
    const out = seen.at(-1)!.outputs![0]!;
    assert.match(out.url!, new RegExp(`^${fake.url}/v1beta/files/[0-9a-f]+:download\\?alt=media$`));

    // The download needs the key header: the adapter gives it for the API's own origin only.
    const headers = google.outputHeaders!(out);
    assert.deepEqual(headers, { 'x-goog-api-key': fake.key });
    const res = await fetch(out.url!, { headers });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'video/mp4');
    assert.equal((await fetch(out.url!)).status, 403, 'without the key the download is refused');
    assert.deepEqual(google.outputHeaders!({ url: 'https://cdn.example.com/v.mp4' }), {}, 'never the key to another origin');
  });

  // Google's own SDK (@google/genai 2.32.0, the Gemini Developer API path of models.generateVideos and
  // operations.getVideosOperation) run against the fake: our request equals the SDK's for the same
  // job, and the SDK reads the fake's operation to the same video uri our adapter returns.
  const sdk = () => new GoogleGenAI({ apiKey: fake.key, httpOptions: { baseUrl: fake.url } });
  type SdkParams = Parameters<GoogleGenAI['models']['generateVideos']>[0];
  /** The submit our adapter sends for `job` and the one the SDK sends for `params`, both as the fake recorded them. */
  async function oursAndSdks(job: ReturnType<typeof veo>, params: SdkParams) {
    await sdk().models.generateVideos(params);
    const theirs = fake.requestsOf('submit').at(-1)!;
    await google.submit(job, ctx);
    const ours = fake.requestsOf('submit').at(-1)!;
    assert.notEqual(ours, theirs);
    return { ours, theirs };
  }
  const png = { imageBytes: tinyPng.toString('base64'), mimeType: 'image/png' };

  test("the wire equals what Google's own SDK sends and reads for the same job", async () => {
    const ai = sdk();
    const job = veo({ aspectRatio: '9:16', resolution: '720p' });
    let op = await ai.models.generateVideos({
      model: 'veo-3.1-generate-preview',
      source: { prompt: job.prompt! },
      config: { aspectRatio: '9:16', resolution: '720p', durationSeconds: 8 },
    });
    const sdkCall = fake.requestsOf('submit').at(-1)!;
    const ref = await google.submit(job, ctx);
    const ours = fake.requestsOf('submit').at(-1)!;
    assert.notEqual(ours, sdkCall);
    assert.equal(ours.path, sdkCall.path);
    assert.equal(sdkCall.headers['x-goog-api-key'], fake.key, 'the SDK sends the key in x-goog-api-key too');
    assert.deepEqual(ours.json, sdkCall.json);

    while (!op.done) op = await ai.operations.getVideosOperation({ operation: op });
    const sdkPoll = fake.requestsOf('status').at(-1)!;
    assert.equal(sdkPoll.path, `/v1beta/${op.name}`);
    const seen = await pollToEnd(google, ref, ctx);
    const uri = op.response?.generatedVideos?.[0]?.video?.uri;
    assert.ok(uri);
    assert.equal(seen.at(-1)!.outputs![0]!.url!.replace(/\/files\/[0-9a-f]+:/, '/files/ID:'), uri.replace(/\/files\/[0-9a-f]+:/, '/files/ID:'));
  });

  test('a start frame is `image`, inline base64 with its MIME type, as the SDK sends it', async () => {
    const start = await storeInput(storage, 'start_frame');
    const { ours, theirs } = await oursAndSdks(veo({ inputs: [start] }), {
      model: 'veo-3.1-generate-preview',
      source: { prompt: 'A lighthouse on a cliff at dawn, waves below', image: png },
      config: { aspectRatio: '16:9', resolution: '720p', durationSeconds: 8 },
    });
    assert.deepEqual(ours.json, theirs.json);
    assert.deepEqual((ours.json as { instances: unknown[] }).instances[0], {
      prompt: 'A lighthouse on a cliff at dawn, waves below',
      image: { bytesBase64Encoded: tinyPng.toString('base64'), mimeType: 'image/png' },
    });
  });

  test('start and end frames are `image` and `lastFrame`, as the SDK sends them', async () => {
    const [start, end] = [await storeInput(storage, 'start_frame'), await storeInput(storage, 'end_frame')];
    const { ours, theirs } = await oursAndSdks(veo({ inputs: [start, end] }), {
      model: 'veo-3.1-generate-preview',
      source: { prompt: 'A lighthouse on a cliff at dawn, waves below', image: png },
      config: { aspectRatio: '16:9', resolution: '720p', durationSeconds: 8, lastFrame: png },
    });
    assert.deepEqual(ours.json, theirs.json);
  });

  test('reference images are `referenceImages` of type ASSET, as the SDK sends them', async () => {
    const refs = [await storeInput(storage, 'reference'), await storeInput(storage, 'reference')];
    const { ours, theirs } = await oursAndSdks(veo({ inputs: refs }), {
      model: 'veo-3.1-generate-preview',
      source: { prompt: 'A lighthouse on a cliff at dawn, waves below' },
      config: {
        aspectRatio: '16:9',
        resolution: '720p',
        durationSeconds: 8,
        referenceImages: refs.map(() => ({ image: png, referenceType: VideoGenerationReferenceType.ASSET })),
      },
    });
    assert.deepEqual(ours.json, theirs.json);
    assert.equal((ours.json as { instances: { referenceImages: unknown[] }[] }).instances[0]!.referenceImages.length, 2);
  });

  test('sora-2 (served as Veo 3.1 Fast) goes to veo-3.1-fast-generate-preview with the body the SDK sends; sora-2-pro references are referenceImages', async () => {
    const fast = requestFor('sora-2', { providerModelId: 'veo-3.1-fast-generate-preview', duration: 8 });
    const { ours, theirs } = await oursAndSdks(fast, {
      model: 'veo-3.1-fast-generate-preview',
      source: { prompt: fast.prompt! },
      config: { aspectRatio: '16:9', resolution: '720p', durationSeconds: 8 },
    });
    assert.equal(ours.path, '/v1beta/models/veo-3.1-fast-generate-preview:predictLongRunning');
    assert.equal(ours.path, theirs.path);
    assert.deepEqual(ours.json, theirs.json);

    const refs = [await storeInput(storage, 'reference')];
    const pro = requestFor('sora-2-pro', { providerModelId: 'veo-3.1-generate-preview', duration: 8, inputs: refs });
    const both = await oursAndSdks(pro, {
      model: 'veo-3.1-generate-preview',
      source: { prompt: pro.prompt! },
      config: {
        aspectRatio: '16:9',
        resolution: '1080p',
        durationSeconds: 8,
        referenceImages: [{ image: png, referenceType: VideoGenerationReferenceType.ASSET }],
      },
    });
    assert.deepEqual(both.ours.json, both.theirs.json);
  });

  test('an inline image whose bytes are not of its stated type is refused by the fake (400 INVALID_ARGUMENT)', async () => {
    const mislabeled = await storeInput(storage, 'start_frame', 'image/jpeg');
    const err = await errorOf(() => google.submit(veo({ inputs: [mislabeled] }), ctx));
    assert.equal((err as ProviderError).retryable, false);
    assert.match(err.message, /request rejected \(HTTP 400\): Unable to process input image: the bytes are not image\/jpeg/);
  });

  test("a base URL given with the SDKs' /v1beta does not yield /v1beta/v1beta", async () => {
    const withBeta = createGoogleAdapter({ key: fake.key, baseUrl: `${fake.url}/v1beta/`, timeoutMs: 2000 });
    const ref = await withBeta.submit(veo(), ctx);
    assert.equal(fake.requestsOf('submit').at(-1)!.path, '/v1beta/models/veo-3.1-generate-preview:predictLongRunning');
    await withBeta.poll(ref, ctx);
    assert.equal(fake.requestsOf('status').at(-1)!.path, `/v1beta/${String(ref.operation)}`);
  });

  test('an operation done with error { code, message, status } is final with its message; a safety block too', async () => {
    fake.nextOutcome('failed');
    const failed = (await pollToEnd(google, await google.submit(veo(), ctx), ctx)).at(-1)!;
    assert.equal(failed.state, 'failed');
    assert.equal(failed.message, 'Google: request rejected: The prompt could not be processed. (INVALID_ARGUMENT)');

    fake.nextOutcome('filtered');
    const filtered = (await pollToEnd(google, await google.submit(veo(), ctx), ctx)).at(-1)!;
    assert.equal(filtered.state, 'failed');
    assert.match(filtered.message!, /blocked by the provider's safety filters: The video was blocked by safety filters/);
  });

  test('5xx and UNAVAILABLE are retryable outages; polling then goes on', async () => {
    fake.nextOutcome('unavailable');
    const down = await errorOf(() => google.submit(veo(), ctx));
    assert.ok(down instanceof ProviderError);
    assert.equal(down.retryable, true);
    assert.equal(down.account, false);
    assert.match(down.message, /Google video generation: provider error \(HTTP 503\): The model is overloaded/);

    const ref = await google.submit(veo(), ctx);
    fake.script('status', { status: 500, body: { error: { code: 500, message: 'Internal error encountered.', status: 'INTERNAL' } } });
    const err = await errorOf(() => google.poll(ref, ctx));
    assert.equal((err as ProviderError).retryable, true);
    assert.equal((await pollToEnd(google, ref, ctx)).at(-1)!.state, 'succeeded');

    // An operation that ends UNAVAILABLE is the provider's too: retried, not the customer's failure.
    const ref2 = await google.submit(veo(), ctx);
    fake.script('status', {
      status: 200,
      body: { name: ref2.operation, done: true, error: { code: 14, message: 'Service unavailable', status: 'UNAVAILABLE' } },
    });
    const opErr = await errorOf(() => google.poll(ref2, ctx));
    assert.equal((opErr as ProviderError).retryable, true);
  });

  test('a plain 429 rate limit is retryable after Retry-After; a 429 naming the quota is our account (failover, no retry)', async () => {
    fake.script('submit', {
      status: 429,
      headers: { 'retry-after': '7' },
      body: { error: { code: 429, message: 'Resource has been exhausted (e.g. check rate limits).', status: 'RESOURCE_EXHAUSTED' } },
    });
    const limited = await errorOf(() => google.submit(veo(), ctx));
    assert.equal((limited as ProviderError).retryable, true);
    assert.equal(limited.retryAfterMs, 7000);

    fake.nextOutcome('quota');
    const quota = await errorOf(() => google.submit(veo(), ctx));
    assert.ok(quota instanceof ProviderError);
    assert.equal(quota.retryable, false);
    assert.equal(quota.account, true);
    assert.match(quota.message, /quota is exhausted \(HTTP 429\)/);
  });

  test("a missing model (404 NOT_FOUND) and a precondition (400 FAILED_PRECONDITION) give the route up at once, never as the customer's error; a per-minute 429 waits for its RetryInfo", async () => {
    fake.script('submit', {
      status: 404,
      body: { error: { code: 404, message: 'models/veo-3.1-generate-preview is not found for API version v1beta', status: 'NOT_FOUND' } },
    });
    const gone = await errorOf(() => google.submit(veo(), ctx));
    assert.ok(gone instanceof ProviderError, String(gone));
    assert.equal(gone.route, true, gone.message);
    assert.equal(gone.failsOverNow, true);
    assert.equal(gone.retryable, false);
    assert.match(gone.message, /not served on this route \(HTTP 404\)/);

    fake.script('submit', {
      status: 400,
      body: { error: { code: 400, message: 'User location is not supported for the API use.', status: 'FAILED_PRECONDITION' } },
    });
    const region = await errorOf(() => google.submit(veo(), ctx));
    assert.ok(region instanceof ProviderError, String(region));
    assert.equal(region.failsOverNow, true, region.message);

    fake.script('submit', {
      status: 429,
      body: {
        error: {
          code: 429,
          message: 'Quota exceeded for metric: generate_requests_per_model, limit: 10 per minute.',
          status: 'RESOURCE_EXHAUSTED',
          details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '3s' }],
        },
      },
    });
    const perMinute = await errorOf(() => google.submit(veo(), ctx));
    assert.ok(perMinute instanceof ProviderError, String(perMinute));
    assert.equal(perMinute.retryable, true, perMinute.message);
    assert.equal(perMinute.failsOverNow, false);
    assert.equal(perMinute.retryAfterMs, 3000);
    // Retried: the next submit is served.
    const ref = await google.submit(veo(), ctx);
    assert.ok(ref.operation);
  });

  test('a wrong key (403 PERMISSION_DENIED) is an account error; the key never appears in a message', async () => {
    const wrong = createGoogleAdapter({ key: 'wrong-key-0000', baseUrl: fake.url, timeoutMs: 2000 });
    const err = await errorOf(() => wrong.submit(veo(), ctx));
    assert.ok(err instanceof ProviderError);
    assert.equal(err.account, true);
    assert.equal(err.retryable, false);
    assert.match(err.message, /refused our credentials \(HTTP 403\)/);
    assert.ok(!err.message.includes('wrong-key-0000'));
  });

  test('400 INVALID_ARGUMENT is the request’s fault: final, not retried, not an account error', async () => {
    fake.script('submit', { status: 400, body: { error: { code: 400, message: 'parameters.resolution: 4k is not supported', status: 'INVALID_ARGUMENT' } } });
    const err = await errorOf(() => google.submit(veo(), ctx));
    assert.ok(err instanceof ProviderError);
    assert.equal(err.retryable, false);
    assert.equal(err.account, false);
    assert.match(err.message, /request rejected \(HTTP 400\): parameters.resolution: 4k is not supported \(INVALID_ARGUMENT\)/);
  });

  test('a sample with the video inline (encodedVideo, encoding) is stored under the job and reported by key', async () => {
    const job = veo();
    const ref = await google.submit(job, ctx);
    const bytes = Buffer.from('not really an mp4, but bytes');
    fake.script('status', {
      status: 200,
      body: {
        name: ref.operation,
        done: true,
        response: { generateVideoResponse: { generatedSamples: [{ video: { encodedVideo: bytes.toString('base64'), encoding: 'video/mp4' } }] } },
      },
    });
    const done = await google.poll(ref, ctx);
    assert.equal(done.state, 'succeeded');
    const out = done.outputs![0]!;
    assert.equal(out.url, undefined);
    assert.equal(out.key, jobOutputKey(storage, job.jobId, 1, 'mp4'));
    assert.equal(out.size, bytes.length);
    assert.ok((await buffer(await storage.getStream(out.key!))).equals(bytes));
  });

  test('a malformed answer is a clear error', async () => {
    const ref = await google.submit(veo(), ctx);
    fake.script('status', { status: 200, body: { name: ref.operation, done: true, response: { generateVideoResponse: { generatedSamples: [] } } } });
    assert.equal((await errorOf(() => google.poll(ref, ctx))).message, 'Google status: malformed answer: a done operation without an error or a video');
    fake.script('submit', { status: 200, body: { done: false } });
    assert.equal((await errorOf(() => google.submit(veo(), ctx))).message, 'Google video generation: malformed answer: no operation name in the answer');
  });

  test('cancel is a no-op that sends nothing', async () => {
    const ref = await google.submit(veo(), ctx);
    const calls = fake.requests.length;
    await google.cancel(ref, ctx);
    assert.equal(fake.requests.length, calls);
  });

  test('routing: no Google route is offered: with GEMINI_API_KEY set, veo-3.1, sora-2-pro and sora-2 stay on fal, and the catalog says why', () => {
    const keys = liveKeys({ FAL_KEY: 'k-fal-1234', GEMINI_API_KEY: 'k-gem-1234' });
    const text8 = { prompt: 'x', duration: 8, resolution: '720p', aspect_ratio: '16:9' };
    for (const model of ['veo-3.1', 'sora-2-pro', 'sora-2']) {
      const route = routeFor(model)!;
      const job = resolveJobRoute(keys, route, text8);
      assert.equal(job?.provider, 'fal', model);
      assert.equal(job?.routes, undefined, `${model}: no failover route`);
      assert.equal(route.alternates?.some((a) => a.provider === 'google') ?? false, false, `${model}: google is not an alternate`);
      const [disabled, ...more] = route.disabledRoutes ?? [];
      assert.equal(more.length, 0);
      assert.equal(disabled?.provider, 'google', `${model}: the google route stays declared`);
      assert.match(disabled!.reason, /shut the Gemini API's Veo 3\.1 preview models down on 2026-10-22/);
      assert.equal(modelInfo(route, keys).disabled_routes[0]?.reason, disabled!.reason, 'GET /v1/models says why');
      assert.deepEqual(
        modelInfo(route, keys).routes.map((r) => r.provider),
        ['fal'],
      );
      // With only the Gemini key the model is not served live at all.
      assert.equal(resolveJobRoute({ ...keys, FAL_KEY: undefined }, route, text8), undefined, `${model} without FAL_KEY`);
    }
    assert.equal(routeFor('veo-3.1')!.disabledRoutes![0]!.providerModelId, 'veo-3.1-generate-preview');
    assert.equal(routeFor('sora-2')!.disabledRoutes![0]!.providerModelId, 'veo-3.1-fast-generate-preview');
    // PROVIDER_ROUTES naming the route is refused with the reason, not taken.
    assert.throws(() => parseRouteOrder('veo-3.1=google,fal'), /google's route of veo-3\.1 is not offered: Google shut/);
  });
});
