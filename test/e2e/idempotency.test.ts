// Idempotency-Key end to end: the real gateway (two replicas on one database), Postgres, Temporal
// workers and MinIO. Same key and body → the first answer replayed, one job, one charge; another
// body → 422; in flight → 409; keys scoped per workspace; a stale claim is taken over; 50
// concurrent identical requests over two replicas create exactly one job and one charge.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { createTenant, type TestDatabase, type Tenant } from '../support/stack.js';
import { api, assertApiError, creditsOf, startGateway, startService, type Gateway, type Service } from '../support/services.js';
import { makeSampleMedia, type SampleMedia } from '../support/https-server.js';
import { ledgerForJob } from '../support/ledger.js';
import { claimIdempotencyKey, completeIdempotencyKey } from '../../db/repos/idempotency.js';

let svc: Service;
let tdb: TestDatabase;
let gw: Gateway;
let replica: Gateway;
let media: SampleMedia;

before(async () => {
  svc = await startService({ RATE_LIMIT_GENERATE_PER_MIN: '100000', RATE_LIMIT_POLL_PER_MIN: '100000' });
  ({ tdb, gw } = svc);
  replica = await startGateway(svc.config, tdb.db);
  media = await makeSampleMedia(svc.config.FFMPEG_PATH);
});

after(async () => {
  await replica?.close();
  await svc?.close();
});

const imageBody = (t: Tenant, prompt = 'a red fox') => ({ project_id: t.projectId, prompt, model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });
const withKey = (key: string) => ({ 'idempotency-key': key });

async function jobsOf(t: Tenant) {
  return tdb.db.selectFrom('jobs').select(['id', 'price']).where('workspace_id', '=', t.workspaceId).execute();
}

