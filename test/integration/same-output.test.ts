// Same output whatever the route: for every model of the catalog with more than one route, and every
// pair of its routes, a request is either served with the same stored format, aspect ratio and
// resolution on both (each route's adapter runs against its provider's fake, which answers media of
// the shape the provider documents; the stored output is probed with ffprobe), or the alternate is
// not among the job's failover routes at create. The loop is over the catalog, so a new route is
// covered as soon as it is declared (a route without a fake here fails the test).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createOutputStore } from '../../activities/jobs/outputs.js';
import { createFalAdapter } from '../../providers/fal/adapter.js';
import { createByteplusAdapter } from '../../providers/byteplus/adapter.js';
import { createOpenAIAdapter } from '../../providers/openai/adapter.js';
import { createAzureAdapter } from '../../providers/azure/adapter.js';
import { createGoogleAdapter } from '../../providers/google/adapter.js';
import { createXaiAdapter } from '../../providers/xai/adapter.js';
import { ProviderError, type InputFile, type ProviderAdapter } from '../../activities/providers/types.js';
import { createAlibabaAdapter } from '../../providers/alibaba/adapter.js';
import { catalog, outputFrame, outputShape, routeFor, routeTakes, sameOutput, type ModelRoute } from '../../shared/catalog.js';
import { catalogRoutes, resolveJobRoute } from '../../shared/routing.js';
import { providerKeys } from '../../providers/index.js';
import type { ProviderName } from '../../shared/job-model.js';
import { startFakeFal, type FakeFal } from '../support/fake-providers/fal.js';
import { startFakeByteplus, type FakeByteplus } from '../support/fake-providers/byteplus.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-providers/openai.js';
import { startFakeAzure, type FakeAzure } from '../support/fake-providers/azure.js';
import { startFakeGoogle, type FakeGoogle } from '../support/fake-providers/google.js';
import { startFakeXai, type FakeXai } from '../support/fake-providers/xai.js';
import { startFakeAlibaba, type FakeAlibaba } from '../support/fake-providers/alibaba.js';
import { documentedMedia, shapedMedia } from '../support/fake-providers/media.js';
import { errorOf, pollToEnd, providerContext, requestFor, stackStorage, storeInput, storeMotionVideo } from '../support/fake-providers/context.js';
import { json } from '../support/fake-providers/server.js';
import { startHttpsTestServer, type HttpsTestServer } from '../support/https-server.js';
import { testConfig } from '../support/stack.js';

const run = promisify(execFile);

/** Every provider's keys set and failover on: every catalog route is live. */
const everyKey = {
  PROVIDERS_MODE: 'live' as const,
  PROVIDER_FAILOVER: true,
  ...Object.fromEntries(Object.values(providerKeys).flatMap((keys) => keys.map((k) => [k, k.endsWith('ENDPOINT') ? 'https://example.invalid' : 'set']))),
};

/** The requests tried per model: every aspect ratio at the default resolution, every resolution at the default aspect ratio. */
function requestsOf(route: ModelRoute): { aspect_ratio: string; resolution?: string }[] {
  const byAspect = route.aspectRatios.map((a) => ({ aspect_ratio: a, ...(route.defaultResolution ? { resolution: route.defaultResolution } : {}) }));
  const byResolution = (route.resolutions ?? [])
    .filter((r) => r !== route.defaultResolution)
    .map((r) => ({ aspect_ratio: route.defaultAspectRatio, resolution: r }));
  return [...byAspect, ...byResolution];
}

interface Probed {
  codec: string;
  width: number;
  height: number;
}

