// Every job kind, over HTTP against the real stack, with the job held before it starts (a real
// activity interceptor, no timing): 409 not_ready while pending, 403 on create in another
// workspace's project, 404 on status / url / cancel from another workspace, cancel with credits
// checked, 409 generation_failed after it — and every answer validated live against the OpenAPI
// document the gateway serves.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, creditsOf, startService, waitForJobStatus, type InProcessGateway as Gateway, type Service } from '../support/services.js';
import { insertActor, insertUpload, insertVoice } from '../support/fixtures.js';
import { Holds } from '../support/holds.js';
import { documentValidator } from '../support/openapi.js';
import { ledgerForJob } from '../support/ledger.js';

let suite: Service;
let tdb: TestDatabase;
let gw: Gateway;
let assertMatchesDocument: ReturnType<typeof documentValidator>;
const holds = new Holds();

before(async () => {
  suite = await startService(
    { RECONCILE_INTERVAL_MS: '3600000', RATE_LIMIT_GENERATE_PER_MIN: '1000', RATE_LIMIT_POLL_PER_MIN: '100000' },
    { workers: { activityInterceptors: [holds.activityInterceptor] } },
  );
  ({ tdb, gw } = suite);
  const doc = await api(gw.baseUrl).get('/v1/openapi.json');
  assert.equal(doc.status, 200);
  assertMatchesDocument = documentValidator(doc.body);
});

after(async () => {
  await suite?.close();
});

interface Kind {
  name: string;
  createPath: string;
  /** Path template of status / url / cancel, as in the document. */
  base: string;
  body(t: Tenant): Promise<Record<string, unknown>>;
}

const kinds: Kind[] = [
  {
    name: 'image',
    createPath: '/v1/images/generate',
    base: '/v1/images',
    body: async (t) => ({ project_id: t.projectId, prompt: 'held image', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 }),
  },
  {
    name: 'video',
    createPath: '/v1/videos/generate',
    base: '/v1/videos',
    body: async (t) => ({ project_id: t.projectId, prompt: 'held video', model: 'seedance-1.5', aspect_ratio: '9:16', duration: 4, resolution: '480p' }),
  },
  {
    name: 'replace-actor',
    createPath: '/v1/replace-actors/generations',
    base: '/v1/replace-actors/generations',
    body: async (t) => ({
      project_id: t.projectId,
      image_file_id: await insertUpload(tdb.db, gw.storage, t, 'image'),
      video_file_id: await insertUpload(tdb.db, gw.storage, t, 'video'),
      duration: 3,
    }),
  },
  {
    name: 'talking-actor',
    createPath: '/v1/talking-actors/generate',
    base: '/v1/talking-actors',
    body: async (t) => {
      const voiceId = await insertVoice(tdb.db);
      return {
        project_id: t.projectId,
        actor_id: await insertActor(tdb.db, gw.storage, { defaultVoiceId: voiceId }),
        voice_id: voiceId,
        script: 'Hello there.',
      };
    },
  },
];

describe('every job kind, held before it starts', () => {
  for (const kind of kinds) {
    test(`${kind.name}: not_ready while pending, 403 / 404 across workspaces, cancel refunds, then generation_failed — all as documented`, async () => {
      const owner = await createTenant(tdb.db, 10_000);
      const other = await createTenant(tdb.db, 10_000);
      const c = api(gw.baseUrl, owner.apiKey);
      const stranger = api(gw.baseUrl, other.apiKey);
      const body = await kind.body(owner);
      const item = `${kind.base}/{id}`;

      // Another workspace cannot create in this project, and is charged nothing.
      const forbidden = await stranger.post(kind.createPath, body);
      assert.equal(forbidden.status, 403, forbidden.text);
      assert.equal(forbidden.body.error.code, 'forbidden');
      assertMatchesDocument('post', kind.createPath, forbidden);
      assert.equal(await creditsOf(tdb.db, other), 10_000);

      const start = holds.activity('startGenerating', 'before');
      const created = await c.post(kind.createPath, body);
      assert.equal(created.status, 200, created.text);
      assertMatchesDocument('post', kind.createPath, created);
      const id = created.body.data.id as string;
      assert.equal(await start.reached, id);
      const charged = 10_000 - (await creditsOf(tdb.db, owner));
      assert.ok(charged > 0);

      const status = await c.get(`${kind.base}/${id}`);
      assert.equal(status.status, 200);
      assert.equal(status.body.data.status, 'pending');
      assertMatchesDocument('get', item, status);
      const notReady = await c.get(`${kind.base}/${id}/url`);
      assert.equal(notReady.status, 409, notReady.text);
      assert.deepEqual([notReady.body.error.code, notReady.body.status], ['not_ready', 'pending']);
      assertMatchesDocument('get', `${item}/url`, notReady);

      for (const [method, path] of [
        ['get', ''],
        ['get', '/url'],
        ['post', '/cancel'],
      ] as const) {
        const res = await stranger.call(method.toUpperCase(), `${kind.base}/${id}${path}`);
        assert.equal(res.status, 404, `${method} ${path}: ${res.text}`);
        assert.equal(res.body.error.code, 'not_found');
        assertMatchesDocument(method, `${item}${path}`, res);
      }

      const canceled = await c.post(`${kind.base}/${id}/cancel`);
      assert.equal(canceled.status, 200, canceled.text);
      assertMatchesDocument('post', `${item}/cancel`, canceled);
      start.release();
      const failed = await waitForJobStatus(c, `${kind.base}/${id}`, ['failed', 'completed']);
      assert.equal(failed.status, 'failed');
      assert.equal(failed.error.code, 'canceled');
      assertMatchesDocument('get', item, await c.get(`${kind.base}/${id}`));
      const gone = await c.get(`${kind.base}/${id}/url`);
      assert.equal(gone.status, 409);
      assert.deepEqual([gone.body.error.code, gone.body.status], ['generation_failed', 'failed']);
      assertMatchesDocument('get', `${item}/url`, gone);
      const again = await c.post(`${kind.base}/${id}/cancel`);
      assert.equal(again.status, 409);
      assertMatchesDocument('post', `${item}/cancel`, again);

      assert.equal(await creditsOf(tdb.db, owner), 10_000);
      assert.deepEqual(
        (await ledgerForJob(tdb.db, id)).map((l) => [l.reason, Number(l.delta)]),
        [
          ['charge', -charged],
          ['refund', charged],
        ],
      );
    });
  }
});