describe('Idempotency-Key on generate endpoints', () => {
  test('the same key and body replays the first answer: one job, one charge', async () => {
    const t = await createTenant(tdb.db, 100);
    const c = api(gw.baseUrl, t.apiKey);
    const key = randomUUID();
    const first = await c.post('/v1/images/generate', imageBody(t), withKey(key));
    assert.equal(first.status, 200, first.text);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    // Another replica, the body's keys in another order: the same request.
    const { count, aspect_ratio, model, prompt, project_id } = imageBody(t);
    const again = await api(replica.baseUrl, t.apiKey).post('/v1/images/generate', { count, aspect_ratio, model, prompt, project_id }, withKey(key));
    assert.equal(again.status, 200, again.text);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(again.body, first.body, 'the first answer, status and body');
    const jobs = await jobsOf(t);
    assert.deepEqual(
      jobs.map((j) => j.id),
      [first.body.data.id],
    );
    assert.equal(await creditsOf(tdb.db, t), 100 - jobs[0]!.price);
    const ledger = await ledgerForJob(tdb.db, first.body.data.id);
    assert.deepEqual(ledger.filter((l) => l.reason === 'charge').length, 1);
  });

  test('the same key with another body or on another endpoint answers 422 idempotency_key_reused', async () => {
    const t = await createTenant(tdb.db, 100);
    const c = api(gw.baseUrl, t.apiKey);
    const key = randomUUID();
    assert.equal((await c.post('/v1/images/generate', imageBody(t), withKey(key))).status, 200);
    assertApiError(await c.post('/v1/images/generate', imageBody(t, 'another prompt'), withKey(key)), 422, 'idempotency_key_reused');
    assertApiError(await c.post('/v1/videos/generate', { project_id: t.projectId, prompt: 'x', model: 'sora-2' }, withKey(key)), 422, 'idempotency_key_reused');
    assert.equal((await jobsOf(t)).length, 1);
  });

  test('keys are scoped per workspace: another workspace with the same key gets its own job', async () => {
    const a = await createTenant(tdb.db, 100);
    const b = await createTenant(tdb.db, 100);
    const key = randomUUID();
    const ra = await api(gw.baseUrl, a.apiKey).post('/v1/images/generate', imageBody(a), withKey(key));
    const rb = await api(gw.baseUrl, b.apiKey).post('/v1/images/generate', imageBody(b), withKey(key));
    assert.equal(ra.status, 200);
    assert.equal(rb.status, 200);
    assert.notEqual(ra.body.data.id, rb.body.data.id);
    assert.equal(rb.headers.get('idempotent-replayed'), null);
  });

  test('a key longer than 255 characters is 400 invalid_request; 255 are accepted', async () => {
    const t = await createTenant(tdb.db, 100);
    const c = api(gw.baseUrl, t.apiKey);
    assertApiError(await c.post('/v1/images/generate', imageBody(t), withKey('k'.repeat(256))), 400, 'invalid_request');
    assert.equal((await jobsOf(t)).length, 0);
    assert.equal((await c.post('/v1/images/generate', imageBody(t), withKey('k'.repeat(255)))).status, 200);
  });

  test('a refused request (400, 402) charges nothing and releases the key for a corrected retry', async () => {
    const t = await createTenant(tdb.db, 3); // an image costs 4
    const c = api(gw.baseUrl, t.apiKey);
    const key = randomUUID();
    assertApiError(await c.post('/v1/images/generate', { ...imageBody(t), count: 9 }, withKey(key)), 400, 'invalid_request');
    assertApiError(await c.post('/v1/images/generate', imageBody(t), withKey(key)), 402, 'insufficient_credits');
    assert.equal(await creditsOf(tdb.db, t), 3);
    assert.equal((await jobsOf(t)).length, 0);
    await tdb.db.updateTable('workspaces').set({ credits: 10 }).where('id', '=', t.workspaceId).execute();
    const ok = await c.post('/v1/images/generate', imageBody(t), withKey(key));
    assert.equal(ok.status, 200, ok.text);
    assert.equal(await creditsOf(tdb.db, t), 6);
  });

  test('while the first request runs: 409 idempotency_in_progress; a stale claim (its gateway died) is taken over', async () => {
    const t = await createTenant(tdb.db, 100);
    const c = api(gw.baseUrl, t.apiKey);
    const key = randomUUID();
    const operation = 'POST /v1/images/generate';
    // A claim held by a live request elsewhere.
    assert.ok(await claimIdempotencyKey(tdb.db, { workspaceId: t.workspaceId, key, operation, fingerprint: null, token: 'other', leaseMs: 30_000 }));
    assertApiError(await c.post('/v1/images/generate', imageBody(t), withKey(key)), 409, 'idempotency_in_progress');
    assert.equal((await jobsOf(t)).length, 0);
    // Its holder stopped refreshing it (crashed before its transaction committed: no job, no charge).
    await tdb.db
      .updateTable('idempotency_keys')
      .set({ locked_at: sql`now() - interval '5 minutes'` })
      .where('key', '=', key)
      .execute();
    const taken = await c.post('/v1/images/generate', imageBody(t), withKey(key));
    assert.equal(taken.status, 200, taken.text);
    assert.equal((await jobsOf(t)).length, 1);
    // The old holder coming back cannot complete the claim (its transaction would roll back).
    assert.equal(await completeIdempotencyKey(tdb.db, { workspaceId: t.workspaceId, key, token: 'other', fingerprint: null, status: 200, body: {} }), false);
    const replay = await c.post('/v1/images/generate', imageBody(t), withKey(key));
    assert.deepEqual(replay.body, taken.body);
  });

  test('an answer older than 24 h is not replayed: the key starts over', async () => {
    const t = await createTenant(tdb.db, 100);
    const c = api(gw.baseUrl, t.apiKey);
    const key = randomUUID();
    const first = await c.post('/v1/images/generate', imageBody(t), withKey(key));
    await tdb.db
      .updateTable('idempotency_keys')
      .set({ created_at: sql`now() - interval '25 hours'` })
      .where('key', '=', key)
      .execute();
    const later = await c.post('/v1/images/generate', imageBody(t, 'another day'), withKey(key));
    assert.equal(later.status, 200, later.text);
    assert.notEqual(later.body.data.id, first.body.data.id);
  });

  test('50 concurrent identical requests over two replicas: exactly one job and one charge', async () => {
    const t = await createTenant(tdb.db, 1000);
    const key = randomUUID();
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) => api(i % 2 ? replica.baseUrl : gw.baseUrl, t.apiKey).post('/v1/images/generate', imageBody(t), withKey(key))),
    );
    const statuses = answers.map((a) => a.status);
    assert.ok(
      statuses.every((s) => s === 200 || s === 409),
      `statuses ${statuses.join(',')}`,
    );
    for (const a of answers.filter((x) => x.status === 409)) assert.equal(a.body.error.code, 'idempotency_in_progress');
    const ids = new Set(answers.filter((a) => a.status === 200).map((a) => a.body.data.id as string));
    assert.equal(ids.size, 1, 'every 200 carries the one job');
    const jobs = await jobsOf(t);
    assert.equal(jobs.length, 1);
    assert.equal(await creditsOf(tdb.db, t), 1000 - jobs[0]!.price);
    const replay = await api(gw.baseUrl, t.apiKey).post('/v1/images/generate', imageBody(t), withKey(key));
    assert.equal(replay.status, 200);
    assert.equal(replay.body.data.id, jobs[0]!.id);
  });
});

