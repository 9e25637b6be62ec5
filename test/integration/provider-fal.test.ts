// Contract tests of the fal queue adapter against a local server speaking fal's documented queue
// protocol, with outputs referenced from real MinIO inputs.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createFalAdapter, falOutputHeaders, falResultRetry, seedreamImageSize } from '../../providers/fal/adapter.js';
import { seedreamMinPixels } from '../../providers/fal/contract.js';
import { ProviderError } from '../../activities/providers/types.js';
import { falInputSchemaDocument, startFakeFal, type FakeFal } from '../support/fake-providers/fal.js';
import { json } from '../support/fake-providers/server.js';
import { errorOf, pollToEnd, providerContext, requestFor, stackStorage, storeInput, storeMotionVideo } from '../support/fake-providers/context.js';
import { probeUrl } from '../support/fixtures.js';

describe('fal queue adapter', () => {
  let fake: FakeFal;
  const storage = stackStorage();
  const ctx = providerContext(storage);
  let fal: ReturnType<typeof createFalAdapter>;

  before(async () => {
    fake = await startFakeFal();
    // fal-js's retry count, with its 1 s backoff shortened so the retried answers take milliseconds here.
    fal = createFalAdapter({ key: fake.key, queueUrl: fake.url, timeoutMs: 2000, resultRetry: { ...falResultRetry, baseDelayMs: 5, maxDelayMs: 20 } });
  });
  after(() => fake.close());

  test('submits with the key, reports queue position and progress, and returns the result files', async () => {
    const req = requestFor('nano-banana-2', { count: 2, aspectRatio: '16:9' });
    const ref = await fal.submit(req, ctx);
    assert.equal(ref.provider, 'fal');
    assert.equal(ref.jobId, req.jobId);
    const submit = fake.requestsOf('submit').at(-1)!;
    assert.equal(submit.path, '/fal-ai/nano-banana-2');
    assert.equal(submit.headers.authorization, `Key ${fake.key}`);
    assert.deepEqual(submit.json, { prompt: req.prompt, num_images: 2, aspect_ratio: '16:9', output_format: 'png' });

    const seen = await pollToEnd(fal, ref, ctx);
    assert.deepEqual(
      seen.map((s) => s.state),
      ['queued', 'queued', 'running', 'succeeded'],
    );
    assert.equal(seen[0]!.queuePosition, 1);
    assert.equal(seen[1]!.queuePosition, 0);
    assert.equal(seen[2]!.percent, 40);
    const done = seen.at(-1)!;
    assert.equal(done.outputs?.length, 2);
    for (const o of done.outputs!) {
      assert.ok(o.url?.startsWith(`${fake.url}/files/`));
      assert.equal(o.contentType, 'image/png');
    }
    assert.ok(fake.requestsOf('status').every((r) => r.query.get('logs') === '1'));
  });

  test('hands stored inputs over as URLs the provider can fetch (image-to-video)', async () => {
    const start = await storeInput(storage, 'start_frame');
    const end = await storeInput(storage, 'end_frame');
    const ref = await fal.submit(requestFor('kling-3.0', { inputs: [start, end], duration: 10 }), ctx);
    const submit = fake.requestsOf('submit').at(-1)!;
    assert.equal(submit.path, '/fal-ai/kling-video/v3/pro/image-to-video');
    const body = submit.json as Record<string, string>;
    assert.equal(body.duration, '10');
    const fetched = await fetch(body.start_image_url!);
    assert.equal(fetched.status, 200, 'the presigned input URL serves the stored file');
    assert.ok(body.end_image_url!.includes(encodeURIComponent(end.key.split('/').pop()!)) || body.end_image_url!.includes(end.key));
    const seen = await pollToEnd(fal, ref, ctx);
    assert.equal(seen.at(-1)!.state, 'succeeded');
    assert.equal(seen.at(-1)!.outputs![0]!.contentType, 'video/mp4');
  });

  test('Kling 3.0 Turbo: a first frame goes to its image-to-video as image_url, text-to-video sends the ratio, and a 16 s request is refused before it is sent', async () => {
    const start = await storeInput(storage, 'start_frame');
    const ref = await fal.submit(requestFor('kling-3.0-turbo', { inputs: [start], duration: 15 }), ctx);
    const submit = fake.requestsOf('submit').at(-1)!;
    assert.equal(submit.path, '/fal-ai/kling-video/v3/turbo/pro/image-to-video');
    const body = submit.json as Record<string, string>;
    assert.deepEqual(Object.keys(body).sort(), ['duration', 'image_url', 'prompt']);
    assert.equal(body.duration, '15');
    assert.equal((await fetch(body.image_url!)).status, 200, 'the presigned input URL serves the stored file');
    assert.equal((await pollToEnd(fal, ref, ctx)).at(-1)!.state, 'succeeded');

    await fal.submit(requestFor('kling-3.0-turbo', { aspectRatio: '9:16', duration: 3 }), ctx);
    const text = fake.requestsOf('submit').at(-1)!;
    assert.equal(text.path, '/fal-ai/kling-video/v3/turbo/pro/text-to-video');
    assert.deepEqual(text.json, { prompt: requestFor('kling-3.0-turbo').prompt, duration: '3', aspect_ratio: '9:16' });

    // Bypass the catalog's validation: fal's page lists 3 to 15 seconds, and the builder narrows to them
    // before anything is sent.
    const submitsBefore = fake.requestsOf('submit').length;
    const err = await errorOf(() => fal.submit(requestFor('kling-3.0-turbo', { duration: 16 }), ctx));
    assert.ok(err instanceof ProviderError && !err.retryable, String(err));
    assert.match(err.message, /duration "16" is not one this route can send/);
    assert.equal(fake.requestsOf('submit').length, submitsBefore, 'nothing sent to fal');
  });

  test("Grok image-to-video gets the asked aspect ratio, as xAI's own route does; Kling image-to-video has no such field", async () => {
    const start = await storeInput(storage, 'start_frame');
    await fal.submit(requestFor('grok-video', { inputs: [start], aspectRatio: '9:16' }), ctx);
    const grok = fake.requestsOf('submit').at(-1)!;
    assert.equal(grok.path, '/xai/grok-imagine-video/image-to-video');
    assert.equal((grok.json as Record<string, unknown>).aspect_ratio, '9:16');
    // fal's Kling image-to-video input types (v3, v2.6) define no aspect_ratio: the video takes the start image's shape.
    await fal.submit(requestFor('kling-2.6', { inputs: [start], aspectRatio: '9:16' }), ctx);
    const kling = fake.requestsOf('submit').at(-1)!;
    assert.equal(kling.path, '/fal-ai/kling-video/v2.6/pro/image-to-video');
    assert.equal('aspect_ratio' in (kling.json as Record<string, unknown>), false);
  });

  test('a catalog value outside the endpoint enum, or an endpoint its builder is not checked against, fails the job clearly', async () => {
    const bad = await errorOf(() => fal.submit(requestFor('kling-3.0', { aspectRatio: '4:3' }), ctx));
    assert.ok(bad instanceof ProviderError && !bad.retryable, String(bad));
    assert.match(bad.message, /aspect_ratio "4:3" is not one this route can send/);
    const stray = await errorOf(() => fal.submit(requestFor('veo-3.1', { providerModelId: 'fal-ai/veo3' }), ctx));
    assert.ok(stray instanceof ProviderError && !stray.retryable, String(stray));
    assert.match(stray.message, /fal-ai\/veo3 as the main endpoint of a veo request/);
  });

  test('a 503 on status is retryable, and the next poll goes on', async () => {
    const ref = await fal.submit(requestFor('seedream-4.5'), ctx);
    fake.script('status', { status: 503, body: { detail: 'Service temporarily unavailable', error_type: 'runner_scheduling_failure' } }, 2);
    for (let i = 0; i < 2; i++) {
      const err = await errorOf(() => fal.poll(ref, ctx));
      assert.ok(err instanceof ProviderError);
      assert.equal(err.retryable, true);
      assert.equal(err.status, 503);
      assert.match(err.message, /fal status: provider error \(HTTP 503\): Service temporarily unavailable/);
    }
    const seen = await pollToEnd(fal, ref, ctx);
    assert.equal(seen.at(-1)!.state, 'succeeded');
  });

  test('a 429 with Retry-After is retryable after the hinted wait, then the submit goes through', async () => {
    fake.script('submit', { status: 429, headers: { 'retry-after': '7' }, body: { detail: 'Rate limit exceeded' } });
    const req = requestFor('veo-3.1');
    const err = await errorOf(() => fal.submit(req, ctx));
    assert.ok(err instanceof ProviderError);
    assert.equal(err.retryable, true);
    assert.equal(err.retryAfterMs, 7000);
    assert.match(err.message, /rate limited \(HTTP 429\); retry after 7 s/);
    const ref = await fal.submit(req, ctx);
    assert.equal((await pollToEnd(fal, ref, ctx)).at(-1)!.state, 'succeeded');
  });

  test('a content-policy rejection fails the job, not the call', async () => {
    fake.nextOutcome('content_policy');
    const ref = await fal.submit(requestFor('seedance-1.5'), ctx);
    const last = (await pollToEnd(fal, ref, ctx)).at(-1)!;
    assert.equal(last.state, 'failed');
    assert.match(last.message!, /content policy/);
    assert.match(last.message!, /flagged by a content checker/);
  });

  test('input the endpoint refuses is a non-retryable error naming the field', async () => {
    // Bypass the catalog's validation: 7 s is not a Kling 2.6 duration.
    const err = await errorOf(() => fal.submit(requestFor('kling-2.6', { duration: 7 }), ctx));
    assert.ok(err instanceof ProviderError);
    assert.equal(err.retryable, false);
    assert.equal(err.status, 422);
    assert.match(err.message, /duration: Input should be '5' or '10'/);
  });

  // fal's published schemas, which the fake holds requests to (fal-inputs.schema.json), refuse these
  // requests; the gateway refuses them at create time (provider-limits), before any charge.
  test("Veo reference-to-video takes 8 s only: a 6 s request is refused by fal's schema", async () => {
    const refs = [await storeInput(storage, 'reference'), await storeInput(storage, 'reference')];
    const err = await errorOf(() => fal.submit(requestFor('veo-3.1', { inputs: refs, duration: 6 }), ctx));
    assert.equal(fake.requestsOf('submit').at(-1)!.path, '/fal-ai/veo3.1/reference-to-video');
    assert.equal(err.status, 422, err.message);
    assert.match(err.message, /duration: Input should be '8s'/);
  });

  test('Veo reference-to-video takes at most 3 images: a fourth is refused', async () => {
    const refs = await Promise.all([1, 2, 3, 4].map(() => storeInput(storage, 'reference')));
    const err = await errorOf(() => fal.submit(requestFor('veo-3.1', { inputs: refs, duration: 8 }), ctx));
    assert.equal(err.status, 422, err.message);
    assert.match(err.message, /image_urls: List should have at most 3 items/);
  });

  test('a lone reference image goes to Veo reference-to-video at 8 s, not turned into a first frame', async () => {
    const ref = await fal.submit(requestFor('veo-3.1', { inputs: [await storeInput(storage, 'reference')], duration: 8 }), ctx);
    const submit = fake.requestsOf('submit').at(-1)!;
    assert.equal(submit.path, '/fal-ai/veo3.1/reference-to-video');
    assert.equal((submit.json as { duration: string }).duration, '8s');
    assert.equal((submit.json as { image_urls: string[] }).image_urls.length, 1);
    assert.equal((await pollToEnd(fal, ref, ctx)).at(-1)!.state, 'succeeded');
  });

  for (const model of ['kling-3.0', 'kling-2.6']) {
    test(`${model}: a prompt over 2,500 characters is refused by fal's schema; 2,500 pass`, async () => {
      const err = await errorOf(() => fal.submit(requestFor(model, { prompt: 'a'.repeat(2501) }), ctx));
      assert.equal(err.status, 422, err.message);
      assert.match(err.message, /prompt: String should have at most 2500 characters/);
      await fal.submit(requestFor(model, { prompt: 'a'.repeat(2500) }), ctx);
    });
  }

  test("nano-banana-2: a prompt under 3 characters is refused by fal's schema", async () => {
    const err = await errorOf(() => fal.submit(requestFor('nano-banana-2', { prompt: 'ab' }), ctx));
    assert.equal(err.status, 422, err.message);
    assert.match(err.message, /prompt: String should have at least 3 characters/);
  });

  test('the fake validates against the published schemas it names, not against our contracts', () => {
    assert.match(falInputSchemaDocument.source, /^@fal-ai\/client \d+\.\d+\.\d+, src\/types\/endpoints\.d\.ts/);
    assert.match(falInputSchemaDocument.generated, /^\d{4}-\d{2}-\d{2}$/);
  });

  test('a field the endpoint does not define is refused (422), as fal validates its input types', async () => {
    const res = await fetch(`${fake.url}/fal-ai/wan/v2.2-14b/animate/replace`, {
      method: 'POST',
      headers: { authorization: `Key ${fake.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ video_url: 'https://example.test/v.mp4', image_url: 'https://example.test/i.png', prompt: 'not a field of this endpoint' }),
    });
    assert.equal(res.status, 422);
    assert.match(JSON.stringify(await res.json()), /prompt/);
  });

  test('the replace-actor request carries no prompt (Wan Animate Replace has none), even when the job has one', async () => {
    const inputs = [await storeInput(storage, 'image'), await storeMotionVideo(storage)];
    const ref = await fal.submit(requestFor('replace-actor', { prompt: 'make it dramatic', inputs }), ctx);
    const body = fake.requestsOf('submit').at(-1)!.json as Record<string, unknown>;
    assert.deepEqual(Object.keys(body).sort(), ['image_url', 'resolution', 'video_url']);
    assert.equal((await pollToEnd(fal, ref, ctx)).at(-1)!.state, 'succeeded');
  });

  test('replace-actor: the motion video is trimmed or padded to the asked duration and cropped to the asked aspect ratio', async () => {
    const video = await storeMotionVideo(storage);
    const image = await storeInput(storage, 'image');
    for (const [duration, aspectRatio, width, height] of [
      [3, '16:9', 1280, 720],
      [6, '9:16', 720, 1280],
    ] as const) {
      await fal.submit(requestFor('replace-actor', { duration, aspectRatio, inputs: [image, video] }), ctx);
      const sent = await probeUrl(String((fake.requestsOf('submit').at(-1)!.json as { video_url: string }).video_url));
      assert.equal(sent.width, width);
      assert.equal(sent.height, height);
      assert.ok(Math.abs(sent.durationSeconds! - duration) < 0.15, `asked ${duration} s, sent ${sent.durationSeconds} s`);
    }
  });

  test('seedream gets explicit sizes at or above its minimum pixel count, never a preset below it', async () => {
    for (const [ratio, size] of [
      ['1:1', { width: 2048, height: 2048 }],
      ['16:9', { width: 2560, height: 1440 }],
      ['9:16', { width: 1440, height: 2560 }],
    ] as const) {
      assert.deepEqual(seedreamImageSize(ratio), size);
      assert.ok(size.width * size.height >= seedreamMinPixels);
      await fal.submit(requestFor('seedream-4.5', { aspectRatio: ratio }), ctx);
      assert.deepEqual((fake.requestsOf('submit').at(-1)!.json as { image_size: unknown }).image_size, size);
    }
  });

  test('every submit asks fal to keep the outputs a day (X-Fal-Object-Lifecycle-Preference)', async () => {
    await fal.submit(requestFor('nano-banana-2'), ctx);
    assert.deepEqual(JSON.parse(String(fake.requestsOf('submit').at(-1)!.headers['x-fal-object-lifecycle-preference'])), {
      expiration_duration_seconds: 86_400,
    });
  });

  test("COMPLETED with a request-level error is a failed job with fal's message, without fetching the result", async () => {
    const ref = await fal.submit(requestFor('veo-3.1'), ctx);
    for (let i = 0; i < fake.flow.length - 1; i++) await fal.poll(ref, ctx);
    const results = fake.requestsOf('result').length;
    fake.script('status', json(200, { status: 'COMPLETED', request_id: ref.requestId, error: 'Malformed request', error_type: 'bad_request' }));
    const last = await fal.poll(ref, ctx);
    assert.equal(last.state, 'failed');
    assert.equal(last.message, 'fal: Malformed request (bad_request)');
    assert.equal(fake.requestsOf('result').length, results);
  });

  for (const status of [502, 503, 504]) {
    test(`a ${status} on the result without fal's error marker is retried as fal's client does, and the paid generation succeeds`, async () => {
      const ref = await fal.submit(requestFor('kling-2.6'), ctx);
      const results = fake.requestsOf('result').length;
      // An edge answer: an HTML error page, no X-Fal-Error-Type, no error_type.
      fake.script('result', { status, headers: { 'content-type': 'text/html' }, body: `<html><body>${status} Bad Gateway</body></html>` }, 2);
      const last = (await pollToEnd(fal, ref, ctx)).at(-1)!;
      assert.equal(last.state, 'succeeded', last.message);
      assert.equal(last.outputs?.[0]?.contentType, 'video/mp4');
      assert.equal(fake.requestsOf('result').length - results, 3, 'two answers retried, the third delivered');
    });
  }

  test("a 429 on the result is retried too, even with fal's marker (a rate limit is never the request's own failure)", async () => {
    const ref = await fal.submit(requestFor('seedream-4.5'), ctx);
    fake.script('result', json(429, { detail: 'Too many requests', error_type: 'rate_limited' }));
    assert.equal((await pollToEnd(fal, ref, ctx)).at(-1)!.state, 'succeeded');
  });

  test("once fal's retries run out the result stays a retryable error: a paid generation is never failed for an edge error", async () => {
    const ref = await fal.submit(requestFor('kling-2.6'), ctx);
    // Walk the status to COMPLETED, then every result answer of one poll is a 503.
    for (let i = 0; i < fake.flow.length - 1; i++) await fal.poll(ref, ctx);
    const results = fake.requestsOf('result').length;
    fake.script('result', json(503, { detail: 'Service Unavailable' }), falResultRetry.maxRetries + 1);
    const err = await errorOf(() => fal.poll(ref, ctx));
    assert.ok(err instanceof ProviderError, String(err));
    assert.equal(err.retryable, true);
    assert.equal(err.status, 503);
    assert.equal(fake.requestsOf('result').length - results, falResultRetry.maxRetries + 1, "the first call and fal-js's 3 retries");
    // The next poll (the activity's own retry) delivers the result.
    const next = await fal.poll(ref, ctx);
    assert.equal(next.state, 'succeeded');
  });

  for (const [how, answer] of [
    ['the X-Fal-Error-Type header', json(504, { detail: 'Request timed out' }, { 'x-fal-error-type': 'request_timeout' })],
    ['error_type in the body', json(503, { detail: 'No runner could be allocated', error_type: 'runner_scheduling_failure' })],
    ['a plain 500', json(500, { detail: 'CUDA out of memory while decoding the video' })],
  ] as const) {
    test(`an infrastructure failure on the result (${how}) is retried, then stays a retryable error that ends the request (never final)`, async () => {
      const ref = await fal.submit(requestFor('kling-2.6'), ctx);
      for (let i = 0; i < fake.flow.length - 1; i++) await fal.poll(ref, ctx);
      const results = fake.requestsOf('result').length;
      // fal-js retries 502/503/504 whatever the type; a 500 is asked once per check.
      const calls = answer.status === 500 ? 1 : falResultRetry.maxRetries + 1;
      fake.script('result', answer, calls);
      const err = await errorOf(() => fal.poll(ref, ctx));
      assert.ok(err instanceof ProviderError, String(err));
      assert.equal(err.retryable, true, 'retried by the activity, then another route');
      assert.equal(err.ended, true, "fal's request failed: the job may move on even though it was reported running");
      assert.equal(err.account || err.route, false);
      assert.equal(err.status, answer.status);
      assert.match(err.message, /^fal result: provider error \(HTTP 50\d\): /);
      assert.equal(fake.requestsOf('result').length - results, calls);
      // A later check that finds the result delivers it.
      assert.equal((await fal.poll(ref, ctx)).state, 'succeeded');
    });
  }

  test('a request-level or model error on the result stays final, with its type', async () => {
    for (const [answer, type] of [
      [json(400, { detail: 'Bad request', error_type: 'bad_request' }), 'bad_request'],
      [json(499, { detail: 'The client closed the connection' }, { 'x-fal-error-type': 'client_disconnected' }), 'client_disconnected'],
      [json(422, { detail: [{ loc: ['body', 'image_url'], msg: 'Image too large', type: 'image_too_large' }] }), 'image_too_large'],
    ] as const) {
      const ref = await fal.submit(requestFor('kling-2.6'), ctx);
      for (let i = 0; i < fake.flow.length - 1; i++) await fal.poll(ref, ctx);
      fake.script('result', answer);
      const last = await fal.poll(ref, ctx);
      assert.equal(last.state, 'failed', type);
      assert.ok(last.message!.includes(type), last.message);
    }
  });

  test("a COMPLETED status carrying an infrastructure error_type is retryable and ends the request; the fake's run error too", async () => {
    fake.nextOutcome('completed_with_error');
    const ref = await fal.submit(requestFor('kling-2.6'), ctx);
    for (let i = 0; i < fake.flow.length - 1; i++) await fal.poll(ref, ctx);
    const err = await errorOf(() => fal.poll(ref, ctx));
    assert.ok(err instanceof ProviderError, String(err));
    assert.equal(err.retryable, true);
    assert.equal(err.ended, true);
    assert.match(err.message, /^fal status: provider error: Internal error while running the model/);
  });

  test('the status answers 202 while queued or running and 200 once completed', async () => {
    const ref = await fal.submit(requestFor('nano-banana-2'), ctx);
    const before = fake.requestsOf('status').length;
    await pollToEnd(fal, ref, ctx);
    const statuses = fake.requestsOf('status').slice(before);
    assert.equal(statuses.length, 4);
    const raw = await fetch(String(ref.statusUrl), { headers: { authorization: `Key ${fake.key}` } });
    assert.equal(raw.status, 200);
    assert.equal(((await raw.json()) as { status: string }).status, 'COMPLETED');
  });

  test("the key goes with output downloads only when the CDN requires it, and only to fal's CDN v3 hosts over https", () => {
    const cfg = { key: 'fal-key-123456', cdnRequiresKey: true };
    assert.deepEqual(falOutputHeaders(cfg, { url: 'https://v3.fal.media/files/x.png' }), { authorization: 'Key fal-key-123456' });
    assert.deepEqual(falOutputHeaders(cfg, { url: 'https://v3b.fal.media/files/x.png' }), { authorization: 'Key fal-key-123456' });
    assert.deepEqual(falOutputHeaders(cfg, { url: 'https://fal.media/files/x.png' }), {}, 'no ACL applies there, so no key either');
    assert.deepEqual(falOutputHeaders(cfg, { url: 'https://storage.googleapis.com/falserverless/x.png' }), {});
    assert.deepEqual(falOutputHeaders(cfg, { url: 'https://evilfal.media/x.png' }), {});
    assert.deepEqual(falOutputHeaders(cfg, { url: 'http://v3.fal.media/x.png' }), {});
    assert.deepEqual(falOutputHeaders({ ...cfg, cdnRequiresKey: false }, { url: 'https://v3.fal.media/x.png' }), {});
  });

  test('a malformed answer is a clear error', async () => {
    const ref = await fal.submit(requestFor('nano-banana-2'), ctx);
    fake.script('status', { status: 200, headers: { 'content-type': 'text/html' }, body: '<html><body>Bad gateway</body></html>' });
    const html = await errorOf(() => fal.poll(ref, ctx));
    assert.ok(html instanceof ProviderError);
    assert.equal(html.retryable, false);
    assert.equal(html.message, 'fal status: malformed answer: expected a JSON object, got an HTML page');

    fake.script('status', { status: 200, body: { status: 'SOMETHING_NEW' } });
    assert.match((await errorOf(() => fal.poll(ref, ctx))).message, /malformed answer: unknown status "SOMETHING_NEW"/);

    fake.script('submit', { status: 200, body: { status: 'IN_QUEUE' } });
    assert.match((await errorOf(() => fal.submit(requestFor('nano-banana-2'), ctx))).message, /no request_id/);

    fake.nextOutcome('no_files');
    const empty = await fal.submit(requestFor('nano-banana-2'), ctx);
    const err = await errorOf(() => pollToEnd(fal, empty, ctx));
    assert.match(err.message, /fal result: malformed answer: the result holds no image, video or audio file/);
  });

  test('cancel stops a queued request, and canceling a finished one is harmless', async () => {
    const ref = await fal.submit(requestFor('grok-video'), ctx);
    assert.equal((await fal.poll(ref, ctx)).state, 'queued');
    await fal.cancel(ref, ctx);
    const cancel = fake.requestsOf('cancel').at(-1)!;
    assert.equal(cancel.method, 'PUT');
    assert.equal(cancel.path, `/xai/grok-imagine-video/requests/${String(ref.requestId)}/cancel`);
    const last = (await pollToEnd(fal, ref, ctx)).at(-1)!;
    assert.equal(last.state, 'failed');
    assert.match(last.message!, /cancel/);

    const done = await fal.submit(requestFor('nano-banana-2'), ctx);
    await pollToEnd(fal, done, ctx);
    await fal.cancel(done, ctx); // 400 ALREADY_COMPLETED: nothing to stop
  });

  test('follows only queue URLs on the configured origin, and never echoes the key', async () => {
    fake.script('submit', {
      status: 200,
      body: {
        request_id: 'r-1',
        status_url: 'http://203.0.113.9/steal/status',
        response_url: 'http://203.0.113.9/steal',
        cancel_url: 'http://203.0.113.9/steal/cancel',
      },
    });
    const ref = await fal.submit(requestFor('nano-banana-2'), ctx);
    assert.equal(ref.statusUrl, `${fake.url}/fal-ai/nano-banana-2/requests/r-1/status`);
    assert.equal(ref.cancelUrl, `${fake.url}/fal-ai/nano-banana-2/requests/r-1/cancel`);

    fake.script('status', { status: 400, body: { detail: `bad key ${fake.key}` } });
    const err = await errorOf(() => fal.poll(ref, ctx));
    assert.ok(!err.message.includes(fake.key));
    assert.match(err.message, /\[redacted\]/);

    const wrong = createFalAdapter({ key: 'wrong-key-abcdef', queueUrl: fake.url, timeoutMs: 2000 });
    const denied = await errorOf(() => wrong.submit(requestFor('nano-banana-2'), ctx));
    assert.equal((denied as ProviderError).retryable, false);
    assert.match(denied.message, /refused our credentials \(HTTP 401\)/);
    assert.ok(!denied.message.includes('wrong-key-abcdef'));
  });

  test('a provider that does not answer in time is a retryable timeout', async () => {
    const slow = createFalAdapter({ key: fake.key, queueUrl: fake.url, timeoutMs: 200 });
    fake.script('submit', { status: 200, delayMs: 1500, body: {} });
    const err = await errorOf(() => slow.submit(requestFor('nano-banana-2'), ctx));
    assert.ok(err instanceof ProviderError);
    assert.equal(err.retryable, true);
    assert.match(err.message, /timed out after 200 ms/);
  });
});
