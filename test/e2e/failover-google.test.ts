// veo-3.1's second route on the real stack: fal's queue first, then Google's Gemini API
// (Veo 3.1), both local fakes speaking their providers' protocols. With fal answering 503 to every
// call, a text-to-video 8 s job completes on Google, charged once, with one Google submit; a first-and-
// last-frame job moves too, its frames sent inline; a job the Google route cannot take (4 s) is stored
// without failover routes and never reaches Google. sora-2, served as Veo 3.1 Fast, moves the same way.
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, creditsOf, type InProcessGateway as Gateway } from '../support/services.js';
import { startFailoverStack, type FailoverStack } from '../support/failover-stack.js';
import { createVideoOnFal, jobFinished, jobLedger, jobRow } from '../support/job-helpers.js';
import type { FakeFal } from '../support/fake-providers/fal.js';
import type { FakeGoogle } from '../support/fake-providers/google.js';
import { json } from '../support/fake-providers/server.js';
import { insertUpload } from '../support/fixtures.js';
import { buffer } from 'node:stream/consumers';

let stack: FailoverStack<'google'>;
let tdb: TestDatabase;
let fal: FakeFal;
let google: FakeGoogle;
let gw: Gateway;

const model = 'veo-3.1';
const unavailable = json(503, { detail: 'Service Unavailable' });

before(async () => {
  stack = await startFailoverStack({
    secondary: 'google',
    roles: 'workflows,io,fetch,provider:fal,provider:google',
    env: { PROVIDER_BREAKER_OPEN_MS: '3600000' },
  });
  ({ tdb, fal, secondary: google, gw } = stack);
});

after(() => stack?.close());

beforeEach(async () => {
  fal.up();
  google.up();
  fal.flow = ['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED'];
  await tdb.db.deleteFrom('provider_circuits').execute();
});

const create = (t: Tenant, marker: string, duration: number, more: Record<string, unknown> = {}) =>
  createVideoOnFal(gw.baseUrl, t, model, marker, { duration, resolution: '720p', ...more });

const rowOf = (id: string) => jobRow(tdb.db, id);
const finished = (id: string) => jobFinished(tdb.db, id);

const googleSubmits = (marker: string) => google.requestsOf('submit').filter((r) => JSON.stringify(r.json).includes(marker)).length;
const ledger = (id: string) => jobLedger(tdb.db, id);