describe('same output whatever the route', () => {
  const storage = stackStorage();
  const ctx = providerContext(storage);
  let cdn: HttpsTestServer;
  let fal: FakeFal, byteplus: FakeByteplus, openai: FakeOpenAI, azure: FakeAzure, google: FakeGoogle, xai: FakeXai, alibaba: FakeAlibaba;
  let actorInputs: InputFile[];
  let adapters: Partial<Record<ProviderName, ProviderAdapter>>;
  let store: ReturnType<typeof createOutputStore>;

  before(async () => {
    documentedMedia.on = true;
    [cdn, fal, byteplus, openai, azure, google, xai, alibaba] = await Promise.all([
      startHttpsTestServer(),
      startFakeFal(),
      startFakeByteplus(),
      startFakeOpenAI(),
      startFakeAzure(),
      startFakeGoogle(),
      startFakeXai(),
      startFakeAlibaba(),
    ]);
    for (const f of [fal, byteplus, google, xai, alibaba]) f.filesBaseUrl = cdn.origin;
    // Replace actor's inputs: a real motion video and a character image.
    actorInputs = [await storeMotionVideo(storage), await storeInput(storage, 'image')];
    // The CDN serves each file a fake named, rendered at the shape its provider documents.
    cdn.fallback((req, res) => {
      void (async () => {
        const shape = await documentedMedia.files.get(new URL(req.url ?? '/', cdn.origin).pathname);
        if (!shape) return res.writeHead(404).end();
        const body = await shapedMedia(shape);
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(body.length) });
        res.end(body);
      })();
    });
    adapters = {
      fal: createFalAdapter({ key: fal.key, queueUrl: fal.url, timeoutMs: 5000 }),
      byteplus: createByteplusAdapter({ key: byteplus.key, baseUrl: byteplus.url, timeoutMs: 5000 }),
      openai: createOpenAIAdapter({ key: openai.key, baseUrl: openai.url, timeoutMs: 5000 }),
      azure: createAzureAdapter({ key: azure.key, endpoint: azure.url, deployment: 'gpt-image-1.5', timeoutMs: 5000 }),
      google: createGoogleAdapter({ key: google.key, baseUrl: google.url, timeoutMs: 5000 }),
      xai: createXaiAdapter({ key: xai.key, baseUrl: xai.url, timeoutMs: 5000 }),
      alibaba: createAlibabaAdapter({ key: alibaba.key, baseUrl: alibaba.url, timeoutMs: 5000 }),
    };
    const config = testConfig(process.env.DATABASE_URL ?? 'postgres://u:p@127.0.0.1:5432/unused', {
      FETCH_ALLOW_LOOPBACK_ORIGIN: cdn.origin,
      FETCH_EXTRA_CA_FILE: cdn.caFile,
      PROVIDER_OUTPUT_HOSTS: '127.0.0.1',
    });
    store = createOutputStore({ storage, config, adapterFor: (name) => adapters[name]!, heartbeat: () => undefined });
  });
  after(async () => {
    documentedMedia.on = false;
    await Promise.all([cdn, fal, byteplus, openai, azure, google, xai, alibaba].map((s) => s.close()));
  });

  /** Runs the request on one route and probes what was stored. */
  async function served(model: string, provider: ProviderName, providerModelId: string, p: { aspect_ratio: string; resolution?: string }) {
    const adapter = adapters[provider];
    assert.ok(adapter, `${model}: no fake for route ${provider} in this test; add one`);
    const route = routeFor(model)!;
    // Replace actor takes a motion video and an image, and is kept short (its inputs are conformed first).
    const actor = route.kind === 'replace_actor' ? { inputs: actorInputs, duration: 3 } : {};
    const req = requestFor(model, { aspectRatio: p.aspect_ratio, resolution: p.resolution, providerModelId, ...actor });
    const done = (await pollToEnd(adapter, await adapter.submit(req, ctx), ctx)).at(-1)!;
    assert.equal(done.state, 'succeeded', `${model} on ${provider}: ${JSON.stringify(done)}`);
    // The asked frame a route with an undocumented frame is scaled to, as the provider step does.
    const frame = outputFrame(route, provider, p);
    const [out] = await store(provider, req.jobId, done.outputs ?? [], true, frame);
    assert.ok(out, `${model} on ${provider}: no output stored`);
    return { stored: out, probed: await probe(out.key) };
  }

  async function probe(key: string): Promise<Probed> {
    const dir = await mkdtemp(join(tmpdir(), 'same-output-'));
    try {
      const chunks: Buffer[] = [];
      for await (const c of await storage.getStream(key)) chunks.push(c as Buffer);
      await writeFile(join(dir, 'f'), Buffer.concat(chunks));
      const { stdout } = await run(process.env.FFPROBE_PATH ?? 'ffprobe', ['-v', 'error', '-show_streams', '-of', 'json', join(dir, 'f')]);
      const video = (JSON.parse(stdout) as { streams: { codec_type: string; codec_name: string; width: number; height: number }[] }).streams.find(
        (s) => s.codec_type === 'video',
      )!;
      return { codec: video.codec_name, width: video.width, height: video.height };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  const comparedPairs = new Map<string, number>();
  const pairs = Object.values(catalog).flatMap((entry) => {
    const route = routeFor(entry.model)!;
    const routes = catalogRoutes(route);
    return routes.slice(1).map((alt) => ({ route, primary: routes[0]!, alt }));
  });

  test('the catalog has route pairs to compare', () => {
    assert.ok(pairs.length >= 5, `route pairs: ${pairs.length}`);
  });

  for (const { route, primary, alt } of pairs) {
    test(`${route.model}: ${primary.provider} and ${alt.provider} store the same output, or ${alt.provider} is not offered`, async () => {
      let compared = 0;
      for (const p of requestsOf(route)) {
        const job = resolveJobRoute(everyKey, route, { ...p, duration: route.defaultDuration });
        const offered = job?.routes?.some((r) => r.provider === alt.provider) ?? false;
        const primaryShape = outputShape(route, primary.provider, p);
        if (!offered) {
          // Not offered: for a reason the catalog states (the route cannot take the request, or
          // documents another output or none).
          const request = { ...p, duration: route.defaultDuration };
          assert.ok(
            !routeTakes(route, alt.provider, request) || !sameOutput(route, primary.provider, alt.provider, request),
            `${route.model} ${JSON.stringify(p)}: ${alt.provider} left out with no reason in the catalog`,
          );
          continue;
        }
        assert.equal(typeof primaryShape, 'object', `${route.model} ${JSON.stringify(p)}: offered with an undocumented shape: ${String(primaryShape)}`);
        const a = await served(route.model, primary.provider, primary.provider_model_id, p);
        const b = await served(route.model, alt.provider, alt.provider_model_id, p);
        const what = `${route.model} ${JSON.stringify(p)} on ${primary.provider} and ${alt.provider}`;
        assert.deepEqual(b.probed, a.probed, what);
        assert.equal(b.stored.content_type, a.stored.content_type, what);
        // And it is what the catalog says is delivered.
        const shape = primaryShape as Exclude<typeof primaryShape, string>;
        assert.equal(a.probed.codec, shape.format === 'png' ? 'png' : 'h264', what);
        if (shape.size) assert.equal(`${a.probed.width}x${a.probed.height}`, shape.size, what);
        if (shape.resolution) assert.equal(Math.min(a.probed.width, a.probed.height), Number.parseInt(shape.resolution, 10), what);
        const [w, h] = shape.aspectRatio.split(':').map(Number) as [number, number];
        if (route.kind !== 'image' || !route.servedAs) assert.ok(Math.abs(a.probed.width / a.probed.height - w / h) < 0.01, `${what}: aspect`);
        compared++;
      }
      comparedPairs.set(`${route.model}/${alt.provider}`, compared);
    });
  }

  test('every route pair that documents the same output, or is scaled to it, was compared', () => {
    // Google's Veo route is declared but not offered (providers/google/descriptor.ts `disabled`), so it has no pair.
    for (const pair of ['gpt-image-1.5/azure', 'seedream-4.5/byteplus', 'seedance-1.5/byteplus', 'grok-video/xai', 'replace-actor/alibaba'])
      assert.ok((comparedPairs.get(pair) ?? 0) > 0, `${pair} compared: ${JSON.stringify([...comparedPairs])}`);
  });

  test('a BytePlus Seedream JPEG is stored as PNG, and the conversion is reported', async () => {
    byteplus.imageFormat = 'jpeg';
    const req = requestFor('seedream-4.5', { aspectRatio: '16:9', providerModelId: 'seedream-4-5-251128' });
    const done = (await pollToEnd(adapters.byteplus!, await adapters.byteplus!.submit(req, ctx), ctx)).at(-1)!;
    assert.equal(done.outputs?.[0]?.contentType, 'image/jpeg');
    const [out] = await store('byteplus', req.jobId, done.outputs!, true);
    assert.deepEqual(
      { ...out!, size: 0 },
      { key: `${storage.jobMediaPrefix(req.jobId)}/output-1.png`, content_type: 'image/png', size: 0, converted_from: 'image/jpeg' },
    );
    assert.deepEqual(await probe(out!.key), { codec: 'png', width: 2560, height: 1440 });
    assert.ok(!(await storage.stat(`${storage.jobMediaPrefix(req.jobId)}/output-1.jpg`)), 'the JPEG is not kept beside the PNG');
  });

  test("an Azure deployment answering another size or model is refused as our account's fault (a failover), not the customer's", async () => {
    const req = requestFor('gpt-image-1.5', { aspectRatio: '16:9', providerModelId: 'gpt-image-1.5' });
    const image = (await shapedMedia({ format: 'png', width: 1024, height: 1024 })).toString('base64');
    const answers: [Record<string, unknown>, RegExp][] = [
      [{ created: 1, data: [{ b64_json: image }], size: '1024x1024', output_format: 'png' }, /size 1024x1024, not 1536x1024/],
      [{ created: 1, data: [{ b64_json: image }], model: 'dall-e-3' }, /model dall-e-3, not gpt-image-1\.5/],
    ];
    for (const [answer, says] of answers) {
      azure.script('images', json(200, answer));
      const err = await errorOf(() => adapters.azure!.submit({ ...req, jobId: `${req.jobId}${Math.random().toString(36).slice(2, 6)}` }, ctx));
      assert.ok(err instanceof ProviderError && err.account && !err.retryable, String(err));
      assert.match(err.message, says);
    }
  });

  test('an Alibaba video of another frame is scaled to the asked one, and the scaling is reported', async () => {
    const req = requestFor('replace-actor', {
      aspectRatio: '16:9',
      resolution: '720p',
      providerModelId: 'wan2.2-animate-mix',
      inputs: actorInputs,
      duration: 3,
    });
    const done = (await pollToEnd(adapters.alibaba!, await adapters.alibaba!.submit(req, ctx), ctx)).at(-1)!;
    const [out] = await store('alibaba', req.jobId, done.outputs!, false, outputFrame(req.route, 'alibaba', { aspect_ratio: '16:9', resolution: '720p' }));
    assert.equal(out!.scaled_from, '854x480', 'the fake answered 480p');
    assert.deepEqual(await probe(out!.key), { codec: 'h264', width: 1280, height: 720 });
  });
});
