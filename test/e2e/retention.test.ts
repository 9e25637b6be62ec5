// Retention end to end: DELETE /v1/{kind}/{id} on the real gateway, workers, Postgres and MinIO
// removes a finished job's media (its URL then answers 410 gone, the record stays), refuses a job in
// flight (409) and another workspace's job (404), and is idempotent; OUTPUT_RETENTION_DAYS makes
// old outputs gone; the bucket lifecycle rules are applied idempotently and read back from MinIO.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createTenant, insertImageJob, rawMinioClient, testConfig, type TestDatabase } from '../support/stack.js';
import { api, assertApiError, startGateway, startService, waitForJobStatus, type Gateway, type Service } from '../support/services.js';
import { jobObjectKeys } from '../support/fixtures.js';
import { createStorage } from '../../shared/storage.js';
import { ABORT_MULTIPART_RULE_ID, OUTPUT_EXPIRY_RULE_ID, readLifecycleRules } from '../../shared/retention.js';
import type { Config } from '../../shared/config.js';

let svc: Service;
let tdb: TestDatabase;
let gw: Gateway;
let config: Config;

before(async () => {
  svc = await startService({ RATE_LIMIT_GENERATE_PER_MIN: '100000', RATE_LIMIT_POLL_PER_MIN: '100000' });
  ({ tdb, gw, config } = svc);
});

after(async () => {
  await svc?.close();
});

describe('DELETE /v1/{kind}/{id}', () => {
  test("removes a completed job's media: URL 410 gone, the record stays; twice is the same; other workspace 404", async () => {
    const t = await createTenant(tdb.db, 100);
    const c = api(gw.baseUrl, t.apiKey);
    const created = await c.post('/v1/images/generate', {
      project_id: t.projectId,
      prompt: 'to delete',
      model: 'nano-banana-2',
      aspect_ratio: '1:1',
      count: 2,
    });
    assert.equal(created.status, 200, created.text);
    const id = created.body.data.id as string;
    await waitForJobStatus(c, `/v1/images/${id}`, ['completed']);
    const url = await c.get(`/v1/images/${id}/url`);
    assert.equal(url.status, 200, url.text);
    assert.equal((await fetch(url.body.data.url)).status, 200);
    assert.ok((await jobObjectKeys(config, id)).length >= 2);

    const other = await createTenant(tdb.db, 0);
    assertApiError(await api(gw.baseUrl, other.apiKey).call('DELETE', `/v1/images/${id}`), 404, 'not_found');
    assertApiError(await c.call('DELETE', `/v1/videos/${id}`), 404, 'not_found');
    assertApiError(await api(gw.baseUrl).call('DELETE', `/v1/images/${id}`), 401, 'unauthorized');

    const deleted = await c.call('DELETE', `/v1/images/${id}`);
    assert.equal(deleted.status, 200, deleted.text);
    assert.equal(deleted.body.data.status, 'completed');
    assert.equal(typeof deleted.body.data.outputs_removed_at, 'number');
    assert.deepEqual(await jobObjectKeys(config, id), [], 'every object of the job is gone');
    assertApiError(await c.get(`/v1/images/${id}/url`), 410, 'gone');
    assert.notEqual((await fetch(url.body.data.url)).status, 200, 'a URL handed out before serves nothing');
    const status = await c.get(`/v1/images/${id}`);
    assert.equal(status.body.data.status, 'completed');
    assert.equal(status.body.data.outputs_removed_at, deleted.body.data.outputs_removed_at);
    const again = await c.call('DELETE', `/v1/images/${id}`);
    assert.deepEqual(again.body, deleted.body, 'idempotent');
    const row = await tdb.db.selectFrom('jobs').select(['outputs', 'price']).where('id', '=', id).executeTakeFirstOrThrow();
    assert.equal(row.outputs, null);
    assert.equal(row.price, 8, 'the record keeps its price');
  });

  test('a job in flight is 409 and keeps everything; a failed job can be deleted', async () => {
    const t = await createTenant(tdb.db, 100);
    const c = api(gw.baseUrl, t.apiKey);
    const pending = await insertImageJob(tdb.db, t);
    const r = await c.call('DELETE', `/v1/images/${pending.id}`);
    assertApiError(r, 409, 'not_ready');
    assert.equal(r.body.status, 'pending');
    const row = await tdb.db.selectFrom('jobs').select(['outputs_removed_at', 'status']).where('id', '=', pending.id).executeTakeFirstOrThrow();
    assert.deepEqual(row, { outputs_removed_at: null, status: 'pending' });
    await tdb.db
      .updateTable('jobs')
      .set({ status: 'failed', error: JSON.stringify({ code: 'generation_failed', message: 'x' }) })
      .where('id', '=', pending.id)
      .execute();
    const failed = await c.call('DELETE', `/v1/images/${pending.id}`);
    assert.equal(failed.status, 200, failed.text);
    assert.equal(failed.body.data.status, 'failed');
    // A failed job's URL stays generation_failed.
    assertApiError(await c.get(`/v1/images/${pending.id}/url`), 409, 'generation_failed');
  });

  test('OUTPUT_RETENTION_DAYS: a completed job older than the retention answers 410 gone', async () => {
    const short = await startGateway(
      testConfig(tdb.url, { TASK_QUEUE_PREFIX: config.TASK_QUEUE_PREFIX, OUTPUT_RETENTION_DAYS: '2', RATE_LIMIT_POLL_PER_MIN: '100000' }),
      tdb.db,
    );
    try {
      const t = await createTenant(tdb.db, 100);
      const job = await insertImageJob(tdb.db, t);
      const outputs = JSON.stringify([{ key: `jobs/${job.id}/x/output-1.png`, content_type: 'image/png', size: 1 }]);
      await tdb.db
        .updateTable('jobs')
        .set({ status: 'completed', outputs, finished_at: new Date(Date.now() - 3 * 86_400_000) })
        .where('id', '=', job.id)
        .execute();
      const c = api(short.baseUrl, t.apiKey);
      const r = await c.get(`/v1/images/${job.id}/url`);
      assertApiError(r, 410, 'gone');
      assert.match(r.body.error.message, /expired after 2 days/);
      await tdb.db
        .updateTable('jobs')
        .set({ finished_at: new Date(Date.now() - 86_400_000) })
        .where('id', '=', job.id)
        .execute();
      assert.equal((await c.get(`/v1/images/${job.id}/url`)).status, 200, 'within the retention the URL is served');
    } finally {
      await short.close();
    }
  });
});

