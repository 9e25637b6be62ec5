// A speech synthesis that takes two and a half minutes, through the whole stack: a talking-actor
// job created over HTTP on the live route (PROVIDERS_MODE=live), its speech from a local
// ElevenLabs server that answers after 150 s, its lipsync on a local fal queue whose output comes
// from a loopback HTTPS "CDN". The speech step heartbeats while the speech call runs, so the
// call is made (and paid) once, and the job completes, charged once. The ElevenLabs adapter's own
// HTTP timeout (240 s, its default: there is no setting for it) is above the synthesis time.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, waitFor, type TestDatabase } from '../support/stack.js';
import { api, creditsOf, startService, waitForJobStatus, type InProcessGateway as Gateway, type Service } from '../support/services.js';
import { insertActor, insertVoice } from '../support/fixtures.js';
import { startFakeElevenLabs, type FakeElevenLabs } from '../support/fake-providers/elevenlabs.js';
import { startFakeFal, type FakeFal } from '../support/fake-providers/fal.js';
import { makeSampleMedia, startHttpsTestServer, type HttpsTestServer, type SampleMedia } from '../support/https-server.js';
import { ledgerForJob } from '../support/ledger.js';

const SYNTHESIS_MS = 150_000;

let suite: Service;
let tdb: TestDatabase;
let gw: Gateway;
let el: FakeElevenLabs;
let fal: FakeFal;
let cdn: HttpsTestServer;
let media: SampleMedia;

before(async () => {
  [el, fal, cdn, media] = await Promise.all([startFakeElevenLabs(), startFakeFal(), startHttpsTestServer(), makeSampleMedia()]);
  fal.filesBaseUrl = cdn.origin;
  suite = await startService(
    {
      PROVIDERS_MODE: 'live',
      ...el.env,
      FAL_KEY: fal.key,
      FAL_QUEUE_URL: fal.url,
      // The lipsync video is fetched from the fake fal's CDN: loopback HTTPS, trusted by this test only.
      FETCH_ALLOW_LOOPBACK_ORIGIN: cdn.origin,
      FETCH_EXTRA_CA_FILE: cdn.caFile,
      PROVIDER_OUTPUT_HOSTS: '127.0.0.1',
      RECONCILE_INTERVAL_MS: '3600000',
    },
    { roles: 'workflows,io,fetch,provider:elevenlabs,provider:fal' },
  );
  ({ tdb, gw } = suite);
});

after(async () => {
  await suite?.close();
  await Promise.all([el?.close(), fal?.close(), cdn?.close()]);
});

describe('a long speech synthesis', () => {
  test('A fake ElevenLabs that takes 150 s: one synthesis call, job completed', { timeout: 280_000 }, async () => {
    el.synthesisDelayMs = SYNTHESIS_MS;
    const t = await createTenant(tdb.db, 1000);
    const voiceId = await insertVoice(tdb.db, { providerVoiceId: [...el.voices][0]! });
    const actorId = await insertActor(tdb.db, gw.storage, { defaultVoiceId: voiceId });
    const c = api(gw.baseUrl, t.apiKey);

    const created = await c.post('/v1/talking-actors/generate', {
      project_id: t.projectId,
      actor_id: actorId,
      voice_id: voiceId,
      script: 'Hello there. This script takes the voice a long while to speak.',
    });
    assert.equal(created.status, 200, created.text);
    const id = created.body.data.id as string;
    const price = 1000 - (await creditsOf(tdb.db, t));
    assert.ok(price > 0);

    await waitFor('the speech request at ElevenLabs', () => el.requestsOf('tts').length === 1, 60_000);
    const startedAt = Date.now();
    // The lipsync is submitted once the speech is back; its video is served by the CDN from then on.
    // (A second speech request instead means the step was given up on and retried: paid twice.)
    await waitFor('the lipsync request at fal', () => fal.states.size === 1 || el.requestsOf('tts').length > 1, SYNTHESIS_MS + 60_000);
    assert.equal(el.requestsOf('tts').length, 1, 'one synthesis call while the first one ran');
    const [lipsyncId] = fal.states.keys();
    cdn.file(`/files/${lipsyncId}.mp4`, media['video/mp4'], 'video/mp4');
    assert.ok(Date.now() - startedAt >= SYNTHESIS_MS - 1000, 'the lipsync waited for the speech');

    const done = await waitForJobStatus(c, `/v1/talking-actors/${id}`, ['completed', 'failed'], 120_000);
    assert.equal(done.status, 'completed', JSON.stringify(done));
    assert.equal(el.requestsOf('tts').length, 1, 'one synthesis call');
    assert.equal(fal.requestsOf('submit').length, 1, 'one lipsync request');
    assert.deepEqual(
      (await ledgerForJob(tdb.db, id)).map((l) => [l.reason, l.delta]),
      [['charge', -price]],
    );
    assert.equal(await creditsOf(tdb.db, t), 1000 - price);
  });
});
