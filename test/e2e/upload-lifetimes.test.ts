// Uploads expire and can be deleted, through the real gateway, workers, Postgres and MinIO: once an
// upload is deleted or past its expiry its media link answers 410 gone, a job naming it answers
// 400 upload_unavailable (and charges nothing), and the reconciler's sweep removes its file; another
// workspace's DELETE is 404; a job accepted before the deletion still reads the file, which the
// sweep removes only after that job ended.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createTenant, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, assertApiError, creditsOf, startService, waitForJobStatus, type InProcessGateway, type Service } from '../support/services.js';
import { Holds } from '../support/holds.js';
import { completedDirectUpload, multipartUpload } from '../support/uploads.js';
import { renderImage, renderVideo } from '../../activities/providers/local/media.js';
import { createUploadSweeper } from '../../worker/upload-sweeper.js';
import type { Config } from '../../shared/config.js';

let suite: Service;
let tdb: TestDatabase;
let config: Config;
let gw: InProcessGateway;
const holds = new Holds();
let png: Buffer;
let mp4: Buffer;

before(async () => {
  // The sweep is driven by hand (runOnce), so its timing is the test's.
  suite = await startService(
    {
      RECONCILE_INTERVAL_MS: '3600000',
      RATE_LIMIT_GENERATE_PER_MIN: '1000',
      RATE_LIMIT_POLL_PER_MIN: '100000',
      UPLOAD_RETENTION_SECONDS: '3600',
      UPLOAD_MAX_RETENTION_SECONDS: '86400',
    },
    { workers: { activityInterceptors: [holds.activityInterceptor] } },
  );
  ({ tdb, config, gw } = suite);
  png = await renderImage({ prompt: 'an upload with a lifetime', width: 320, height: 320 });
  const dir = await mkdtemp(join(tmpdir(), 'lifetimes-'));
  try {
    await renderVideo({ prompt: 'motion with a lifetime', width: 320, height: 568, durationSeconds: 2, outPath: join(dir, 'v.mp4') });
    mp4 = await readFile(join(dir, 'v.mp4'));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

after(async () => {
  await suite?.close();
});

const sweep = () => createUploadSweeper({ config, db: tdb.db, storage: gw.storage, logger: pino({ level: 'silent' }) }).runOnce();

const rowOf = (id: string) => tdb.db.selectFrom('file_uploads').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

/** Whether any object of the upload (its public key, or a direct upload's incoming twin) is still stored. */
async function storedObjects(id: string): Promise<string[]> {
  const row = await rowOf(id);
  const keys = [row.object_key, row.object_key.replace(/^uploads\//, 'incoming/')];
  const out: string[] = [];
  for (const k of keys) if (await gw.storage.stat(k)) out.push(k);
  return out;
}

async function uploadImage(t: Tenant, extra: Record<string, string> = {}) {
  const r = await multipartUpload(gw.baseUrl, t.apiKey, t.projectId, { name: 'frame.png', mime: 'image/png', bytes: png }, extra);
  assert.equal(r.status, 200, r.text);
  return r.body.data as { id: string; path: string; expires_at: number; created_at: number };
}

/** A job create naming the upload as its input (a replace-actor job: image and motion video). */
function createWith(t: Tenant, images: { image: string; video: string }) {
  return api(gw.baseUrl, t.apiKey).post('/v1/replace-actors/generations', {
    project_id: t.projectId,
    image_file_id: images.image,
    video_file_id: images.video,
    duration: 3,
  });
}

describe('upload lifetimes', () => {
  test('a deleted upload: its link answers 410, a job naming it 400 upload_unavailable without a charge, its file is gone; DELETE is idempotent and 404 for another workspace', async () => {
    const [a, b] = [await createTenant(tdb.db), await createTenant(tdb.db)];
    const c = api(gw.baseUrl, a.apiKey);
    const image = await uploadImage(a);
    const video = await completedDirectUpload(gw.baseUrl, a.apiKey, a.projectId, { name: 'motion.mp4', mime: 'video/mp4', bytes: mp4 });
    assert.equal((await fetch(image.path)).status, 200);

    const foreign = await api(gw.baseUrl, b.apiKey).call('DELETE', `/v1/uploads/${image.id}`);
    assertApiError(foreign, 404, 'not_found');
    assert.equal((await fetch(image.path)).status, 200, "another workspace's DELETE changed nothing");

    for (const id of [image.id, video.id]) {
      const del = await c.call('DELETE', `/v1/uploads/${id}`);
      assert.equal(del.status, 200, del.text);
      assert.equal(del.body.data.status, 'deleted');
      assert.deepEqual(await storedObjects(id), [], 'no job reads it: its objects are removed at once');
    }
    const link = await fetch(image.path);
    assert.equal(link.status, 410);
    assert.equal(((await link.json()) as { error: { code: string } }).error.code, 'gone');
    assert.equal((await fetch(video.path)).status, 410, 'a completed direct upload too');
    const again = await c.call('DELETE', `/v1/uploads/${image.id}`);
    assert.equal(again.status, 200);
    assert.equal(again.body.data.status, 'deleted');
    assert.equal((await c.get(`/v1/uploads/${image.id}`)).body.data.status, 'deleted');

    const credits = await creditsOf(tdb.db, a);
    const refused = await createWith(a, { image: image.id, video: video.id });
    assertApiError(refused, 400, 'upload_unavailable');
    assert.match(refused.body.error.message, /image_file_id: file upload .* was deleted/);
    assert.equal(await creditsOf(tdb.db, a), credits, 'a refused create charges nothing');
    assert.equal((await api(gw.baseUrl, b.apiKey).get(`/v1/uploads/${image.id}`)).status, 404);
  });

  test('an upload past expires_in_seconds: its link answers 410, a job naming it 400, and the sweep marks it expired and removes its file', async () => {
    const t = await createTenant(tdb.db);
    const c = api(gw.baseUrl, t.apiKey);
    const video = await completedDirectUpload(gw.baseUrl, t.apiKey, t.projectId, { name: 'motion.mp4', mime: 'video/mp4', bytes: mp4 });
    const image = await uploadImage(t, { expires_in_seconds: '4' });
    assert.ok(Math.abs(image.expires_at - (image.created_at + 4_000)) < 1_000, `expires_at ${image.expires_at} is about created_at + 4 s`);
    const cache = (await fetch(image.path, { method: 'HEAD' })).headers.get('cache-control') ?? '';
    assert.match(cache, /^private, max-age=[0-4]$/, 'a browser may not keep it past its expiry');
    const direct = await completedDirectUpload(
      gw.baseUrl,
      t.apiKey,
      t.projectId,
      { name: 'late.png', mime: 'image/png', bytes: png },
      { expires_in_seconds: 2 },
    );
    assert.equal(direct.expires_at - direct.updated_at, 2_000, 'a direct upload counts from its completion');

    await waitFor('the image link to answer 410', async () => (await fetch(image.path)).status === 410 || undefined, 15_000, 200);
    await waitFor('the direct upload link to answer 410', async () => (await fetch(direct.path)).status === 410 || undefined, 15_000, 200);
    assert.equal((await c.get(`/v1/uploads/${image.id}`)).body.data.status, 'expired', 'expired before the sweep ran');
    const credits = await creditsOf(tdb.db, t);
    const refused = await createWith(t, { image: image.id, video: video.id });
    assertApiError(refused, 400, 'upload_unavailable');
    assert.match(refused.body.error.message, /image_file_id: file upload .* expired at/);
    assert.equal(await creditsOf(tdb.db, t), credits);

    assert.ok((await storedObjects(image.id)).length > 0, 'the file stays until the sweep');
    await sweep();
    for (const id of [image.id, direct.id]) {
      const row = await rowOf(id);
      assert.equal(row.status, 'expired');
      assert.ok(row.objects_removed_at, 'the sweep removed its objects');
      assert.deepEqual(await storedObjects(id), []);
    }
    assert.equal((await fetch(image.path)).status, 410);
    assert.equal((await c.get(`/v1/uploads/${video.id}`)).body.data.status, 'completed', 'an upload within its lifetime is untouched');
  });

  test('expires_in_seconds out of bounds is 400 invalid_request on every upload path', async () => {
    const t = await createTenant(tdb.db);
    const c = api(gw.baseUrl, t.apiKey);
    for (const bad of ['0', '86401', 'soon']) {
      const r = await multipartUpload(gw.baseUrl, t.apiKey, t.projectId, { name: 'frame.png', mime: 'image/png', bytes: png }, { expires_in_seconds: bad });
      assertApiError(r, 400, 'invalid_request');
      assert.match(r.body.error.message, /expires_in_seconds/);
    }
    for (const bad of [0, 86_401, 1.5]) {
      const r = await c.post('/v1/uploads', { project_id: t.projectId, name: 'a.png', mime_type: 'image/png', size: 100, expires_in_seconds: bad });
      assertApiError(r, 400, 'invalid_request');
      assert.match(r.body.error.message, /expires_in_seconds/);
      // Refused before the URL is looked at (a loopback URL would be refused too, for another reason).
      const u = await c.post('/v1/upload-from-url', { project_id: t.projectId, url: 'https://127.0.0.1/a.png', expires_in_seconds: bad });
      assertApiError(u, 400, 'invalid_request');
      assert.match(u.body.error.message, /expires_in_seconds/);
    }
    const objects = await tdb.db.selectFrom('file_uploads').select('id').where('workspace_id', '=', t.workspaceId).execute();
    assert.deepEqual(objects, [], 'nothing was stored');
  });

  test('a job accepted before its upload was deleted still reads the file; the sweep removes it only after the job ended', async () => {
    const t = await createTenant(tdb.db);
    const c = api(gw.baseUrl, t.apiKey);
    const image = await uploadImage(t);
    const video = await completedDirectUpload(gw.baseUrl, t.apiKey, t.projectId, { name: 'motion.mp4', mime: 'video/mp4', bytes: mp4 });
    const hold = holds.activity('startGenerating', 'before');
    const created = await createWith(t, { image: image.id, video: video.id });
    assert.equal(created.status, 200, created.text);
    const jobId = created.body.data.id as string;
    assert.equal(await hold.reached, jobId);

    for (const id of [image.id, video.id]) assert.equal((await c.call('DELETE', `/v1/uploads/${id}`)).status, 200);
    assert.equal((await fetch(image.path)).status, 410, 'the link dies at once');
    await sweep();
    assert.equal((await storedObjects(image.id)).length, 1, 'the job in flight keeps the image');
    assert.equal((await storedObjects(video.id)).length, 1, 'and the video');
    assert.equal((await rowOf(image.id)).objects_removed_at, null);

    hold.release();
    const job = await waitForJobStatus(c, `/v1/replace-actors/generations/${jobId}`, ['completed', 'failed']);
    assert.equal(job.status, 'completed', JSON.stringify(job.error));
    await sweep();
    assert.deepEqual(await storedObjects(image.id), [], 'removed once the job ended');
    assert.deepEqual(await storedObjects(video.id), []);
    assert.ok((await rowOf(video.id)).objects_removed_at);
  });
});
