// Direct uploads end to end: the real gateway over HTTP, the presigned POST sent to the real MinIO
// (loopback), completion, the reconciler role's sweep, and a completed direct upload used as the
// inputs of a replace-actor job run by real workers. Refusals (wrong size, type or bytes; images
// over the pixel cap) leave no object; another workspace can neither complete nor see an upload.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client as MinioClient } from 'minio';
import { createTenant, rawMinioClient, type Tenant } from '../support/stack.js';
import { api, creditsOf, startService, waitForJobStatus, type Service } from '../support/services.js';
import { makeSampleMedia, type SampleMedia } from '../support/https-server.js';
import { renderImage, renderVideo } from '../../activities/providers/local/media.js';
import { createUploadSweeper } from '../../worker/upload-sweeper.js';
import { pino } from 'pino';

let svc: Service;
let minio: MinioClient;
let media: SampleMedia;

before(async () => {
  // The sweep is driven by hand (runOnce) so its timing is the test's.
  svc = await startService({ RECONCILE_INTERVAL_MS: '3600000', RATE_LIMIT_GENERATE_PER_MIN: '1000', RATE_LIMIT_POLL_PER_MIN: '100000' });
  minio = rawMinioClient(svc.config);
  media = await makeSampleMedia(svc.config.FFMPEG_PATH);
});

after(async () => {
  await svc?.close();
});

interface Sent {
  created: { status: number; body: any; text: string };
  storageStatus?: number;
  storageBody?: string;
}

/** Starts a direct upload and sends `bytes` with its presigned POST (fields may be overridden to break the policy). */
async function directUpload(
  t: Tenant,
  opts: { name: string; mime: string; bytes: Buffer; size?: number; fieldOverrides?: Record<string, string> },
): Promise<Sent> {
  const c = api(svc.gw.baseUrl, t.apiKey);
  const created = await c.post('/v1/uploads', { project_id: t.projectId, name: opts.name, mime_type: opts.mime, size: opts.size ?? opts.bytes.length });
  if (created.status !== 200) return { created };
  const { url, fields } = created.body.data.upload as { url: string; fields: Record<string, string> };
  assert.match(new URL(url).hostname, /^(127\.\d+\.\d+\.\d+|localhost|\[::1\])$/, 'the test stack stores on loopback only');
  const form = new FormData();
  for (const [k, v] of Object.entries({ ...fields, ...opts.fieldOverrides })) form.append(k, v);
  form.append('file', new Blob([opts.bytes], { type: opts.fieldOverrides?.['Content-Type'] ?? opts.mime }), opts.name);
  const res = await fetch(url, { method: 'POST', body: form });
  return { created, storageStatus: res.status, storageBody: await res.text() };
}

async function objectsOf(workspaceId: string): Promise<string[]> {
  const names: string[] = [];
  for (const prefix of [`incoming/${workspaceId}/`, `uploads/${workspaceId}/`]) {
    for await (const o of minio.listObjectsV2(svc.config.S3_BUCKET, prefix, true)) names.push((o as { name: string }).name);
  }
  return names.sort();
}

async function rowOf(id: string) {
  return svc.tdb.db.selectFrom('file_uploads').selectAll().where('id', '=', id).executeTakeFirst();
}

/** A PNG header declaring width × height, padded to `size` bytes (a decompression bomb needs no pixel data to be refused). */
function pngBomb(width: number, height: number, size = 4096): Buffer {
  const b = Buffer.alloc(size);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(b, 0);
  b.writeUInt32BE(13, 8);
  b.write('IHDR', 12, 'latin1');
  b.writeUInt32BE(width, 16);
  b.writeUInt32BE(height, 20);
  b[24] = 8;
  b[25] = 6;
  return b;
}

