// Direct uploads keep exactly the bytes they inspected, and nothing a client sends outlives its
// upload: the real gateway over HTTP, the presigned POST sent to the real MinIO (loopback):
//   - an object replaced between the inspection and the copy (the presigned POST is still valid)
//     is refused with 409 upload_refused, and no public copy exists;
//   - /complete before any bytes were sent is a conflict (409 not_ready, status pending);
//   - objects sent again after completion or refusal are removed by the sweep, a pending upload's
//     object is kept;
//   - the workspace's upload quota refuses with 413 storage_quota_exceeded naming it, on direct and
//     multipart uploads, and stores nothing.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { createTenant, createTestDatabase, testConfig, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { api } from '../support/services.js';
import { makeSampleMedia, type SampleMedia } from '../support/https-server.js';
import { createGateway, type Gateway } from '../../api/gateway.js';
import { createStorage, type Storage } from '../../shared/storage.js';
import { createUploadSweeper } from '../../worker/upload-sweeper.js';

let tdb: TestDatabase;
let gw: Gateway;
let storage: Storage;
let media: SampleMedia;
/** Runs before the gateway's next conditional copy (the window between inspection and copy). */
let beforeCopy: (() => Promise<void>) | null = null;

before(async () => {
  tdb = await createTestDatabase();
  const config = testConfig(tdb.url, {
    HOST: '127.0.0.1',
    RATE_LIMIT_GENERATE_PER_MIN: '1000',
    RATE_LIMIT_POLL_PER_MIN: '100000',
    WORKSPACE_UPLOAD_QUOTA_MB: '1',
  });
  storage = createStorage(config);
  const racing: Storage = {
    ...storage,
    bucket: storage.bucket,
    async copy(from, to, opts) {
      const hook = beforeCopy;
      beforeCopy = null;
      if (hook) await hook();
      return storage.copy(from, to, opts);
    },
  };
  gw = createGateway(config, { db: tdb.db, storage: racing, processExtras: false });
  await gw.start();
  media = await makeSampleMedia(config.FFMPEG_PATH);
});

after(async () => {
  await gw?.stop({ graceMs: 0 });
  await tdb?.drop();
});

interface Created {
  id: string;
  post: { url: string; fields: Record<string, string> };
}

async function known(t: Tenant) {
  await waitFor('the key to be known', async () => (await api(gw.baseUrl, t.apiKey).get('/v1/no-such-route')).status === 404);
}

async function create(t: Tenant, mime: string, size: number) {
  return api(gw.baseUrl, t.apiKey).post('/v1/uploads', { project_id: t.projectId, name: 'a.png', mime_type: mime, size });
}

async function createOk(t: Tenant, mime: string, size: number): Promise<Created> {
  const r = await create(t, mime, size);
  assert.equal(r.status, 200, r.text);
  return { id: r.body.data.id, post: r.body.data.upload };
}

async function send(c: Created, mime: string, bytes: Buffer): Promise<void> {
  assert.match(new URL(c.post.url).hostname, /^(127\.\d+\.\d+\.\d+|localhost)$/, 'the test stack stores on loopback only');
  const form = new FormData();
  for (const [k, v] of Object.entries(c.post.fields)) form.append(k, v);
  form.append('file', new Blob([bytes], { type: mime }), 'a');
  const res = await fetch(c.post.url, { method: 'POST', body: form });
  assert.equal(res.status, 204, await res.text());
}

async function keysOf(prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of storage.list(prefix)) keys.push(o.key);
  return keys;
}

const statusOf = async (id: string) => (await tdb.db.selectFrom('file_uploads').select('status').where('id', '=', id).executeTakeFirst())?.status;

describe('direct upload completion keeps the bytes it checked', () => {
  test('a file replaced between the inspection and the copy is refused (409 upload_refused); nothing is published', async () => {
    const t = await createTenant(tdb.db);
    await known(t);
    const png = media['image/png'];
    const c = await createOk(t, 'image/png', png.length);
    await send(c, 'image/png', png);
    // Same size and declared type, not an image: what the inspection would have refused.
    const html = Buffer.alloc(png.length, ' ');
    html.write('<html><script>alert(1)</script></html>');
    beforeCopy = () => send(c, 'image/png', html);
    const done = await api(gw.baseUrl, t.apiKey).post(`/v1/uploads/${c.id}/complete`);
    assert.equal(done.status, 409, done.text);
    assert.equal(done.body.error.code, 'upload_refused');
    assert.equal(done.body.status, 'failed');
    assert.match(done.body.error.message, /replaced in storage while it was being checked/);
    assert.equal(await statusOf(c.id), 'failed');
    assert.deepEqual(await keysOf(`uploads/${t.workspaceId}/`), [], 'no public copy of either file');
    const again = await api(gw.baseUrl, t.apiKey).post(`/v1/uploads/${c.id}/complete`);
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, 'upload_refused');
  });

  test('an unchanged file completes through the conditional copy', async () => {
    const t = await createTenant(tdb.db);
    await known(t);
    const png = media['image/png'];
    const c = await createOk(t, 'image/png', png.length);
    await send(c, 'image/png', png);
    const done = await api(gw.baseUrl, t.apiKey).post(`/v1/uploads/${c.id}/complete`);
    assert.equal(done.status, 200, done.text);
    assert.equal(done.body.data.status, 'completed');
    assert.equal((await keysOf(`uploads/${t.workspaceId}/`)).length, 1);
  });

  test('completing before any bytes were sent is a conflict: 409 not_ready with status pending', async () => {
    const t = await createTenant(tdb.db);
    await known(t);
    const c = await createOk(t, 'image/png', 1000);
    const early = await api(gw.baseUrl, t.apiKey).post(`/v1/uploads/${c.id}/complete`);
    assert.equal(early.status, 409, early.text);
    assert.equal(early.body.error.code, 'not_ready');
    assert.equal(early.body.status, 'pending');
    assert.equal(await statusOf(c.id), 'pending');
  });
});