describe('veo-3.1 and sora-2 fail over from fal to Google (Gemini API)', () => {
  test('fal answers 503 to everything: the job completes on Google, charged once, with one Google submit', async () => {
    fal.down(['submit', 'status', 'result', 'cancel'], unavailable);
    const t = await createTenant(tdb.db, 1000);
    const marker = '[fal-down]';
    const id = await create(t, marker, 8);
    const row = await finished(id);
    assert.equal(row.status, 'completed', JSON.stringify(row.error));
    assert.equal(row.outputs?.length, 1);
    assert.equal(googleSubmits(marker), 1, 'exactly one submit on Google');
    const submit = google.requestsOf('submit').find((r) => JSON.stringify(r.json).includes(marker))!;
    assert.equal(submit.path, '/v1beta/models/veo-3.1-generate-preview:predictLongRunning');
    assert.deepEqual((submit.json as { parameters: unknown }).parameters, { aspectRatio: '16:9', resolution: '720p', durationSeconds: 8 });
    const price = 20 * 8;
    assert.deepEqual(await ledger(id), [['charge', -price]], 'charged once');
    assert.equal(await creditsOf(tdb.db, t), 1000 - price);
    const r = await api(gw.baseUrl, t.apiKey).get(`/v1/videos/${id}`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.data.provider, 'google');
    assert.equal(r.body.data.provider_attempts?.length, 1);
    assert.equal(r.body.data.provider_attempts[0].provider, 'fal');
  });

  test('a first-and-last-frame job moves to Google with both frames inline (base64 of the uploads, image/png)', async () => {
    fal.down(['submit', 'status', 'result', 'cancel'], unavailable);
    const t = await createTenant(tdb.db, 1000);
    const [start, end] = [await insertUpload(tdb.db, gw.storage, t, 'image'), await insertUpload(tdb.db, gw.storage, t, 'image')];
    const marker = '[two-frames]';
    const id = await create(t, marker, 8, { start_frame_file_id: start, end_frame_file_id: end });
    const row = await finished(id);
    assert.equal(row.status, 'completed', JSON.stringify(row.error));
    const submit = google.requestsOf('submit').find((r) => JSON.stringify(r.json).includes(marker))!;
    const instance = (
      submit.json as { instances: { image?: { bytesBase64Encoded: string; mimeType: string }; lastFrame?: { bytesBase64Encoded: string; mimeType: string } }[] }
    ).instances[0]!;
    for (const [frame, fileId] of [
      [instance.image, start],
      [instance.lastFrame, end],
    ] as const) {
      const upload = await tdb.db.selectFrom('file_uploads').select('object_key').where('id', '=', fileId).executeTakeFirstOrThrow();
      const stored = await buffer(await gw.storage.getStream(upload.object_key));
      assert.equal(frame?.mimeType, 'image/png');
      assert.ok(Buffer.from(frame!.bytesBase64Encoded, 'base64').equals(stored), 'the frame is the uploaded image, byte for byte');
    }
  });

  test('sora-2 (Veo 3.1 Fast on fal) moves to Google as veo-3.1-fast-generate-preview, charged once at its own price', async () => {
    fal.down(['submit', 'status', 'result', 'cancel'], unavailable);
    const t = await createTenant(tdb.db, 1000);
    const marker = '[sora-2]';
    const id = await create(t, marker, 8, { model: 'sora-2' });
    const row = await finished(id);
    assert.equal(row.status, 'completed', JSON.stringify(row.error));
    assert.equal((await api(gw.baseUrl, t.apiKey).get(`/v1/videos/${id}`)).body.data.provider, 'google');
    assert.equal(googleSubmits(marker), 1);
    assert.equal(
      google.requestsOf('submit').find((r) => JSON.stringify(r.json).includes(marker))!.path,
      '/v1beta/models/veo-3.1-fast-generate-preview:predictLongRunning',
    );
    assert.deepEqual(await ledger(id), [['charge', -10 * 8]], 'charged once');
  });

  test('a job Google cannot take (4 s) is stored without failover routes and stays on fal', async () => {
    const t = await createTenant(tdb.db, 1000);
    const marker = '[four-seconds]';
    const id = await create(t, marker, 4);
    const stored = await rowOf(id);
    assert.equal((stored.params as { routes?: unknown }).routes, undefined, 'no failover routes for a job only fal can take');
    const row = await finished(id);
    assert.equal(row.status, 'completed', JSON.stringify(row.error));
    assert.equal(googleSubmits(marker), 0);
  });

  test("Google answers 404 NOT_FOUND for the model: the route is given up at once (never the customer's error), and the job fails as unavailable, refunded", async () => {
    fal.down(['submit', 'status', 'result', 'cancel'], unavailable);
    google.script(
      'submit',
      json(404, { error: { code: 404, message: 'models/veo-3.1-generate-preview is not found for API version v1beta', status: 'NOT_FOUND' } }),
    );
    const t = await createTenant(tdb.db, 1000);
    const marker = '[google-model-gone]';
    const id = await create(t, marker, 8);
    const row = await finished(id);
    assert.equal(row.status, 'failed');
    assert.match(row.error!.message, /every route of veo-3.1 failed: fal: .*; then google: .*not served on this route \(HTTP 404\)/);
    assert.equal(googleSubmits(marker), 1, 'one refused submit at Google: the route is given up at once, not retried');
    assert.deepEqual(
      (await ledger(id)).map(([kind]) => kind),
      ['charge', 'refund'],
      'the customer is refunded',
    );
    assert.equal(await creditsOf(tdb.db, t), 1000);
  });

  test('a per-minute 429 at Google (RetryInfo 1s) is retried and the job completes on Google', async () => {
    fal.down(['submit', 'status', 'result', 'cancel'], unavailable);
    google.script(
      'submit',
      json(429, {
        error: {
          code: 429,
          message: 'You exceeded your current quota, please check your plan and billing details.',
          status: 'RESOURCE_EXHAUSTED',
          details: [
            {
              '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
              violations: [
                {
                  quotaMetric: 'generativelanguage.googleapis.com/predict_long_running_requests',
                  quotaId: 'PredictLongRunningRequestsPerMinutePerProjectPerModel',
                },
              ],
            },
            { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '1s' },
          ],
        },
      }),
    );
    const t = await createTenant(tdb.db, 1000);
    const marker = '[google-per-minute]';
    const before = google.requestsOf('submit').length;
    const id = await create(t, marker, 8);
    const row = await finished(id);
    assert.equal(row.status, 'completed', JSON.stringify(row.error));
    assert.equal((row.params as { provider: string }).provider, 'google');
    assert.ok(google.requestsOf('submit').length - before >= 2, 'the rate-limited submit was asked again');
    assert.equal(googleSubmits(marker), 2, 'the refused submit and the one that started the generation');
    assert.deepEqual(await ledger(id), [['charge', -20 * 8]], 'charged once');
  });
});
