// Contract tests of the Azure OpenAI adapter (gpt-image-1.5's second route) against a local server
// speaking Microsoft's documented protocol; generated images land in real MinIO. The openai SDK's own
// AzureOpenAI client is run against the same fake, so the URL, query and header the adapter sends are
// the ones the SDK builds.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { AzureOpenAI } from 'openai';
import { azureImagesUrl, createAzureAdapter } from '../../providers/azure/adapter.js';
import { azureImageSizes } from '../../providers/azure/contract.js';
import { ProviderError } from '../../activities/providers/types.js';
import { routeFor, requestRefusal } from '../../shared/catalog.js';
import { resolveJobRoute } from '../../shared/routing.js';
import { startFakeAzure, type FakeAzure } from '../support/fake-providers/azure.js';
import { errorOf, providerContext, requestFor, stackStorage } from '../support/fake-providers/context.js';
import { liveKeys } from '../support/provider-keys.js';

describe('Azure OpenAI images adapter', () => {
  let fake: FakeAzure;
  const storage = stackStorage();
  const ctx = providerContext(storage);
  let azure: ReturnType<typeof createAzureAdapter>;

  before(async () => {
    fake = await startFakeAzure();
    azure = createAzureAdapter({ key: fake.key, endpoint: fake.url, deployment: fake.deployment, timeoutMs: 2000 });
  });
  after(() => fake.close());

  test('posts to the deployment with api-key and api-version, and stores the b64_json images as PNGs', async () => {
    const req = requestFor('gpt-image-1.5', { count: 2, aspectRatio: '16:9', providerModelId: 'gpt-image-1.5' });
    const ref = await azure.submit(req, ctx);
    const call = fake.requestsOf('images').at(-1)!;
    assert.equal(call.path, '/openai/deployments/gpt-image-1.5/images/generations');
    assert.equal(call.query.get('api-version'), '2025-04-01-preview');
    assert.equal(call.headers['api-key'], fake.key);
    assert.equal(call.headers.authorization, undefined, 'an API key goes in api-key, not Authorization');
    assert.deepEqual(call.json, { model: 'gpt-image-1.5', prompt: req.prompt, n: 2, size: '1536x1024', output_format: 'png' });

    const result = await azure.poll(ref, ctx);
    assert.equal(result.state, 'succeeded');
    assert.deepEqual(
      result.outputs!.map((o) => o.key),
      [`${storage.jobMediaPrefix(req.jobId)}/output-1.png`, `${storage.jobMediaPrefix(req.jobId)}/output-2.png`],
    );
    for (const o of result.outputs!) assert.equal((await storage.stat(o.key!))?.contentType, 'image/png');
  });

  test("the SDK's AzureOpenAI client sends the same request the adapter does, and the fake accepts it", async () => {
    const sdk = new AzureOpenAI({ apiKey: fake.key, endpoint: fake.url, apiVersion: '2025-04-01-preview', maxRetries: 0 });
    const answer = await sdk.images.generate({ model: fake.deployment, prompt: 'a lighthouse at dusk', n: 1, size: '1024x1536', output_format: 'png' });
    assert.ok(answer.data?.[0]?.b64_json);
    const sdkCall = fake.requestsOf('images').at(-1)!;
    assert.equal(sdkCall.path, '/openai/deployments/gpt-image-1.5/images/generations');
    assert.equal(sdkCall.query.get('api-version'), '2025-04-01-preview');
    assert.equal(sdkCall.headers['api-key'], fake.key);
    assert.deepEqual(Object.keys(sdkCall.json as object).sort(), ['model', 'n', 'output_format', 'prompt', 'size'], 'the same fields the adapter sends');
    assert.equal(
      azureImagesUrl(fake.url, fake.deployment, '2025-04-01-preview'),
      `${fake.url}/openai/deployments/gpt-image-1.5/images/generations?api-version=2025-04-01-preview`,
    );
  });

  test("api-version v1 or preview calls Microsoft's v1 API: /openai/v1/images/generations, the deployment named by model", async () => {
    for (const [apiVersion, query] of [
      ['preview', 'preview'],
      ['v1', null],
    ] as const) {
      const a = createAzureAdapter({ key: fake.key, endpoint: `${fake.url}/openai/v1/`, deployment: fake.deployment, apiVersion, timeoutMs: 2000 });
      const req = requestFor('gpt-image-1.5', { count: 1, aspectRatio: '9:16', providerModelId: 'gpt-image-1.5' });
      const ref = await a.submit(req, ctx);
      const call = fake.requestsOf('images').at(-1)!;
      assert.equal(call.path, '/openai/v1/images/generations', apiVersion);
      assert.equal(call.query.get('api-version'), query, `${apiVersion}: the api-version sent`);
      assert.equal(call.headers['api-key'], fake.key);
      assert.deepEqual(call.json, { model: fake.deployment, prompt: req.prompt, n: 1, size: '1024x1536', output_format: 'png' });
      assert.equal((await a.poll(ref, ctx)).state, 'succeeded', apiVersion);
    }
    // The v1 path has no deployment segment: without `model` the fake refuses the call, as the reference requires it.
    const res = await fetch(azureImagesUrl(fake.url, fake.deployment, 'preview'), {
      method: 'POST',
      headers: { 'api-key': fake.key, 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'a lighthouse' }),
    });
    assert.equal(res.status, 400);
  });

  test('an endpoint given with the SDK base (/openai) or a trailing slash, a configured deployment and api-version', async () => {
    const fake2 = await startFakeAzure(undefined, 'img-prod');
    try {
      const a = createAzureAdapter({
        key: fake2.key,
        endpoint: `${fake2.url}/openai/`,
        deployment: 'img-prod',
        apiVersion: '2025-05-01-preview',
        timeoutMs: 2000,
      });
      await a.submit(requestFor('gpt-image-1.5'), ctx);
      const call = fake2.requestsOf('images').at(-1)!;
      assert.equal(call.path, '/openai/deployments/img-prod/images/generations');
      assert.equal(call.query.get('api-version'), '2025-05-01-preview');
      const wrongDeployment = createAzureAdapter({ key: fake2.key, endpoint: fake2.url, deployment: 'gpt-image-1.5', timeoutMs: 2000 });
      const err = await errorOf(() => wrongDeployment.submit(requestFor('gpt-image-1.5'), ctx));
      assert.equal(err.retryable, false);
      assert.match(err.message, /HTTP 404.*DeploymentNotFound/);
    } finally {
      await fake2.close();
    }
  });

  test('every size the adapter sends is one the contract allows, for every aspect ratio of the model', async () => {
    const route = routeFor('gpt-image-1.5')!;
    for (const aspectRatio of route.aspectRatios) {
      await azure.submit(requestFor('gpt-image-1.5', { aspectRatio }), ctx);
      const size = (fake.requestsOf('images').at(-1)!.json as { size: string }).size;
      assert.ok((azureImageSizes as readonly string[]).includes(size), size);
    }
  });

  test('a retried submit reuses the images an earlier attempt stored, instead of paying for them twice', async () => {
    const req = requestFor('gpt-image-1.5', { count: 2 });
    const before = fake.generations;
    const first = await azure.submit(req, ctx);
    assert.deepEqual(await azure.submit(req, ctx), first);
    assert.equal(fake.generations, before + 1);
  });

  test('a field or size the contract does not define is refused by the fake', async () => {
    for (const body of [
      { prompt: 'a cat', aspect_ratio: '16:9' },
      { prompt: 'a cat', size: '1792x1024' },
      { prompt: 'a cat', output_format: 'webp' },
      { prompt: 'x'.repeat(4001) },
    ]) {
      const res = await fetch(azureImagesUrl(fake.url, fake.deployment, '2025-04-01-preview'), {
        method: 'POST',
        headers: { 'api-key': fake.key, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      assert.equal(res.status, 400, JSON.stringify(body).slice(0, 60));
    }
  });

  test('content filtering is final (no retry, no failover): error.code contentFilter and inner_error ResponsibleAIPolicyViolation', async () => {
    for (const prompt of ['something forbidden', 'a jailbreak attempt']) {
      const err = await errorOf(() => azure.submit(requestFor('gpt-image-1.5', { prompt }), ctx));
      assert.ok(err instanceof ProviderError);
      assert.equal(err.retryable, false);
      assert.equal(err.account, false, 'another provider cannot fix a refused prompt');
      assert.equal(err.status, 400);
      assert.match(
        err.message,
        /Azure OpenAI image generation: rejected by the provider's content filter \(HTTP 400\): Your (task failed|request was rejected) as a result of our safety system/,
      );
    }
  });

  test('429 and 5xx are retried (then failover); 401 and 403 are our account (failover at once); other 4xx are final', async () => {
    fake.script('images', {
      status: 429,
      headers: { 'retry-after': '3' },
      body: { error: { code: '429', message: 'Requests to the Images_Generations API have exceeded the rate limit of your current tier.' } },
    });
    const limited = (await errorOf(() => azure.submit(requestFor('gpt-image-1.5'), ctx))) as ProviderError;
    assert.equal(limited.retryable, true);
    assert.equal(limited.retryAfterMs, 3000);

    fake.script('images', { status: 503, body: { error: { code: 'ServiceUnavailable', message: 'The service is temporarily unavailable.' } } });
    assert.equal(((await errorOf(() => azure.submit(requestFor('gpt-image-1.5'), ctx))) as ProviderError).retryable, true);

    fake.script('images', { status: 403, body: { error: { code: '403', message: 'Public access is disabled.' } } });
    const forbidden = (await errorOf(() => azure.submit(requestFor('gpt-image-1.5'), ctx))) as ProviderError;
    assert.equal(forbidden.account, true);

    const wrong = createAzureAdapter({ key: 'azure-wrong-key-123456', endpoint: fake.url, deployment: fake.deployment, timeoutMs: 2000 });
    const denied = (await errorOf(() => wrong.submit(requestFor('gpt-image-1.5'), ctx))) as ProviderError;
    assert.equal(denied.account, true);
    assert.match(denied.message, /refused our credentials \(HTTP 401\)/);
    assert.ok(!denied.message.includes('azure-wrong-key-123456'));

    fake.script('images', {
      status: 400,
      body: { error: { code: 'invalid_value', message: 'Invalid value for n.', param: 'n', type: 'invalid_request_error' } },
    });
    const invalid = (await errorOf(() => azure.submit(requestFor('gpt-image-1.5'), ctx))) as ProviderError;
    assert.equal(invalid.retryable, false);
    assert.equal(invalid.account, false);
  });

  test('a malformed answer is a clear error', async () => {
    fake.script('images', { status: 200, body: { created: 1, data: [{ url: 'https://example.invalid/a.png' }] } });
    assert.equal(
      (await errorOf(() => azure.submit(requestFor('gpt-image-1.5'), ctx))).message,
      'Azure OpenAI image generation: malformed answer: image 1 has no b64_json',
    );
  });

  test('routing: gpt-image-1.5 fails over from openai to azure for every job; azure is live only with key and endpoint', () => {
    const route = routeFor('gpt-image-1.5')!;
    const job = { prompt: 'a cat', aspect_ratio: '16:9', count: 2 };
    const keys = liveKeys({ OPENAI_API_KEY: 'k-oai-1234', AZURE_OPENAI_API_KEY: 'k-az-1234', AZURE_OPENAI_ENDPOINT: 'https://example.openai.azure.com' });
    const both = resolveJobRoute(keys, route, job);
    assert.equal(both?.provider, 'openai');
    assert.deepEqual(both?.routes, [
      { provider: 'openai', provider_model_id: 'gpt-image-1.5' },
      { provider: 'azure', provider_model_id: 'gpt-image-1.5' },
    ]);
    for (const aspect_ratio of route.aspectRatios) assert.equal(requestRefusal(route, { ...job, aspect_ratio, prompt: 'x'.repeat(4000) }, 'azure'), undefined);
    assert.equal(resolveJobRoute({ ...keys, AZURE_OPENAI_ENDPOINT: undefined }, route, job)?.routes, undefined, 'no endpoint: no azure route');
    const azureOnly = resolveJobRoute({ ...keys, OPENAI_API_KEY: undefined }, route, job);
    assert.equal(azureOnly?.provider, 'azure');
  });
});
