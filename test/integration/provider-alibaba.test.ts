// Contract tests of the Alibaba Cloud Model Studio (DashScope) adapter, replace-actor's second route,
// against a local server speaking the task protocol of providers/alibaba/contract.ts: the submit body and
// headers (async header, Bearer key), the conformed inputs as presigned URLs of our store, polling
// PENDING → RUNNING → SUCCEEDED / FAILED, the result URL, cancel of a pending task, and how errors are
// classed (outage and throttling: retried, then failover; arrears and credentials: our account,
// failover at once; moderation and invalid input: the customer's, final).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { alibabaAnimateMixMode, createAlibabaAdapter, dashscopeOrigin } from '../../providers/alibaba/adapter.js';
import { alibaba as alibabaProvider } from '../../providers/alibaba/descriptor.js';
import { hostMatches } from '../../activities/providers/hosts.js';
import { ProviderError, type InputFile } from '../../activities/providers/types.js';
import { routeFor, requestRefusal } from '../../shared/catalog.js';
import { resolveJobRoute } from '../../shared/routing.js';
import { startFakeAlibaba, type FakeAlibaba } from '../support/fake-providers/alibaba.js';
import { errorOf, pollToEnd, providerContext, requestFor, stackStorage, storeInput, storeMotionVideo } from '../support/fake-providers/context.js';
import { probeUrl } from '../support/fixtures.js';
import { liveKeys } from '../support/provider-keys.js';

