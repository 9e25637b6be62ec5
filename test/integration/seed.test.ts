// The catalog seed against real Postgres and MinIO: ≥12 actors and ≥10 voices with their media
// objects, idempotent on a second run; the demo workspace is reused; and the public /media route
// serves those objects (content type, length, ranges, cache headers) and nothing else.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { Client } from 'minio';
import { createTenant, createTestDatabase, testConfig, type TestDatabase } from '../support/stack.js';
import { insertUploadRow } from '../support/fixtures.js';
import { createStorage, type Storage } from '../../shared/storage.js';
import { catalogKeys, seedCatalog, seedDemo, DEMO_CREDITS } from '../../admin/seed.js';
import { actorAges, actorGenders, actorSkinTones } from '../../db/seed-data.js';
import { serveMediaRoute } from './gateway-harness.js';
import { mediaPath } from '../../api/routes/media.js';
import { parseApiKey, secretMatches } from '../../db/api-keys.js';
import { randomToken } from '../../shared/ids.js';

describe('catalog seed, demo workspace and the public media route', () => {
  let t: TestDatabase;
  let storage: Storage;
  let minio: Client;
  let bucket: string;
  let server: Server;
  let base: string;

  before(async () => {
    t = await createTestDatabase();
    // A bucket of its own, so "rendered" vs "kept" counts do not depend on other suites.
    bucket = `t-seed-${randomToken(10)}`;
    const config = testConfig(t.url, { S3_BUCKET: bucket });
    const ep = new URL(config.S3_ENDPOINT);
    minio = new Client({
      endPoint: ep.hostname,
      port: Number(ep.port),
      useSSL: false,
      accessKey: config.S3_ACCESS_KEY,
      secretKey: config.S3_SECRET_KEY,
      pathStyle: true,
    });
    await minio.makeBucket(bucket, config.S3_REGION);
    storage = createStorage(config);

    ({ server, base } = await serveMediaRoute(storage, config, t.db));
  });

  after(async () => {
    server?.close();
    if (minio && bucket) {
      const names: string[] = [];
      for await (const o of minio.listObjectsV2(bucket, '', true)) if (o.name) names.push(o.name);
      if (names.length) await minio.removeObjects(bucket, names);
      await minio.removeBucket(bucket);
    }
    await t?.drop();
  });

  test('seedCatalog creates ≥12 actors and ≥10 voices with valid values and renders their media', async () => {
    const r = await seedCatalog(t.db, storage);
    const actors = await t.db.selectFrom('actors').selectAll().orderBy('sort_key').execute();
    const voices = await t.db.selectFrom('voices').selectAll().orderBy('sort_key').execute();
    assert.ok(actors.length >= 12, `${actors.length} actors`);
    assert.ok(voices.length >= 10, `${voices.length} voices`);
    assert.equal(r.actors, actors.length);
    assert.equal(r.voices, voices.length);
    assert.equal(r.mediaCreated, actors.length * 3 + voices.length);
    assert.equal(r.mediaSkipped, 0);

    for (const a of actors) {
      assert.ok((actorAges as readonly string[]).includes(a.age), a.age);
      assert.ok((actorGenders as readonly string[]).includes(a.gender), a.gender);
      assert.ok((actorSkinTones as readonly string[]).includes(a.skin_tone), a.skin_tone);
    }
    // Varied: several values of each attribute, pro and non-pro, some without a default voice.
    assert.ok(new Set(actors.map((a) => a.age)).size >= 3);
    assert.ok(new Set(actors.map((a) => a.gender)).size >= 3);
    assert.ok(new Set(actors.map((a) => a.skin_tone)).size >= 4);
    assert.ok(actors.some((a) => a.is_pro) && actors.some((a) => !a.is_pro));
    assert.ok(actors.some((a) => a.default_voice_id === null) && actors.some((a) => a.default_voice_id !== null));
    const voiceIds = new Set(voices.map((v) => v.id));
    for (const a of actors) if (a.default_voice_id) assert.ok(voiceIds.has(a.default_voice_id));

    for (const a of actors) {
      const ref = await storage.stat(a.reference_image_key);
      const preview = await storage.stat(a.preview_video_key);
      const thumb = await storage.stat(a.preview_thumbnail_key);
      assert.equal(a.reference_image_key, catalogKeys.actorReference(a.id));
      assert.equal(ref?.contentType, 'image/png');
      assert.equal(preview?.contentType, 'video/mp4');
      assert.equal(thumb?.contentType, 'image/jpeg');
      assert.ok(ref!.size > 1000 && preview!.size > 1000 && thumb!.size > 500);
    }
    for (const v of voices) {
      const st = await storage.stat(v.preview_key);
      assert.equal(st?.contentType, 'audio/wav', v.id);
      assert.ok(st!.size > 1000);
      assert.match(v.tts_voice, /^[a-z0-9-]+\+[a-z0-9]+$/);
    }
  });

  test('a second run is idempotent: same rows, media kept, nothing re-rendered', async () => {
    const before = await t.db.selectFrom('actors').select(['id', 'created_at']).orderBy('id').execute();
    const r = await seedCatalog(t.db, storage);
    assert.equal(r.mediaCreated, 0);
    assert.equal(r.mediaSkipped, r.actors * 3 + r.voices);
    const afterRows = await t.db.selectFrom('actors').select(['id', 'created_at']).orderBy('id').execute();
    assert.deepEqual(afterRows, before);
  });

  test('a missing object is rendered again on the next run', async () => {
    const key = catalogKeys.actorPreview('actor_kenji_watanabe');
    await storage.remove(key);
    const r = await seedCatalog(t.db, storage);
    assert.equal(r.mediaCreated, 1);
    assert.equal((await storage.stat(key))?.contentType, 'video/mp4');
  });

  test('GET /media serves catalog objects publicly with type, length and cache headers', async () => {
    const key = catalogKeys.actorReference('actor_maya_chen');
    const st = (await storage.stat(key))!;
    const res = await fetch(`${base}${mediaPath(key)}`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'image/png');
    assert.equal(res.headers.get('content-length'), String(st.size));
    assert.match(res.headers.get('cache-control') ?? '', /public, max-age=\d+/);
    assert.equal(res.headers.get('accept-ranges'), 'bytes');
    const body = Buffer.from(await res.arrayBuffer());
    assert.equal(body.length, st.size);
    assert.equal(body.subarray(1, 4).toString('ascii'), 'PNG');

    const head = await fetch(`${base}${mediaPath(key)}`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-length'), String(st.size));
  });

  test('GET /media answers byte ranges', async () => {
    const key = catalogKeys.actorPreview('actor_maya_chen');
    const full = Buffer.from(await (await fetch(`${base}${mediaPath(key)}`)).arrayBuffer());
    const part = await fetch(`${base}${mediaPath(key)}`, { headers: { Range: 'bytes=100-1099' } });
    assert.equal(part.status, 206);
    assert.equal(part.headers.get('content-range'), `bytes 100-1099/${full.length}`);
    assert.equal(part.headers.get('content-length'), '1000');
    assert.deepEqual(Buffer.from(await part.arrayBuffer()), full.subarray(100, 1100));
    const suffix = await fetch(`${base}${mediaPath(key)}`, { headers: { Range: 'bytes=-10' } });
    assert.equal(suffix.status, 206);
    assert.deepEqual(Buffer.from(await suffix.arrayBuffer()), full.subarray(full.length - 10));
    const beyond = await fetch(`${base}${mediaPath(key)}`, { headers: { Range: `bytes=${full.length}-` } });
    assert.equal(beyond.status, 416);
    assert.equal(beyond.headers.get('content-range'), `bytes */${full.length}`);
  });

  test('GET /media refuses keys outside catalog/ and uploads/, uploads without a record, missing keys and traversal with 404', async () => {
    await storage.putStream('outputs/job_secret/0.png', Buffer.from('private'), 'image/png');
    const tenant = await createTenant(t.db);
    const key = `uploads/${tenant.workspaceId}/upl_abc/file.png`;
    await storage.putStream(key, Buffer.from('uploaded'), 'image/png');
    await insertUploadRow(t.db, tenant, { id: 'upl_abc', key, type: 'image', size: 8 });
    await storage.putStream(`uploads/${tenant.workspaceId}/upl_norecord/file.png`, Buffer.from('stray'), 'image/png');
    const ok = await fetch(`${base}/media/${key}`);
    assert.equal(ok.status, 200);
    assert.equal(await ok.text(), 'uploaded');
    for (const path of [
      `/media/uploads/${tenant.workspaceId}/upl_norecord/file.png`,
      '/media/outputs/job_secret/0.png',
      '/media/catalog/actors/nobody/reference.png',
      '/media/catalog/../outputs/job_secret/0.png',
      '/media/catalog/%2e%2e/outputs/job_secret/0.png',
      '/media/catalog/actors%2F..%2F..%2Foutputs/job_secret/0.png',
      '/media/uploads/..%5coutputs/job_secret/0.png',
      '/media/catalog',
      '/media/',
    ]) {
      const res = await fetch(`${base}${path}`);
      assert.equal(res.status, 404, path);
      const body = (await res.json()) as { error: { code: string; message: string } };
      assert.equal(body.error.code, 'not_found', path);
    }
  });

  test('seedDemo creates the demo workspace once, tops it up and mints a fresh key each run', async () => {
    const first = await seedDemo(t.db);
    assert.equal(first.created, true);
    assert.equal(first.credits, DEMO_CREDITS);
    const k1 = parseApiKey(first.apiKey)!;
    assert.ok(k1);
    const row1 = await t.db.selectFrom('api_keys').selectAll().where('id', '=', k1.id).executeTakeFirstOrThrow();
    assert.ok(secretMatches(k1.secret, row1.secret_hash));

    await t.db.updateTable('workspaces').set({ credits: 10 }).where('id', '=', first.workspaceId).execute();
    const second = await seedDemo(t.db);
    assert.equal(second.created, false);
    assert.equal(second.workspaceId, first.workspaceId);
    assert.equal(second.projectId, first.projectId);
    assert.equal(second.credits, DEMO_CREDITS);
    assert.notEqual(second.apiKeyId, first.apiKeyId);
    const keys = await t.db.selectFrom('api_keys').select(['id', 'revoked_at']).where('workspace_id', '=', first.workspaceId).orderBy('created_at').execute();
    assert.deepEqual(
      keys.map((k) => [k.id, k.revoked_at !== null]),
      [
        [first.apiKeyId, true],
        [second.apiKeyId, false],
      ],
    );
    const workspaces = await t.db.selectFrom('workspace_members').select('workspace_id').where('email', '=', 'demo@example.com').execute();
    assert.equal(workspaces.length, 1);
  });
});
