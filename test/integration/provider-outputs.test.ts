// Provider outputs are fetched through the guarded fetcher (https, public or the one test loopback
// origin, timeouts, byte cap), only from the provider's CDN hosts, typed by their bytes, and heartbeat
// their progress while streaming. The fal fake hands out URLs on a loopback HTTPS "CDN"; the activity
// runs in Temporal's MockActivityEnvironment against real MinIO.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { MockActivityEnvironment } from '@temporalio/testing';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { createOutputStore } from '../../activities/jobs.js';

/** storeOutputs writes no progress; the writer is required by the activity group. */
import { createFalAdapter } from '../../providers/fal/adapter.js';
import { createXaiAdapter } from '../../providers/xai/adapter.js';
import { outputHostsFor } from '../../activities/providers/outputs.js';
import type { ProviderAdapter, ProviderOutput } from '../../activities/providers/types.js';
import type { ProviderName } from '../../workflows/definitions.js';
import { startFakeFal, type FakeFal } from '../support/fake-providers/fal.js';
import { startFakeXai, type FakeXai } from '../support/fake-providers/xai.js';
import { pollToEnd, providerContext, requestFor, stackStorage } from '../support/fake-providers/context.js';
import { makeSampleMedia, startHttpsTestServer, type HttpsTestServer, type SampleMedia } from '../support/https-server.js';
import { testConfig } from '../support/stack.js';

async function readAll(s: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of s) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

