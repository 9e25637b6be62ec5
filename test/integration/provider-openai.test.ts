// Contract tests of the OpenAI Images adapter (gpt-image-1.5, gpt-image-2) against a local server speaking the
// documented protocol; generated images land in real MinIO.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createOpenAIAdapter } from '../../providers/openai/adapter.js';
import { ProviderError } from '../../activities/providers/types.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-providers/openai.js';
import { errorOf, providerContext, requestFor, stackStorage } from '../support/fake-providers/context.js';

async function readAll(s: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of s) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

describe('OpenAI images adapter', () => {
  let fake: FakeOpenAI;
  const storage = stackStorage();
  const ctx = providerContext(storage);
  let openai: ReturnType<typeof createOpenAIAdapter>;

  before(async () => {
    fake = await startFakeOpenAI();
    openai = createOpenAIAdapter({ key: fake.key, baseUrl: fake.url, timeoutMs: 2000 });
  });
  after(() => fake.close());

  test('generates, decodes b64_json into the store as jobs/<id>/<token>/output-<n>.png, and polls as done', async () => {
    const req = requestFor('gpt-image-1.5', { count: 2, aspectRatio: '16:9' });
    const ref = await openai.submit(req, ctx);
    const call = fake.requestsOf('images').at(-1)!;
    assert.equal(call.headers.authorization, `Bearer ${fake.key}`);
    assert.equal(call.headers['idempotency-key'], undefined, 'the Images API documents no idempotency key; nothing relies on one');
    assert.deepEqual(call.json, { model: 'gpt-image-1.5', prompt: req.prompt, n: 2, size: '1536x1024', output_format: 'png' });

    const result = await openai.poll(ref, ctx);
    assert.equal(result.state, 'succeeded');
    assert.deepEqual(
      result.outputs!.map((o) => o.key),
      [`${storage.jobMediaPrefix(req.jobId)}/output-1.png`, `${storage.jobMediaPrefix(req.jobId)}/output-2.png`],
    );
    for (const o of result.outputs!) {
      assert.equal(o.url, undefined, 'no provider URL: the bytes are already ours');
      const bytes = await readAll(await storage.getStream(o.key!));
      assert.deepEqual([...bytes.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);
      assert.equal((await storage.stat(o.key!))?.contentType, 'image/png');
    }
    assert.ok(JSON.stringify(ref).length < 1000, 'the ref holds keys, not image bytes');
  });

  test('a retried submit reuses the images an earlier attempt stored, instead of paying for them twice', async () => {
    const req = requestFor('gpt-image-1.5', { aspectRatio: '9:16', count: 2 });
    const before = fake.generations;
    const first = await openai.submit(req, ctx);
    const again = await openai.submit(req, ctx);
    assert.equal(fake.generations, before + 1);
    assert.deepEqual(again, first);
    assert.equal((fake.requestsOf('images').at(-1)!.json as { size: string }).size, '1024x1536');
  });

  test('gpt-image-2 is sent the exact size of each aspect ratio, and the fake refuses a size outside its limits', async () => {
    for (const [ratio, size] of [
      ['16:9', '2560x1440'],
      ['9:16', '1440x2560'],
      ['1:1', '1920x1920'],
    ] as const) {
      const req = requestFor('gpt-image-2', { aspectRatio: ratio });
      const ref = await openai.submit(req, ctx);
      assert.deepEqual(fake.requestsOf('images').at(-1)!.json, { model: 'gpt-image-2', prompt: req.prompt, n: 1, size, output_format: 'png' });
      assert.equal(fake.lastSize, size);
      assert.equal((await openai.poll(ref, ctx)).state, 'succeeded');
    }
    const post = (model: string, size: string) =>
      fetch(`${fake.url}/v1/images/generations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${fake.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model, prompt: 'a cat', size }),
      });
    for (const size of ['3856x2160', '3840x2176', '1000x1000', '3840x1264']) {
      const res = await post('gpt-image-2', size);
      assert.equal(res.status, 400, size);
      assert.equal(((await res.json()) as { error: { param: string } }).error.param, 'size');
    }
    assert.equal((await post('gpt-image-2', '3840x2160')).status, 200, 'the largest documented size is taken');
    assert.equal((await post('gpt-image-1.5', '2560x1440')).status, 400, 'gpt-image-1.5 keeps its three fixed sizes');
  });

  test('the fake replays nothing: two calls are two paid generations, whatever their headers', async () => {
    const before = fake.generations;
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${fake.url}/v1/images/generations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${fake.key}`, 'content-type': 'application/json', 'idempotency-key': 'same-key' },
        body: JSON.stringify({ model: 'gpt-image-1.5', prompt: 'a cat' }),
      });
      assert.equal(res.status, 200);
    }
    assert.equal(fake.generations, before + 2);
  });

  test('a field the Images API does not define is refused by the fake', async () => {
    const res = await fetch(`${fake.url}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${fake.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-image-1.5', prompt: 'a cat', aspect_ratio: '16:9' }),
    });
    assert.equal(res.status, 400);
    assert.match(JSON.stringify(await res.json()), /aspect_ratio/);
  });

  test('a 429 insufficient_quota is final (the account is out of credit), unlike a rate limit', async () => {
    fake.outOfQuota = true;
    try {
      const err = await errorOf(() => openai.submit(requestFor('gpt-image-1.5'), ctx));
      assert.ok(err instanceof ProviderError);
      assert.equal(err.retryable, false);
      assert.equal(err.status, 429);
      assert.match(err.message, /no quota left \(HTTP 429\); check its billing: You exceeded your current quota.*\(insufficient_quota\)/);
    } finally {
      fake.outOfQuota = false;
    }
  });

  test("a base URL inherited with the SDK's trailing /v1 does not yield /v1/v1", async () => {
    const withV1 = createOpenAIAdapter({ key: fake.key, baseUrl: `${fake.url}/v1/`, timeoutMs: 2000 });
    await withV1.submit(requestFor('gpt-image-1.5'), ctx);
    assert.equal(fake.requests.at(-1)!.path, '/v1/images/generations');
    assert.equal(fake.requests.at(-1)!.op, 'images');
  });

  test('a 500 is retryable and the retried submit succeeds', async () => {
    fake.script('images', {
      status: 500,
      body: { error: { message: 'The server had an error while processing your request.', type: 'server_error', param: null, code: null } },
    });
    const req = requestFor('gpt-image-1.5');
    const err = await errorOf(() => openai.submit(req, ctx));
    assert.ok(err instanceof ProviderError);
    assert.equal(err.retryable, true);
    assert.match(err.message, /OpenAI image generation: provider error \(HTTP 500\): The server had an error/);
    assert.equal((await openai.poll(await openai.submit(req, ctx), ctx)).state, 'succeeded');
  });

  test('a 429 honours the x-ratelimit-reset-requests hint', async () => {
    fake.script('images', {
      status: 429,
      headers: { 'x-ratelimit-reset-requests': '1.5s', 'x-ratelimit-remaining-requests': '0' },
      body: { error: { message: 'Rate limit reached for images per minute.', type: 'requests', param: null, code: 'rate_limit_exceeded' } },
    });
    const err = await errorOf(() => openai.submit(requestFor('gpt-image-1.5'), ctx));
    assert.ok(err instanceof ProviderError);
    assert.equal(err.retryable, true);
    assert.equal(err.retryAfterMs, 1500);
    assert.match(err.message, /rate limited \(HTTP 429\); retry after 2 s: Rate limit reached for images per minute\. \(rate_limit_exceeded\)/);
  });

  test('a safety-system refusal is a non-retryable content-policy failure', async () => {
    const err = await errorOf(() => openai.submit(requestFor('gpt-image-1.5', { prompt: 'something forbidden' }), ctx));
    assert.ok(err instanceof ProviderError);
    assert.equal(err.retryable, false);
    assert.equal(err.status, 400);
    assert.match(
      err.message,
      /rejected by the provider's content policy \(HTTP 400\): Your request was rejected as a result of our safety system\. \(moderation_blocked\)/,
    );
  });

  test('a malformed answer is a clear error, and bad credentials never echo the key', async () => {
    fake.script('images', { status: 200, body: { created: 1, data: [{ url: 'https://example.invalid/a.png' }] } });
    const err = await errorOf(() => openai.submit(requestFor('gpt-image-1.5'), ctx));
    assert.equal(err.message, 'OpenAI image generation: malformed answer: image 1 has no b64_json');

    fake.script('images', { status: 200, body: { created: 1, data: [{ b64_json: Buffer.from('not a png at all').toString('base64') }] } });
    assert.match((await errorOf(() => openai.submit(requestFor('gpt-image-1.5'), ctx))).message, /image 1 is not a PNG/);

    const wrong = createOpenAIAdapter({ key: 'sk-wrong-key-123456', baseUrl: fake.url, timeoutMs: 2000 });
    const denied = await errorOf(() => wrong.submit(requestFor('gpt-image-1.5'), ctx));
    assert.equal((denied as ProviderError).retryable, false);
    assert.match(denied.message, /refused our credentials \(HTTP 401\)/);
    assert.ok(!denied.message.includes('sk-wrong-key-123456'));
  });

  test('cancel after a synchronous generation is a harmless no-op', async () => {
    const ref = await openai.submit(requestFor('gpt-image-1.5'), ctx);
    const calls = fake.requests.length;
    await openai.cancel(ref, ctx);
    assert.equal(fake.requests.length, calls);
  });
});
