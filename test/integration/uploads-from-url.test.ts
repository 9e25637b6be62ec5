// POST /v1/upload-from-url over HTTP against the real gateway, Postgres, MinIO and Temporal, with a
// real worker running the uploadFromUrl workflow and fetch activity. The remote side is a loopback
// HTTPS server with a self-signed certificate trusted only here (FETCH_EXTRA_CA_FILE) and allowed by
// the test-only FETCH_ALLOW_LOOPBACK_ORIGIN. The worker's fetcher gets a DNS table (no real DNS) and
// a connector that can only reach 127.0.0.1, so no packet can leave this machine.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import { Client as MinioClient } from 'minio';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { createStorage } from '../../shared/storage.js';
import { createUploadActivities, fetchRemoteInput } from '../../activities/uploads.js';
import { MB } from '../../shared/media/type.js';
import { findCompletedUpload } from '../../db/repos/uploads.js';
import { taskQueues } from '../../workflows/definitions.js';
import { createTestDatabase, createTenant, rawMinioClient, testConfig, type TestDatabase, type Tenant } from '../support/stack.js';
import { startGateway, type InProcessGateway as Gateway } from '../support/services.js';
import { makeSampleMedia, startHttpsTestServer, type HttpsTestServer, type SampleMedia } from '../support/https-server.js';
import type { Config } from '../../shared/config.js';
import type { FetchHooks } from '../../activities/uploads.js';
import { codecDataConverter } from '../../codec/payload-codec.js';

let tdb: TestDatabase;
let config: Config;
let nativeConnection: NativeConnection;
let worker: Worker;
let ioWorker: Worker;
let workerRun: Promise<void>;
let gw: Gateway;
let base: string;
let minio: MinioClient;
let media: SampleMedia;
let remote: HttpsTestServer;
let owner: Tenant;
let clean: Tenant;
const offLoopbackAttempts: string[] = [];

const fetchHooks: FetchHooks = {
  resolver: async (host) => {
    const table: Record<string, string[]> = { 'loopback.evil.test': ['127.0.0.1'], 'metadata.evil.test': ['169.254.169.254'] };
    const answer = table[host];
    if (!answer) throw Object.assign(new Error(`test DNS: ${host} unknown`), { code: 'ENOTFOUND' });
    return answer.map((address) => ({ address, family: net.isIP(address) }));
  },
  connect: (o) => {
    if (o.host === '127.0.0.1') return tls.connect(o);
    offLoopbackAttempts.push(String(o.host));
    const blocked = new net.Socket();
    setImmediate(() => blocked.destroy(Object.assign(new Error('test connector: off-loopback connection blocked'), { code: 'ETESTBLOCKED' })));
    return blocked;
  },
};