describe('provider outputs into storage', () => {
  let fal: FakeFal;
  let xai: FakeXai;
  let cdn: HttpsTestServer;
  let media: SampleMedia;
  const storage = stackStorage();
  const ctx = providerContext(storage);

  before(async () => {
    [fal, xai, cdn, media] = await Promise.all([startFakeFal(), startFakeXai(), startHttpsTestServer(), makeSampleMedia()]);
    fal.filesBaseUrl = cdn.origin;
    xai.filesBaseUrl = cdn.origin;
  });
  after(() => Promise.all([fal.close(), xai.close(), cdn.close()]));

  function activities(env: Record<string, string> = {}) {
    const config = testConfig(process.env.DATABASE_URL ?? 'postgres://u:p@127.0.0.1:5432/unused', {
      FETCH_ALLOW_LOOPBACK_ORIGIN: cdn.origin,
      FETCH_EXTRA_CA_FILE: cdn.caFile,
      PROVIDER_OUTPUT_HOSTS: '127.0.0.1',
      ...env,
    });
    const adapters: Partial<Record<ProviderName, ProviderAdapter>> = {
      fal: createFalAdapter({ key: fal.key, queueUrl: fal.url, timeoutMs: 2000 }),
      xai: createXaiAdapter({ key: xai.key, baseUrl: xai.url, timeoutMs: 2000 }),
    };
    return createOutputStore({ storage, config, adapterFor: (name) => adapters[name]!, heartbeat: (d) => Context.current().heartbeat(d) });
  }

  async function store(provider: ProviderName, jobId: string, outputs: ProviderOutput[], env?: Record<string, string>) {
    const heartbeats: unknown[] = [];
    const mock = new MockActivityEnvironment();
    mock.on('heartbeat', (d: unknown) => heartbeats.push(d));
    const storeOutputs = activities(env);
    const stored = (await mock.run(() => storeOutputs(provider, jobId, outputs))) as Awaited<ReturnType<typeof storeOutputs>>;
    return { stored, heartbeats };
  }

  async function failure(provider: ProviderName, outputs: ProviderOutput[], env?: Record<string, string>): Promise<ApplicationFailure> {
    try {
      await store(provider, `job_${Math.random().toString(36).slice(2)}`, outputs, env);
    } catch (err) {
      assert.ok(err instanceof ApplicationFailure, `expected an ApplicationFailure, got ${String(err)}`);
      return err;
    }
    throw new Error('expected storeOutputs to fail');
  }

  test('a fal video is fetched from its CDN, typed by its bytes, stored, and heartbeats its progress', async () => {
    const req = requestFor('kling-2.6');
    const falAdapter = createFalAdapter({ key: fal.key, queueUrl: fal.url, timeoutMs: 2000 });
    const done = (await pollToEnd(falAdapter, await falAdapter.submit(req, ctx), ctx)).at(-1)!;
    const url = new URL(done.outputs![0]!.url!);
    assert.equal(url.origin, cdn.origin);
    cdn.file(url.pathname, media['video/mp4'], 'application/octet-stream');

    const { stored, heartbeats } = await store('fal', req.jobId, done.outputs!);
    assert.deepEqual(stored, [{ key: `${storage.jobMediaPrefix(req.jobId)}/output-1.mp4`, content_type: 'video/mp4', size: media['video/mp4'].length }]);
    assert.deepEqual(await readAll(await storage.getStream(stored[0]!.key)), media['video/mp4']);
    assert.ok(
      heartbeats.some((h) => ((h as { output?: number; bytes?: number }).bytes ?? 0) > 0 && (h as { output?: number }).output === 0),
      `a progress heartbeat with bytes: ${JSON.stringify(heartbeats)}`,
    );
  });

  test('an xAI video comes from the allowed hosts too', async () => {
    const req = requestFor('grok-video');
    const xaiAdapter = createXaiAdapter({ key: xai.key, baseUrl: xai.url, timeoutMs: 2000 });
    const done = (await pollToEnd(xaiAdapter, await xaiAdapter.submit(req, ctx), ctx)).at(-1)!;
    cdn.file(new URL(done.outputs![0]!.url!).pathname, media['video/mp4']);
    const { stored } = await store('xai', req.jobId, done.outputs!);
    assert.equal(stored[0]!.content_type, 'video/mp4');
  });

  test('a host outside the provider CDN allowlist is refused before anything is fetched', async () => {
    cdn.file('/files/elsewhere.png', media['image/png']);
    const before = cdn.requests.length;
    const err = await failure('fal', [{ url: `${cdn.origin}/files/elsewhere.png` }], { PROVIDER_OUTPUT_HOSTS: '' });
    assert.equal(err.nonRetryable, true);
    assert.equal(err.message, 'output 1: URL refused: the host is not on the allowed list');
    assert.equal(cdn.requests.length, before);
    assert.deepEqual(outputHostsFor('fal', { PROVIDER_OUTPUT_HOSTS: undefined }), [
      'v3.fal.media',
      'v3b.fal.media',
      'v3c.fal.media',
      'fal.media',
      'v2.fal.media',
      'storage.googleapis.com/falserverless/',
    ]);
  });

  test('plain http, a file over the size cap, and bytes that are not media are all refused for good', async () => {
    const http = await failure('fal', [{ url: `${fal.url}/files/x.png` }]);
    assert.equal(http.nonRetryable, true);
    assert.match(http.message, /^output 1: URL refused: only https URLs are allowed/);

    cdn.file('/files/big.mp4', Buffer.concat([media['video/mp4'], Buffer.alloc(2 * 1024 * 1024)]));
    const big = await failure('fal', [{ url: `${cdn.origin}/files/big.mp4` }], { PROVIDER_OUTPUT_MAX_MB: '1' });
    assert.equal(big.nonRetryable, true);
    assert.match(big.message, /^output 1: file too large/);

    cdn.file('/files/page.mp4', Buffer.from('<html><body>not a video</body></html>'.repeat(200)), 'video/mp4');
    const page = await failure('fal', [{ url: `${cdn.origin}/files/page.mp4` }]);
    assert.equal(page.nonRetryable, true);
    assert.match(page.message, /^output 1: unsupported file type/);
  });

  test('a CDN 503 is retryable', async () => {
    cdn.route('/files/busy.mp4', (_req, res) => res.writeHead(503).end('busy'));
    const err = await failure('fal', [{ url: `${cdn.origin}/files/busy.mp4` }]);
    assert.equal(err.nonRetryable, false);
    assert.match(err.message, /the remote server answered 503/);
  });

  test('headers an adapter asks for (a CDN that requires the key) reach the CDN', async () => {
    let seen: string | undefined;
    cdn.route('/files/private.png', (req, res) => {
      seen = req.headers.authorization;
      res.writeHead(200, { 'content-type': 'image/png' }).end(media['image/png']);
    });
    const withKey = createOutputStore({
      storage,
      heartbeat: () => undefined,
      config: testConfig(process.env.DATABASE_URL ?? 'postgres://u:p@127.0.0.1:5432/unused', {
        FETCH_ALLOW_LOOPBACK_ORIGIN: cdn.origin,
        FETCH_EXTRA_CA_FILE: cdn.caFile,
        PROVIDER_OUTPUT_HOSTS: '127.0.0.1',
      }),
      adapterFor: () => ({ ...createFalAdapter({ key: fal.key, queueUrl: fal.url }), outputHeaders: () => ({ authorization: `Key ${fal.key}` }) }),
    });
    const stored = (await new MockActivityEnvironment().run(() => withKey('fal', 'job_private', [{ url: `${cdn.origin}/files/private.png` }]))) as {
      content_type: string;
    }[];
    assert.equal(stored[0]!.content_type, 'image/png');
    assert.equal(seen, `Key ${fal.key}`);
  });
});