describe('direct uploads', () => {
  test('create → POST to storage → complete: the record moves pending → completed and the file is served at path', async () => {
    const t = await createTenant(svc.tdb.db);
    const c = api(svc.gw.baseUrl, t.apiKey);
    const bytes = media['image/png'];
    const sent = await directUpload(t, { name: 'dir/photo.png', mime: 'image/png', bytes });
    assert.equal(sent.created.status, 200, sent.created.text);
    const d = sent.created.body.data;
    assert.equal(d.status, 'pending');
    assert.equal(d.name, 'photo.png');
    assert.equal(d.file_size, bytes.length);
    assert.equal(d.file_type, 'image');
    assert.equal(d.upload.method, 'POST');
    assert.equal(d.upload.fields['Content-Type'], 'image/png');
    assert.ok(d.upload.fields.key.startsWith(`incoming/${t.workspaceId}/${d.id}/`), 'bytes land under incoming/, never served');
    assert.ok(d.upload.expires_at > Date.now());
    assert.equal(sent.storageStatus, 204, sent.storageBody);

    const pending = await c.get(`/v1/uploads/${d.id}`);
    assert.equal(pending.body.data.status, 'pending');
    assert.equal((await fetch(d.path)).status, 404, 'not served before completion');

    const done = await c.post(`/v1/uploads/${d.id}/complete`);
    assert.equal(done.status, 200, done.text);
    assert.equal(done.body.data.status, 'completed');
    assert.equal(done.body.data.path, d.path);
    const served = await fetch(d.path);
    assert.equal(served.status, 200);
    assert.deepEqual(Buffer.from(await served.arrayBuffer()), bytes);
    assert.deepEqual(await objectsOf(t.workspaceId), [new URL(d.path).pathname.replace(/^\/media\//, '')], 'the incoming object is gone');

    const again = await c.post(`/v1/uploads/${d.id}/complete`);
    assert.equal(again.status, 200, 'completing twice is harmless');
    assert.equal(again.body.data.status, 'completed');
    assert.equal((await c.get(`/v1/uploads/${d.id}`)).body.data.status, 'completed');
  });

  test('a wrong size is refused by storage; completion then answers 409 not_ready and nothing is stored', async () => {
    const t = await createTenant(svc.tdb.db);
    const c = api(svc.gw.baseUrl, t.apiKey);
    const bytes = media['image/png'];
    for (const size of [bytes.length + 1, bytes.length - 1]) {
      const sent = await directUpload(t, { name: 'a.png', mime: 'image/png', bytes, size });
      assert.equal(sent.created.status, 200, sent.created.text);
      assert.equal(sent.storageStatus, 400, `storage refuses ${bytes.length} bytes against a declared ${size}`);
      assert.match(sent.storageBody!, /EntityTooSmall|EntityTooLarge/);
      const done = await c.post(`/v1/uploads/${sent.created.body.data.id}/complete`);
      assert.equal(done.status, 409);
      assert.equal(done.body.error.code, 'not_ready');
      assert.equal(done.body.status, 'pending');
      assert.match(done.body.error.message, /no file has been sent/);
      assert.equal((await rowOf(sent.created.body.data.id))?.status, 'pending', 'still pending: the client may send the right bytes');
    }
    assert.deepEqual(await objectsOf(t.workspaceId), []);
  });

  test('a Content-Type other than the declared one is refused by storage, nothing stored', async () => {
    const t = await createTenant(svc.tdb.db);
    const sent = await directUpload(t, { name: 'a.png', mime: 'image/png', bytes: media['image/png'], fieldOverrides: { 'Content-Type': 'text/html' } });
    assert.equal(sent.storageStatus, 403, sent.storageBody);
    assert.deepEqual(await objectsOf(t.workspaceId), []);
  });

  test('bytes that are not the declared type, or not media at all, are refused at completion: object deleted, upload failed', async () => {
    const t = await createTenant(svc.tdb.db);
    const c = api(svc.gw.baseUrl, t.apiKey);
    const cases: Array<[string, Buffer, RegExp]> = [
      ['image/png', media['image/jpeg'], /does not match/],
      ['video/mp4', media['video/webm'], /does not match/],
      ['image/png', Buffer.from('<html><script>alert(1)</script></html>'), /unsupported file type/],
      ['video/mp4', media['image/png'], /expected video, got image\/png/],
    ];
    for (const [mime, bytes, message] of cases) {
      const sent = await directUpload(t, { name: 'x', mime, bytes });
      assert.equal(sent.storageStatus, 204, sent.storageBody);
      const id = sent.created.body.data.id;
      const done = await c.post(`/v1/uploads/${id}/complete`);
      assert.equal(done.status, 400, done.text);
      assert.equal(done.body.error.code, 'invalid_request');
      assert.match(done.body.error.message, message);
      assert.equal((await rowOf(id))?.status, 'failed');
      const again = await c.post(`/v1/uploads/${id}/complete`);
      assert.equal(again.status, 409);
      assert.equal(again.body.error.code, 'upload_refused');
      assert.match(again.body.error.message, /was refused/);
    }
    assert.deepEqual(await objectsOf(t.workspaceId), []);
  });

  test('an image over the pixel cap is refused at completion (decompression bomb), nothing stored', async () => {
    const t = await createTenant(svc.tdb.db);
    const c = api(svc.gw.baseUrl, t.apiKey);
    const sent = await directUpload(t, { name: 'bomb.png', mime: 'image/png', bytes: pngBomb(20_000, 20_000) });
    assert.equal(sent.storageStatus, 204, sent.storageBody);
    const done = await c.post(`/v1/uploads/${sent.created.body.data.id}/complete`);
    assert.equal(done.status, 400);
    assert.match(done.body.error.message, /20000×20000 .* the limit is 40\.0 Mpx/);
    assert.deepEqual(await objectsOf(t.workspaceId), []);
  });

  test('bad creates: sizes over the type limit, unaccepted types, foreign projects, unknown fields', async () => {
    const t = await createTenant(svc.tdb.db);
    const other = await createTenant(svc.tdb.db);
    const c = api(svc.gw.baseUrl, t.apiKey);
    const base = { project_id: t.projectId, name: 'a.png', mime_type: 'image/png', size: 1000 };
    const over = await c.post('/v1/uploads', { ...base, size: 10 * 1024 * 1024 + 1 });
    assert.equal(over.status, 400);
    assert.match(over.body.error.message, /at most 10 MB/);
    const videoOver = await c.post('/v1/uploads', { ...base, mime_type: 'video/mp4', size: 20 * 1024 * 1024 + 1 });
    assert.equal(videoOver.status, 400);
    for (const body of [
      { ...base, mime_type: 'image/gif' },
      { ...base, size: 0 },
      { ...base, size: 1.5 },
      { ...base, extra: 1 },
      { ...base, name: '' },
    ]) {
      const r = await c.post('/v1/uploads', body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.body.error.code, 'invalid_request');
    }
    const foreign = await c.post('/v1/uploads', { ...base, project_id: other.projectId });
    assert.equal(foreign.status, 403);
    assert.equal(foreign.body.error.code, 'forbidden');
    assert.equal(await svc.tdb.db.selectFrom('file_uploads').select('id').where('workspace_id', '=', t.workspaceId).executeTakeFirst(), undefined);
  });

  test('another workspace can neither see, complete nor use an upload; a pending one is no job input', async () => {
    const owner = await createTenant(svc.tdb.db);
    const stranger = await createTenant(svc.tdb.db);
    const s = api(svc.gw.baseUrl, stranger.apiKey);
    const o = api(svc.gw.baseUrl, owner.apiKey);
    const sent = await directUpload(owner, { name: 'a.png', mime: 'image/png', bytes: media['image/png'] });
    const id = sent.created.body.data.id as string;

    // Pending: not usable, even by its owner.
    const video = { prompt: 'waves at dusk', model: 'seedance-1.5', aspect_ratio: '9:16', duration: 4, resolution: '480p', start_frame_file_id: id };
    const pendingInput = await o.post('/v1/videos/generate', { ...video, project_id: owner.projectId });
    assert.equal(pendingInput.status, 400, pendingInput.text);
    assert.match(pendingInput.body.error.message, /not completed/);

    for (const r of [await s.post(`/v1/uploads/${id}/complete`), await s.get(`/v1/uploads/${id}`)]) {
      assert.equal(r.status, 404);
      assert.equal(r.body.error.code, 'not_found');
    }
    assert.equal((await rowOf(id))?.status, 'pending', "the stranger's completion did nothing");
    assert.equal((await o.post(`/v1/uploads/${id}/complete`)).status, 200);
    const used = await s.post('/v1/videos/generate', { ...video, project_id: stranger.projectId });
    assert.equal(used.status, 404);
    assert.equal(await creditsOf(svc.tdb.db, stranger), 1000);
    assert.equal(await creditsOf(svc.tdb.db, owner), 1000);
  });

  test('the sweep removes pending uploads past their expiry with their object, and leaves completed and fresh ones', async () => {
    const t = await createTenant(svc.tdb.db);
    const c = api(svc.gw.baseUrl, t.apiKey);
    const stale = await directUpload(t, { name: 'stale.png', mime: 'image/png', bytes: media['image/png'] });
    const done = await directUpload(t, { name: 'done.png', mime: 'image/png', bytes: media['image/png'] });
    assert.equal((await c.post(`/v1/uploads/${done.created.body.data.id}/complete`)).status, 200);
    const sweeper = createUploadSweeper({ config: svc.config, db: svc.tdb.db, storage: svc.gw.storage, logger: pino({ level: 'silent' }) });

    assert.equal(await sweeper.runOnce(new Date()), 0, 'nothing is due a day early');
    const dayLater = new Date(Date.now() + svc.config.PENDING_UPLOAD_TTL_SECONDS * 1000 + 1000);
    const fresh = await directUpload(t, { name: 'fresh.png', mime: 'image/png', bytes: media['image/png'] });
    await svc.tdb.db
      .updateTable('file_uploads')
      .set({ expires_at: new Date(Date.now() + 3 * 86_400_000) })
      .where('id', '=', fresh.created.body.data.id)
      .execute();
    assert.ok((await sweeper.runOnce(dayLater)) >= 1);
    assert.equal(await rowOf(stale.created.body.data.id), undefined);
    assert.equal((await rowOf(done.created.body.data.id))?.status, 'completed');
    assert.equal((await rowOf(fresh.created.body.data.id))?.status, 'pending');
    const objects = await objectsOf(t.workspaceId);
    assert.equal(objects.filter((k) => k.includes(stale.created.body.data.id)).length, 0, 'the stale object is gone');
    assert.equal(objects.filter((k) => k.includes(done.created.body.data.id)).length, 1);
    assert.equal(objects.filter((k) => k.includes(fresh.created.body.data.id)).length, 1);
    const gone = await c.post(`/v1/uploads/${stale.created.body.data.id}/complete`);
    assert.equal(gone.status, 404);
  });

  test('direct uploads used as the inputs of a replace-actor job: the job completes', async () => {
    const t = await createTenant(svc.tdb.db);
    const c = api(svc.gw.baseUrl, t.apiKey);
    const image = await renderImage({ prompt: 'direct upload character', width: 320, height: 320 });
    const dir = await mkdtemp(join(tmpdir(), 'direct-'));
    let video: Buffer;
    try {
      await renderVideo({ prompt: 'direct upload motion', width: 320, height: 568, durationSeconds: 2, outPath: join(dir, 'v.mp4') });
      video = await readFile(join(dir, 'v.mp4'));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    const ids: string[] = [];
    for (const [name, mime, bytes] of [
      ['character.png', 'image/png', image],
      ['motion.mp4', 'video/mp4', video],
    ] as const) {
      const sent = await directUpload(t, { name, mime, bytes });
      assert.equal(sent.storageStatus, 204, sent.storageBody);
      const done = await c.post(`/v1/uploads/${sent.created.body.data.id}/complete`);
      assert.equal(done.status, 200, done.text);
      ids.push(done.body.data.id);
    }
    const created = await c.post('/v1/replace-actors/generations', { project_id: t.projectId, image_file_id: ids[0], video_file_id: ids[1], duration: 3 });
    assert.equal(created.status, 200, created.text);
    const job = await waitForJobStatus(c, `/v1/replace-actors/generations/${created.body.data.id}`, ['completed', 'failed']);
    assert.equal(job.status, 'completed', JSON.stringify(job.error));
    const url = await c.get(`/v1/replace-actors/generations/${job.id}/url`);
    assert.equal(url.status, 200);
  });
});