before(async () => {
  // Refused fetches are expected here; keep the worker's warnings out of the test output.
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  remote = await startHttpsTestServer();
  media = await makeSampleMedia();
  tdb = await createTestDatabase();
  config = testConfig(tdb.url, {
    FETCH_ALLOW_LOOPBACK_ORIGIN: remote.origin,
    FETCH_EXTRA_CA_FILE: remote.caFile,
    // Generous: the 12 MB and 52 MB bodies below must hit the size cap, never the clock, however busy
    // the machine. The total timeout itself is tested in test/unit/ssrf with a stalled server.
    FETCH_TOTAL_TIMEOUT_MS: '120000',
    FETCH_CONNECT_TIMEOUT_MS: '2000',
    UPLOAD_FROM_URL_TIMEOUT_MS: '60000',
    RATE_LIMIT_GENERATE_PER_MIN: '10000', // rate limits are the gateway suite's subject
  });
  const storage = createStorage(config);
  nativeConnection = await NativeConnection.connect({ address: config.TEMPORAL_ADDRESS });
  // As in production: the workflow on the workflow queue, the fetch activity on the fetch queue.
  worker = await Worker.create({
    connection: nativeConnection,
    namespace: config.TEMPORAL_NAMESPACE,
    ...codecDataConverter(config),
    taskQueue: taskQueues(config.TASK_QUEUE_PREFIX).workflows,
    workflowsPath: fileURLToPath(new URL('../../workflows/upload-from-url.js', import.meta.url)),
  });
  ioWorker = await Worker.create({
    connection: nativeConnection,
    namespace: config.TEMPORAL_NAMESPACE,
    ...codecDataConverter(config),
    taskQueue: taskQueues(config.TASK_QUEUE_PREFIX).fetch,
    activities: createUploadActivities({ db: tdb.db, storage, config, fetchHooks }),
  });
  workerRun = Promise.all([worker.run(), ioWorker.run()]).then(() => undefined);
  gw = await startGateway(config, tdb.db);
  base = gw.baseUrl;
  minio = rawMinioClient(config);
  owner = await createTenant(tdb.db);
  clean = await createTenant(tdb.db);

  for (const [mime, bytes] of Object.entries(media))
    remote.file(`/media/${mime.replace('/', '-')}`, bytes, mime.includes('/') ? mime : 'application/octet-stream');
  // A PNG header declaring 20000×20000 pixels (a decompression bomb) in 4 KB.
  const bomb = Buffer.alloc(4096);
  media['image/png'].copy(bomb, 0, 0, 33);
  bomb.writeUInt32BE(20_000, 16);
  bomb.writeUInt32BE(20_000, 20);
  remote.file('/bomb', bomb, 'image/png');
  // The header says PNG, the bytes are a JPEG: the bytes decide.
  remote.file('/lying-header', media['image/jpeg'], 'image/png');
  remote.route('/redirect', (_q, r) => r.writeHead(302, { location: '/media/image-png' }).end());
  remote.route('/to-private', (_q, r) => r.writeHead(302, { location: 'https://10.1.2.3/x.png' }).end());
  remote.route('/to-metadata', (_q, r) => r.writeHead(301, { location: 'https://metadata.evil.test/latest/meta-data/' }).end());
  remote.route('/big-image', (_q, r) => {
    r.writeHead(200, { 'content-type': 'image/png' }); // no length: the 10 MB cap must hold mid-stream
    r.write(media['image/png']);
    const chunk = Buffer.alloc(MB);
    let sent = 0;
    const pump = () => {
      while (!r.destroyed && sent < 12 * MB && r.write(chunk)) sent += chunk.length;
      if (r.destroyed || sent >= 12 * MB) return void r.end();
      r.once('drain', pump);
    };
    pump();
  });
  remote.route('/big-video', (_q, r) => {
    r.writeHead(200, { 'content-type': 'video/mp4' });
    r.write(media['video/mp4']);
    const chunk = Buffer.alloc(MB);
    let sent = 0;
    const pump = () => {
      while (!r.destroyed && sent < 52 * MB && r.write(chunk)) sent += chunk.length;
      if (r.destroyed || sent >= 52 * MB) return void r.end();
      r.once('drain', pump);
    };
    pump();
  });
  remote.route('/gone', (_q, r) => r.writeHead(404).end());
});

after(async () => {
  await gw?.close();
  worker?.shutdown();
  ioWorker?.shutdown();
  await workerRun;
  await nativeConnection?.close();
  await remote?.close();
  await tdb?.drop();
  assert.deepEqual(offLoopbackAttempts, [], 'no connection off loopback was ever attempted');
});