describe('bucket lifecycle rules', () => {
  test('abort incomplete multipart uploads after a day, expire jobs/ after OUTPUT_RETENTION_DAYS; idempotent; other rules kept', async () => {
    const minio = rawMinioClient(config);
    const bucket = `lifecycle-${randomBytes(5).toString('hex')}`;
    await minio.makeBucket(bucket, config.S3_REGION);
    try {
      await minio.setBucketLifecycle(bucket, { Rule: [{ ID: 'someone-elses', Status: 'Enabled', Filter: { Prefix: 'tmp/' }, Expiration: { Days: 3 } }] });
      const storage = createStorage({ ...config, S3_BUCKET: bucket });
      const first = await storage.applyLifecycle(null);
      // This MinIO refuses AbortIncompleteMultipartUpload in a lifecycle configuration (it expires
      // stale multipart uploads itself, MINIO_API_STALE_UPLOADS_EXPIRY); a store that takes it keeps it.
      const abortIds = first.abortRule ? [ABORT_MULTIPART_RULE_ID] : [];
      let rules = await readLifecycleRules(minio, bucket);
      assert.deepEqual(rules.map((r) => r.ID).sort(), [...abortIds, 'someone-elses'].sort());
      if (first.abortRule) {
        const abort = rules.find((r) => r.ID === ABORT_MULTIPART_RULE_ID)!;
        assert.equal(Number(abort.AbortIncompleteMultipartUpload?.DaysAfterInitiation), 1);
      }
      assert.equal((await storage.applyLifecycle(null)).changed, false, 'a second start changes nothing');

      assert.deepEqual(await storage.applyLifecycle(30), { changed: true, abortRule: first.abortRule });
      rules = await readLifecycleRules(minio, bucket);
      const expire = rules.find((r) => r.ID === OUTPUT_EXPIRY_RULE_ID)!;
      assert.equal(Number(expire.Expiration?.Days), 30);
      assert.equal(expire.Filter?.Prefix, 'jobs/');
      assert.equal(expire.Status, 'Enabled');
      assert.ok(
        rules.some((r) => r.ID === 'someone-elses'),
        'a rule of someone else is kept',
      );
      assert.equal((await storage.applyLifecycle(30)).changed, false);
      // Retention switched off again: the expiry rule goes, the others stay.
      assert.equal((await storage.applyLifecycle(null)).changed, true);
      assert.deepEqual((await readLifecycleRules(minio, bucket)).map((r) => r.ID).sort(), [...abortIds, 'someone-elses'].sort());
    } finally {
      await minio.removeBucketLifecycle(bucket).catch(() => undefined);
      await minio.removeBucket(bucket);
    }
  });
});
