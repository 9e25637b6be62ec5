// Contract tests of the xAI video adapter (grok-video's alternate route) against a local server
// speaking xAI's documented deferred-request protocol.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createXaiAdapter } from '../../providers/xai/adapter.js';
import { ProviderError } from '../../activities/providers/types.js';
import { startFakeXai, type FakeXai } from '../support/fake-providers/xai.js';
import { errorOf, pollToEnd, providerContext, requestFor, stackStorage, storeInput } from '../support/fake-providers/context.js';

describe('xAI video adapter', () => {
  let fake: FakeXai;
  const storage = stackStorage();
  const ctx = providerContext(storage);
  let xai: ReturnType<typeof createXaiAdapter>;

  before(async () => {
    fake = await startFakeXai();
    xai = createXaiAdapter({ key: fake.key, baseUrl: fake.url, timeoutMs: 2000 });
  });
  after(() => fake.close());

  test('submits grok-imagine-video, polls pending then done, and returns the video URL', async () => {
    const start = await storeInput(storage, 'start_frame');
    const req = requestFor('grok-video', { duration: 10, aspectRatio: '9:16', resolution: '480p', inputs: [start] });
    const ref = await xai.submit(req, ctx);
    const call = fake.requestsOf('submit').at(-1)!;
    assert.equal(call.headers.authorization, `Bearer ${fake.key}`);
    const body = call.json as Record<string, unknown>;
    assert.equal(body.model, 'grok-imagine-video');
    assert.equal(body.duration, 10);
    assert.equal(body.aspect_ratio, '9:16');
    assert.equal(body.resolution, '480p');
    assert.match((body.image as { url: string }).url, /^http/);
    const seen = await pollToEnd(xai, ref, ctx);
    assert.deepEqual(
      seen.map((s) => s.state),
      ['running', 'running', 'succeeded'],
    );
    assert.match(seen.at(-1)!.outputs![0]!.url!, new RegExp(`^${fake.url}/files/`));
  });

  test("a base URL given with the /v1 of xAI's SDK (https://api.x.ai/v1) does not yield /v1/v1", async () => {
    const withV1 = createXaiAdapter({ key: fake.key, baseUrl: `${fake.url}/v1/`, timeoutMs: 2000 });
    const ref = await withV1.submit(requestFor('grok-video'), ctx);
    assert.equal(fake.requestsOf('submit').at(-1)!.path, '/v1/videos/generations');
    await withV1.poll(ref, ctx);
    assert.equal(fake.requestsOf('status').at(-1)!.path, `/v1/videos/${String(ref.requestId)}`);
  });

  test('a pending request answers 202 with an empty body, and that is pending, not malformed', async () => {
    const ref = await xai.submit(requestFor('grok-video'), ctx);
    const first = await xai.poll(ref, ctx);
    const answered = fake.requestsOf('status').at(-1)!;
    assert.ok(answered, 'the fake saw the status call');
    assert.equal(first.state, 'running');
    assert.equal(first.percent, undefined);
    // The fake really answered bodiless 202: the same request, read raw, has no body.
    const raw = await fetch(`${fake.url}/v1/videos/${String(ref.requestId)}`, { headers: { authorization: `Bearer ${fake.key}` } });
    assert.equal(raw.status, 202);
    assert.equal(await raw.text(), '');
  });

  test('a 202 with a JSON body is pending too, and its progress is read', async () => {
    fake.pendingBody = true;
    try {
      const ref = await xai.submit(requestFor('grok-video'), ctx);
      const seen = await pollToEnd(xai, ref, ctx);
      assert.deepEqual(
        seen.map((s) => [s.state, s.percent]),
        [
          ['running', 33],
          ['running', 67],
          ['succeeded', 100],
        ],
      );
    } finally {
      fake.pendingBody = false;
    }
  });

  test('a failure is HTTP 200 with status "failed" and error { code, message }: final, with the message', async () => {
    fake.nextOutcome('failed');
    const last = (await pollToEnd(xai, await xai.submit(requestFor('grok-video'), ctx), ctx)).at(-1)!;
    assert.equal(last.state, 'failed');
    assert.equal(last.message, 'xAI: generation failed: internal generation error (internal_error)');
  });

  test('a 502 is retryable and polling then goes on', async () => {
    const ref = await xai.submit(requestFor('grok-video'), ctx);
    fake.script('status', { status: 502, body: 'Bad Gateway' });
    const err = await errorOf(() => xai.poll(ref, ctx));
    assert.ok(err instanceof ProviderError);
    assert.equal(err.retryable, true);
    assert.match(err.message, /xAI status: provider error \(HTTP 502\): Bad Gateway/);
    assert.equal((await pollToEnd(xai, ref, ctx)).at(-1)!.state, 'succeeded');
  });

  test('a 429 with a rate-limit reset time is retryable after that time', async () => {
    const resetAt = Math.floor(Date.now() / 1000) + 20;
    fake.script('submit', { status: 429, headers: { 'x-ratelimit-reset': String(resetAt) }, body: { code: 'resource_exhausted', error: 'Too many requests' } });
    const err = await errorOf(() => xai.submit(requestFor('grok-video'), ctx));
    assert.ok(err instanceof ProviderError);
    assert.equal(err.retryable, true);
    assert.ok(err.retryAfterMs! > 15_000 && err.retryAfterMs! <= 20_000, `retryAfterMs ${err.retryAfterMs}`);
  });

  test('moderation, failure and expiry are terminal; invalid input is not retried', async () => {
    fake.nextOutcome('moderated');
    const moderated = (await pollToEnd(xai, await xai.submit(requestFor('grok-video'), ctx), ctx)).at(-1)!;
    assert.equal(moderated.state, 'failed');
    assert.match(moderated.message!, /content moderation/);

    fake.nextOutcome('expired');
    assert.match((await pollToEnd(xai, await xai.submit(requestFor('grok-video'), ctx), ctx)).at(-1)!.message!, /expired/);

    const err = await errorOf(() => xai.submit(requestFor('grok-video', { duration: 30 }), ctx));
    assert.equal((err as ProviderError).retryable, false);
    assert.match(err.message, /request rejected \(HTTP 400\): duration: Too big/);
  });

  test('a malformed answer is a clear error', async () => {
    const ref = await xai.submit(requestFor('grok-video'), ctx);
    fake.script('status', { status: 200, body: { status: 'done', video: {} } });
    assert.equal((await errorOf(() => xai.poll(ref, ctx))).message, 'xAI status: malformed answer: a done request without a video url');
    fake.script('status', { status: 200, body: '' });
    assert.match((await errorOf(() => xai.poll(ref, ctx))).message, /expected a JSON object, got an empty body/);
  });

  test('cancel is a no-op (xAI documents no cancel) and sends nothing', async () => {
    const ref = await xai.submit(requestFor('grok-video'), ctx);
    const calls = fake.requests.length;
    await xai.cancel(ref, ctx);
    assert.equal(fake.requests.length, calls);
  });
});