describe('Alibaba Model Studio (DashScope, Wan 2.2 Animate Mix) adapter', () => {
  let fake: FakeAlibaba;
  const storage = stackStorage();
  const ctx = providerContext(storage);
  let alibaba: ReturnType<typeof createAlibabaAdapter>;
  let inputs: InputFile[];
  const replace = (over: Parameters<typeof requestFor>[1] = {}) =>
    requestFor('replace-actor', { providerModelId: 'wan2.2-animate-mix', duration: 3, inputs, ...over });
  const lastSubmit = () => fake.requestsOf('submit').at(-1)!;

  before(async () => {
    fake = await startFakeAlibaba();
    alibaba = createAlibabaAdapter({ key: fake.key, baseUrl: fake.url, timeoutMs: 5000 });
    inputs = [await storeInput(storage, 'image'), await storeMotionVideo(storage)];
  });
  after(() => fake.close());

  test('submits wan2.2-animate-mix with the async header, the Bearer key and the documented body, polls PENDING → RUNNING → SUCCEEDED, and returns results.video_url', async () => {
    const ref = await alibaba.submit(replace({ prompt: 'not a field of this model' }), ctx);
    const call = lastSubmit();
    assert.equal(call.path, '/api/v1/services/aigc/image2video/video-synthesis');
    assert.equal(call.headers['x-dashscope-async'], 'enable');
    assert.equal(call.headers.authorization, `Bearer ${fake.key}`);
    assert.match(String(call.headers['content-type']), /^application\/json/);
    const body = call.json as { model: string; input: { image_url: string; video_url: string }; parameters: unknown };
    assert.deepEqual(Object.keys(body).sort(), ['input', 'model', 'parameters']);
    assert.equal(body.model, 'wan2.2-animate-mix');
    assert.deepEqual(Object.keys(body.input).sort(), ['image_url', 'video_url'], 'no prompt: the model has none');
    assert.deepEqual(body.parameters, { mode: 'wan-std' });
    assert.equal(alibabaAnimateMixMode, 'wan-std');
    // The inputs are presigned URLs of our store (the conformed copies), which DashScope downloaded.
    for (const url of [body.input.image_url, body.input.video_url])
      assert.ok(
        fake.fetchedInputs.some((f) => f.url === url && f.bytes > 0),
        `fetched ${url}`,
      );
    assert.match(body.input.video_url, /\/motion-3s-720x1280\.mp4\?/);
    assert.match(body.input.image_url, /\/actor-720x1280\.png\?/);
    assert.equal(ref.provider, 'alibaba');
    assert.equal(typeof ref.taskId, 'string');

    const seen = await pollToEnd(alibaba, ref, ctx);
    assert.deepEqual(
      seen.map((s) => s.state),
      ['queued', 'running', 'succeeded'],
    );
    assert.equal(fake.requestsOf('status').at(-1)!.path, `/api/v1/tasks/${String(ref.taskId)}`);
    assert.equal(fake.requestsOf('status').at(-1)!.headers.authorization, `Bearer ${fake.key}`);
    const out = seen.at(-1)!.outputs![0]!;
    assert.equal(out.url, `${fake.url}/files/${String(ref.taskId)}.mp4?Expires=1&Signature=x`);
    assert.equal(alibaba.outputHeaders, undefined, 'the signed result URL is fetched without our key');
    assert.ok(hostMatches('dashscope-result-bj.oss-cn-beijing.aliyuncs.com', alibabaProvider.outputHosts.hosts));
    assert.ok(!hostMatches('someone-else.oss-cn-beijing.aliyuncs.com', alibabaProvider.outputHosts.hosts), "another tenant's bucket on the same cloud");
    assert.ok(!hostMatches('aliyuncs.com.example.org', alibabaProvider.outputHosts.hosts));
  });

  test('the motion video is conformed to the asked duration and aspect ratio at 720p, the actor image to the same frame', async () => {
    const video = await storeMotionVideo(storage);
    const image = await storeInput(storage, 'image');
    for (const [duration, aspectRatio, width, height] of [
      [3, '16:9', 1280, 720],
      [6, '1:1', 720, 720],
    ] as const) {
      await alibaba.submit(replace({ duration, aspectRatio, inputs: [image, video] }), ctx);
      const { input } = lastSubmit().json as { input: { image_url: string; video_url: string } };
      const sent = await probeUrl(input.video_url);
      assert.equal(sent.width, width);
      assert.equal(sent.height, height);
      assert.ok(Math.abs(sent.durationSeconds! - duration) < 0.15, `asked ${duration} s, sent ${sent.durationSeconds} s`);
      const actor = await probeUrl(input.image_url);
      assert.deepEqual([actor.width, actor.height], [width, height]);
    }
  });

  test('a base URL given with the SDK’s /api/v1 does not yield /api/v1/api/v1', async () => {
    assert.equal(dashscopeOrigin('https://dashscope-intl.aliyuncs.com/api/v1/'), 'https://dashscope-intl.aliyuncs.com');
    const withApi = createAlibabaAdapter({ key: fake.key, baseUrl: `${fake.url}/api/v1`, timeoutMs: 5000 });
    const ref = await withApi.submit(replace(), ctx);
    assert.equal(lastSubmit().path, '/api/v1/services/aigc/image2video/video-synthesis');
    await withApi.poll(ref, ctx);
    assert.equal(fake.requestsOf('status').at(-1)!.path, `/api/v1/tasks/${String(ref.taskId)}`);
  });

  test('a FAILED task is final with its code and message; moderation (DataInspectionFailed) too; an unknown task fails clearly', async () => {
    fake.nextOutcome('failed');
    const failed = (await pollToEnd(alibaba, await alibaba.submit(replace(), ctx), ctx)).at(-1)!;
    assert.equal(failed.state, 'failed');
    assert.equal(failed.message, 'Alibaba: request rejected: The character in the image could not be detected. (InvalidParameter)');

    fake.nextOutcome('moderated');
    const moderated = (await pollToEnd(alibaba, await alibaba.submit(replace(), ctx), ctx)).at(-1)!;
    assert.equal(moderated.state, 'failed');
    assert.match(moderated.message!, /content moderation: Output data may contain inappropriate content\. \(DataInspectionFailed\)/);

    const unknown = await alibaba.poll({ provider: 'alibaba', jobId: 'job_x', taskId: 'no-such-task' }, ctx);
    assert.equal(unknown.state, 'failed');
    assert.match(unknown.message!, /unknown to the provider/);
  });

  test('5xx, a task FAILED with InternalError and 429 throttling are retryable (then failover); polling goes on after a 5xx', async () => {
    fake.nextOutcome('unavailable');
    const down = await errorOf(() => alibaba.submit(replace(), ctx));
    assert.ok(down instanceof ProviderError);
    assert.equal(down.retryable, true);
    assert.equal(down.account, false);
    assert.match(down.message, /Alibaba video synthesis: provider error \(HTTP 503\): The service is temporarily unavailable\. \(ServiceUnavailable\)/);

    fake.nextOutcome('throttled');
    const limited = await errorOf(() => alibaba.submit(replace(), ctx));
    assert.ok(limited instanceof ProviderError);
    assert.equal(limited.retryable, true);
    assert.equal(limited.status, 429);
    assert.match(limited.message, /rate limited \(HTTP 429\).*Throttling\.RateQuota/);

    const ref = await alibaba.submit(replace(), ctx);
    fake.script('status', { status: 500, body: { request_id: 'r', code: 'InternalError', message: 'An internal error has occured.' } });
    assert.equal((await errorOf(() => alibaba.poll(ref, ctx))).retryable, true);
    assert.equal((await pollToEnd(alibaba, ref, ctx)).at(-1)!.state, 'succeeded');

    fake.nextOutcome('internal');
    const ref2 = await alibaba.submit(replace(), ctx);
    await alibaba.poll(ref2, ctx);
    await alibaba.poll(ref2, ctx);
    const taskErr = await errorOf(() => alibaba.poll(ref2, ctx));
    assert.ok(taskErr instanceof ProviderError);
    assert.equal(taskErr.retryable, true);
    assert.match(taskErr.message, /provider error: An internal error has occured, please try again later\. \(InternalError\)/);
  });

  test('Arrearage (overdue payment) and a wrong key are our account: no retry, failover at once; the key never appears in a message', async () => {
    fake.nextOutcome('arrearage');
    const arrears = await errorOf(() => alibaba.submit(replace(), ctx));
    assert.ok(arrears instanceof ProviderError);
    assert.equal(arrears.account, true);
    assert.equal(arrears.retryable, false);
    assert.match(arrears.message, /in arrears \(HTTP 400\); check its billing: .*\(Arrearage\)/);

    const wrong = createAlibabaAdapter({ key: 'sk-wrong-key-0000', baseUrl: fake.url, timeoutMs: 5000 });
    const err = await errorOf(() => wrong.submit(replace(), ctx));
    assert.ok(err instanceof ProviderError);
    assert.equal(err.account, true);
    assert.equal(err.retryable, false);
    assert.match(err.message, /refused our credentials \(HTTP 401\).*InvalidApiKey/);
    assert.ok(!err.message.includes('sk-wrong-key-0000'));
  });

  test('moderation of the inputs and InvalidParameter are the request’s fault: final, not retried, not an account error', async () => {
    fake.nextOutcome('moderated-input');
    const moderated = await errorOf(() => alibaba.submit(replace(), ctx));
    assert.ok(moderated instanceof ProviderError);
    assert.equal(moderated.retryable, false);
    assert.equal(moderated.account, false);
    assert.match(
      moderated.message,
      /rejected by the provider's content moderation \(HTTP 400\): Input data may contain inappropriate content\. \(DataInspectionFailed\)/,
    );

    fake.script('submit', {
      status: 400,
      body: { request_id: 'r', code: 'InvalidParameter', message: 'The video duration must be between 2 and 30 seconds.' },
    });
    const invalid = await errorOf(() => alibaba.submit(replace(), ctx));
    assert.ok(invalid instanceof ProviderError);
    assert.equal(invalid.retryable, false);
    assert.equal(invalid.account, false);
    assert.match(invalid.message, /request rejected \(HTTP 400\): The video duration must be between 2 and 30 seconds\. \(InvalidParameter\)/);
  });

  test('the fake refuses a call without the async header and a body outside the contract', async () => {
    const res = await fetch(`${fake.url}/api/v1/services/aigc/image2video/video-synthesis`, {
      method: 'POST',
      headers: { authorization: `Bearer ${fake.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'wan2.2-animate-mix',
        input: { image_url: 'https://example.test/i.png', video_url: 'https://example.test/v.mp4' },
        parameters: { mode: 'wan-std' },
      }),
    });
    assert.equal(res.status, 403);
    const withPrompt = await fetch(`${fake.url}/api/v1/services/aigc/image2video/video-synthesis`, {
      method: 'POST',
      headers: { authorization: `Bearer ${fake.key}`, 'content-type': 'application/json', 'x-dashscope-async': 'enable' },
      body: JSON.stringify({
        model: 'wan2.2-animate-mix',
        input: { image_url: 'https://example.test/i.png', video_url: 'https://example.test/v.mp4', prompt: 'x' },
        parameters: { mode: 'wan-max' },
      }),
    });
    assert.equal(withPrompt.status, 400);
    assert.equal(((await withPrompt.json()) as { code: string }).code, 'InvalidParameter');
  });

  test('a malformed answer is a clear error', async () => {
    fake.script('submit', { status: 200, body: { request_id: 'r', output: { task_status: 'PENDING' } } });
    assert.equal((await errorOf(() => alibaba.submit(replace(), ctx))).message, 'Alibaba video synthesis: malformed answer: no output.task_id in the answer');
    const ref = await alibaba.submit(replace(), ctx);
    fake.script('status', { status: 200, body: { request_id: 'r', output: { task_id: ref.taskId, task_status: 'SUCCEEDED', results: {} } } });
    assert.equal((await errorOf(() => alibaba.poll(ref, ctx))).message, 'Alibaba status: malformed answer: a SUCCEEDED task without a video_url');
  });

  test('cancel: a PENDING task is canceled with POST /tasks/{id}/cancel; a running one cannot be, and that is not an error', async () => {
    const ref = await alibaba.submit(replace(), ctx);
    await alibaba.cancel(ref, ctx);
    const call = fake.requestsOf('cancel').at(-1)!;
    assert.equal(call.path, `/api/v1/tasks/${String(ref.taskId)}/cancel`);
    assert.equal(call.headers.authorization, `Bearer ${fake.key}`);
    const end = (await pollToEnd(alibaba, ref, ctx)).at(-1)!;
    assert.equal(end.state, 'failed');
    assert.match(end.message!, /canceled at the provider/);

    const running = await alibaba.submit(replace(), ctx);
    await alibaba.poll(running, ctx);
    await alibaba.cancel(running, ctx);
    assert.equal(fake.requestsOf('cancel').length, 2);
    assert.equal((await pollToEnd(alibaba, running, ctx)).at(-1)!.state, 'succeeded', 'a running task runs to its end');

    fake.script('cancel', { status: 503, body: { request_id: 'r', code: 'ServiceUnavailable', message: 'busy' } });
    assert.equal((await errorOf(() => alibaba.cancel(running, ctx))).retryable, true);
  });

  test('the adapter refuses what is not replace-actor or lacks an input', async () => {
    const wrongKind = await errorOf(() => alibaba.submit(requestFor('veo-3.1', { providerModelId: 'wan2.2-animate-mix' }), ctx));
    assert.equal(wrongKind.retryable, false);
    const missing = await errorOf(() => alibaba.submit(replace({ inputs: [inputs[0]!] }), ctx));
    assert.match(missing.message, /needs a character image and a motion video/);
  });

  test('routing: replace-actor fails over from fal to alibaba; with only DASHSCOPE_API_KEY alibaba serves it; PROVIDER_ROUTES can put it first', () => {
    const route = routeFor('replace-actor')!;
    const keys = liveKeys({ FAL_KEY: 'k-fal-1234', DASHSCOPE_API_KEY: 'k-ds-1234' });
    const job = { image_file_id: 'upl_1', video_file_id: 'upl_2', duration: 30, aspect_ratio: '9:16', resolution: '720p' };
    const both = resolveJobRoute(keys, route, job);
    assert.equal(both?.provider, 'fal');
    assert.deepEqual(both?.routes, [
      { provider: 'fal', provider_model_id: 'fal-ai/wan/v2.2-14b/animate/replace' },
      { provider: 'alibaba', provider_model_id: 'wan2.2-animate-mix' },
    ]);
    for (const aspect_ratio of route.aspectRatios)
      for (const duration of [3, 30]) assert.equal(requestRefusal(route, { ...job, aspect_ratio, duration }, 'alibaba'), undefined);
    // Every duration the model takes is inside the 2–30 s Alibaba allows for the motion video.
    const d = route.durations as { min: number; max: number };
    assert.ok(d.min >= 2 && d.max <= 30);

    const alibabaOnly = resolveJobRoute({ ...keys, FAL_KEY: undefined }, route, job);
    assert.equal(alibabaOnly?.provider, 'alibaba');
    assert.equal(alibabaOnly?.provider_model_id, 'wan2.2-animate-mix');
    assert.equal(alibabaOnly?.routes, undefined);

    const first = resolveJobRoute({ ...keys, PROVIDER_ROUTES: 'replace-actor=alibaba,fal' }, route, job);
    assert.deepEqual(
      first?.routes?.map((r) => r.provider),
      ['alibaba', 'fal'],
    );
  });
});