describe('the sweep', () => {
  test('removes incoming objects sent again after completion or refusal, and keeps a pending upload', async () => {
    const t = await createTenant(tdb.db);
    await known(t);
    const png = media['image/png'];
    const client = api(gw.baseUrl, t.apiKey);
    const completed = await createOk(t, 'image/png', png.length);
    await send(completed, 'image/png', png);
    assert.equal((await client.post(`/v1/uploads/${completed.id}/complete`)).status, 200);
    const refused = await createOk(t, 'video/mp4', png.length);
    await send(refused, 'video/mp4', png);
    assert.equal((await client.post(`/v1/uploads/${refused.id}/complete`)).status, 400);
    const pending = await createOk(t, 'image/png', png.length);
    await send(pending, 'image/png', png);
    // The presigned POSTs are still valid: both finished uploads get bytes again.
    await send(completed, 'image/png', png);
    await send(refused, 'video/mp4', png);
    assert.equal((await keysOf(`incoming/${t.workspaceId}/`)).length, 3);

    const sweeper = createUploadSweeper({ config: gw.config, db: tdb.db, storage, logger: pino({ level: 'silent' }) });
    await sweeper.runOnce();
    const left = await keysOf(`incoming/${t.workspaceId}/`);
    assert.equal(left.length, 1);
    assert.ok(left[0]!.includes(pending.id), 'the pending upload keeps its object');
    assert.equal((await client.post(`/v1/uploads/${pending.id}/complete`)).status, 200);
  });

  test('an object whose upload this database never had is kept while a presigned POST could still land, removed after', async () => {
    // Another deployment's upload on a shared bucket (every suite's, on the test stack), or a row
    // lost in a failover: the sweep must not take bytes a client may still complete elsewhere.
    const t = await createTenant(tdb.db);
    const stranger = `incoming/${t.workspaceId}/upl_neverhere${Date.now()}/tok.png`;
    await storage.putStream(stranger, media['image/png'], 'image/png');
    const sweeper = createUploadSweeper({ config: gw.config, db: tdb.db, storage, logger: pino({ level: 'silent' }) });
    await sweeper.runOnce();
    assert.deepEqual(await keysOf(stranger), [stranger], 'a young object without a row stays');
    const afterThePost = new Date(Date.now() + (gw.config.DIRECT_UPLOAD_EXPIRY_SECONDS + 60) * 1000);
    await sweeper.runOnce(afterThePost);
    assert.deepEqual(await keysOf(stranger), [], 'removed once no presigned POST for it can still be valid');
  });
});

describe('storage quota', () => {
  test('uploads past the workspace quota are refused with 413 storage_quota_exceeded, nothing stored; another workspace is not affected', async () => {
    const t = await createTenant(tdb.db);
    const other = await createTenant(tdb.db);
    await known(t);
    await known(other);
    // The quota is 1 MB: 600 KB pending fits once.
    await createOk(t, 'image/png', 600 * 1024);
    const over = await create(t, 'image/png', 600 * 1024);
    assert.equal(over.status, 413, over.text);
    assert.equal(over.body.error.code, 'storage_quota_exceeded');
    assert.match(over.body.error.message, /of its 1 MB storage quota/);
    // Multipart: stored while streaming, then refused and removed.
    const big = Buffer.concat([media['image/png'], Buffer.alloc(500 * 1024)]);
    const form = new FormData();
    form.append('project_id', t.projectId);
    form.append('file', new Blob([big], { type: 'image/png' }), 'big.png');
    const multipart = await fetch(`${gw.baseUrl}/v1/upload`, { method: 'POST', headers: { authorization: `Bearer ${t.apiKey}` }, body: form });
    const body = (await multipart.json()) as { error: { code: string } };
    assert.equal(multipart.status, 413);
    assert.equal(body.error.code, 'storage_quota_exceeded');
    assert.deepEqual(await keysOf(`uploads/${t.workspaceId}/`), []);
    assert.equal((await create(other, 'image/png', 600 * 1024)).status, 200);
  });
});