describe('Idempotency-Key on uploads', () => {
  async function upload(t: Tenant, key: string, file: Buffer, name = 'a.png', projectFirst = true) {
    const form = new FormData();
    if (projectFirst) form.append('project_id', t.projectId);
    form.append('file', new Blob([new Uint8Array(file)], { type: 'image/png' }), name);
    if (!projectFirst) form.append('project_id', t.projectId);
    const res = await fetch(`${gw.baseUrl}/v1/upload`, { method: 'POST', headers: { authorization: `Bearer ${t.apiKey}`, ...withKey(key) }, body: form });
    return { status: res.status, headers: res.headers, body: (await res.json()) as any };
  }
  const uploadRows = (t: Tenant) => tdb.db.selectFrom('file_uploads').select('id').where('workspace_id', '=', t.workspaceId).execute();

  test('multipart: the same project, file name and bytes replay the first upload (another boundary and part order); other bytes → 422', async () => {
    const t = await createTenant(tdb.db, 0);
    const key = randomUUID();
    const first = await upload(t, key, media['image/png']);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const again = await upload(t, key, media['image/png'], 'a.png', false);
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(again.body, first.body);
    assertApiError(await upload(t, key, media['image/jpeg'], 'a.png'), 422, 'idempotency_key_reused');
    assertApiError(await upload(t, key, media['image/png'], 'b.png'), 422, 'idempotency_key_reused');
    assert.equal((await uploadRows(t)).length, 1);
  });

  test('direct-upload create and upload-from-url: same key and body → one upload; a refused URL releases the key', async () => {
    const t = await createTenant(tdb.db, 0);
    const c = api(gw.baseUrl, t.apiKey);
    const key = randomUUID();
    const body = { project_id: t.projectId, name: 'clip.mp4', mime_type: 'video/mp4', size: 1000 };
    const first = await c.post('/v1/uploads', body, withKey(key));
    assert.equal(first.status, 200, first.text);
    const again = await c.post('/v1/uploads', body, withKey(key));
    assert.deepEqual(again.body, first.body);
    assertApiError(await c.post('/v1/uploads', { ...body, size: 1001 }, withKey(key)), 422, 'idempotency_key_reused');
    assert.equal((await uploadRows(t)).length, 1);

    const urlKey = randomUUID();
    assertApiError(await c.post('/v1/upload-from-url', { project_id: t.projectId, url: 'http://example.test/a.png' }, withKey(urlKey)), 400, 'invalid_request');
    const row = await tdb.db.selectFrom('idempotency_keys').select('key').where('key', '=', urlKey).executeTakeFirst();
    assert.equal(row, undefined, 'a refused request leaves no claim');
  });
});
