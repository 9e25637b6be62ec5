// Remote URLs as job inputs, end to end: a replace-actor job given image_url and video_url has the
// workflow fetch both through the SSRF-safe fetcher (from a self-signed loopback HTTPS server that
// only this suite trusts), then render. A URL the guard refuses fails the job with a refund.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, type TestDatabase } from '../support/stack.js';
import { api, creditsOf, startService, waitForJobStatus, type InProcessGateway as Gateway, type Service } from '../support/services.js';
import { makeSampleMedia, startHttpsTestServer, type HttpsTestServer } from '../support/https-server.js';
import { jobObjectKeys, probeUrl } from '../support/fixtures.js';
import { ledgerForJob } from '../support/ledger.js';

let svc: Service;
let tdb: TestDatabase;
let gw: Gateway;
let remote: HttpsTestServer;

before(async () => {
  remote = await startHttpsTestServer();
  const media = await makeSampleMedia();
  remote.file('/character.png', media['image/png'], 'image/png');
  remote.file('/motion.mp4', media['video/mp4'], 'video/mp4');
  remote.route('/to-private', (_q, r) => r.writeHead(302, { location: 'https://10.0.0.7/motion.mp4' }).end());
  svc = await startService({
    FETCH_ALLOW_LOOPBACK_ORIGIN: remote.origin,
    FETCH_EXTRA_CA_FILE: remote.caFile,
    FETCH_TOTAL_TIMEOUT_MS: '10000',
    RECONCILE_INTERVAL_MS: '3600000',
  });
  ({ tdb, gw } = svc);
});

after(async () => {
  await svc?.close();
  await remote?.close();
});

const finished = (c: ReturnType<typeof api>, id: string) => waitForJobStatus(c, `/v1/replace-actors/generations/${id}`, ['completed', 'failed']);

describe('remote URLs as job inputs', () => {
  test('a replace-actor job from image_url and video_url fetches both and completes', async () => {
    const t = await createTenant(tdb.db, 1000);
    const c = api(gw.baseUrl, t.apiKey);
    const created = await c.post('/v1/replace-actors/generations', {
      project_id: t.projectId,
      image_url: `${remote.origin}/character.png`,
      video_url: `${remote.origin}/motion.mp4`,
      duration: 3,
      aspect_ratio: '16:9',
    });
    assert.equal(created.status, 200, created.text);
    const job = await finished(c, created.body.data.id);
    assert.equal(job.status, 'completed', JSON.stringify(job.error));
    assert.ok(remote.requests.includes('/character.png') && remote.requests.includes('/motion.mp4'));
    const url = await c.get(`/v1/replace-actors/generations/${job.id}/url`);
    const media = await probeUrl(url.body.data.url);
    assert.equal(media.width! * 9, media.height! * 16);
    assert.ok(Math.abs(media.durationSeconds! - 3) <= 0.5);
  });

  test('a URL whose redirect leads to a private address fails the job and refunds it', async () => {
    const t = await createTenant(tdb.db, 1000);
    const c = api(gw.baseUrl, t.apiKey);
    const created = await c.post('/v1/replace-actors/generations', {
      project_id: t.projectId,
      image_url: `${remote.origin}/character.png`,
      video_url: `${remote.origin}/to-private`,
      duration: 3,
    });
    assert.equal(created.status, 200, created.text);
    const job = await finished(c, created.body.data.id);
    assert.equal(job.status, 'failed');
    assert.equal(job.error.code, 'generation_failed');
    assert.match(job.error.message, /private|not public|refused/i);
    assert.ok(remote.requests.includes('/character.png'), 'the image input was fetched before the video was refused');
    const keys = await jobObjectKeys(svc.config, job.id);
    assert.ok(
      keys.every((k) => /\/input-image\.\w+$/.test(k)),
      `a failed job keeps only the inputs it fetched (a reset reuses them): ${keys.join(', ')}`,
    );
    const ledger = await ledgerForJob(tdb.db, job.id);
    assert.deepEqual(
      ledger.map((l) => l.reason),
      ['charge', 'refund'],
    );
    assert.equal(await creditsOf(tdb.db, t), 1000);
  });
});