async function fromUrl(tenant: Tenant, body: unknown, contentType = 'application/json') {
  const res = await fetch(`${base}/v1/upload-from-url`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': contentType },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { data?: Record<string, unknown>; error?: { code: string; message: string } } };
}

async function assertNothingStored(tenant: Tenant) {
  const prefix = `uploads/${tenant.workspaceId}/`;
  const objects: string[] = [];
  for await (const o of minio.listObjectsV2(config.S3_BUCKET, prefix, true)) objects.push((o as { name: string }).name);
  const incomplete: string[] = [];
  for await (const u of minio.listIncompleteUploads(config.S3_BUCKET, prefix, true)) incomplete.push((u as { key: string }).key);
  const rows = await tdb.db.selectFrom('file_uploads').select('id').where('workspace_id', '=', tenant.workspaceId).execute();
  assert.deepEqual({ objects, incomplete, rows: rows.length }, { objects: [], incomplete: [], rows: 0 });
}

describe('POST /v1/upload-from-url', () => {
  for (const mime of ['image/jpeg', 'image/png', 'image/webp', 'video/mp4', 'video/quicktime', 'video/webm'] as const) {
    test(`stores a remote ${mime}`, async () => {
      const r = await fromUrl(owner, { url: `${remote.origin}/media/${mime.replace('/', '-')}`, project_id: owner.projectId });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const d = r.body.data!;
      assert.equal(d.mime_type, mime);
      assert.equal(d.file_type, mime.split('/')[0]);
      assert.equal(d.file_size, media[mime].length);
      assert.equal(d.workspace_id, owner.workspaceId);
      assert.equal(d.project_id, owner.projectId);
      const served = await fetch(String(d.path));
      assert.deepEqual(Buffer.from(await served.arrayBuffer()), media[mime]);
      const row = await findCompletedUpload(tdb.db, owner.workspaceId, String(d.id));
      assert.equal(row?.source_url, `${remote.origin}/media/${mime.replace('/', '-')}`);
      assert.equal(await findCompletedUpload(tdb.db, clean.workspaceId, String(d.id)), undefined, 'invisible to other workspaces');
    });
  }

  test('the type comes from the bytes, not the remote Content-Type', async () => {
    const r = await fromUrl(owner, { url: `${remote.origin}/lying-header`, project_id: owner.projectId });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.data!.mime_type, 'image/jpeg');
  });

  test('follows a same-origin redirect', async () => {
    const r = await fromUrl(owner, { url: `${remote.origin}/redirect`, project_id: owner.projectId });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.data!.mime_type, 'image/png');
  });

  const refusals: Array<[string, string, RegExp]> = [
    ['unsupported type (GIF)', '/media/gif', /unsupported/],
    ['image over 10 MB, cut mid-stream', '/big-image', /too large/],
    ['video over 50 MB, cut mid-stream', '/big-video', /too large/],
    ['image over the pixel cap (20000×20000)', '/bomb', /20000×20000 .*the limit is 40\.0 Mpx/],
    ['redirect to a private address', '/to-private', /URL refused/],
    ['redirect to a name resolving to the metadata address', '/to-metadata', /URL refused/],
    ['remote 404', '/gone', /answered 404/],
  ];
  for (const [why, path, message] of refusals) {
    test(`400 for ${why}, nothing stored`, async () => {
      const r = await fromUrl(clean, { url: `${remote.origin}${path}`, project_id: clean.projectId });
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.equal(r.body.error!.code, 'invalid_request');
      assert.match(r.body.error!.message, message);
      await assertNothingStored(clean);
    });
  }

  test('hostile URLs are refused with 400 naming why', async () => {
    for (const url of [
      'http://example.com/a.png',
      'https://10.0.0.1/a.png',
      'https://[::1]/a.png',
      'https://[::ffff:127.0.0.1]/a.png',
      'https://169.254.169.254/latest/meta-data/',
      'https://user:pw@example.com/a.png',
      'https://example.com:8443/a.png',
      `https://127.0.0.1:${remote.port + 1}/a.png`, // loopback, but not the allowed origin
      'https://loopback.evil.test/a.png', // resolves to 127.0.0.1 (in the worker)
    ]) {
      const r = await fromUrl(clean, { url, project_id: clean.projectId });
      assert.equal(r.status, 400, url);
      assert.match(r.body.error!.message, /URL refused/, url);
    }
    await assertNothingStored(clean);
  });

  test('a project of another workspace, or none, is 403 forbidden', async () => {
    for (const pid of [owner.projectId, 'prj_doesnotexist']) {
      const r = await fromUrl(clean, { url: `${remote.origin}/media/image-png`, project_id: pid });
      assert.equal(r.status, 403);
      assert.equal(r.body.error!.code, 'forbidden');
    }
    await assertNothingStored(clean);
  });

  test('malformed bodies are 400', async () => {
    for (const body of [
      {},
      { url: `${remote.origin}/media/image-png` },
      { project_id: clean.projectId },
      { url: 42, project_id: clean.projectId },
      { url: 'x', project_id: clean.projectId, extra: 1 },
    ]) {
      const r = await fromUrl(clean, body);
      assert.equal(r.status, 400, JSON.stringify(body));
    }
    assert.equal((await fromUrl(clean, 'url=x', 'application/x-www-form-urlencoded')).status, 400);
    assert.equal((await fromUrl(clean, '{bad json')).status, 400);
  });
});

describe('fetchRemoteInput (job inputs given as URLs)', () => {
  test('stores the bytes at jobs/<jobId>/<token>/input-<role>.<ext>, refusing the wrong kind', async () => {
    const storage = createStorage(config);
    const got = await fetchRemoteInput(
      { storage, config, fetchHooks },
      { url: `${remote.origin}/media/video-webm`, jobId: 'job_test1', workspaceId: 'ws_test1', role: 'video', expect: 'video' },
    );
    assert.deepEqual(got, { key: `${storage.jobMediaPrefix('job_test1')}/input-video.webm`, contentType: 'video/webm', size: media['video/webm'].length });
    await storage.remove(got.key);
    await assert.rejects(
      fetchRemoteInput(
        { storage, config, fetchHooks },
        { url: `${remote.origin}/media/video-mp4`, jobId: 'job_test1', workspaceId: 'ws_test1', role: 'image', expect: 'image' },
      ),
      (err: Error & { type?: string; nonRetryable?: boolean }) =>
        err.type === 'InputUnavailable' && err.nonRetryable === true && /expected image/.test(err.message),
    );
    assert.equal(await storage.stat(`${storage.jobMediaPrefix('job_test1')}/input-image.mp4`), null);
  });
});
