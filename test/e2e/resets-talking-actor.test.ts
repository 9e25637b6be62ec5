// An operator's Reset of a talking actor, on the real stack (gateway over HTTP, Temporal, Postgres,
// MinIO), its two steps on local fakes: the speech on ElevenLabs' queue, then the lipsync on fal's,
// which refuses the generation after its submit (content policy). The job fails, refunded; its
// failure removes its media but keeps the speech the replayed request names. A reset to the task
// right after the speech step (the step replayed from the history, not run) or to the first task
// (the step run again) claims the job (re-charging it) and submits one new lipsync whose audio is
// there to download: the job ends completed, charged once, and ElevenLabs was paid for one speech.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, unhurriedLimits, type Tenant, type TestDatabase } from '../support/stack.js';
import { creditsOf, startService, api, type InProcessGateway as Gateway, type Service } from '../support/services.js';
import { startLiveFal, type LiveFal } from '../support/fake-providers/live-fal.js';
import { startFakeElevenLabs, type FakeElevenLabs } from '../support/fake-providers/elevenlabs.js';
import { insertActor, insertVoice, jobObjectKeys } from '../support/fixtures.js';
import { closedRun, resetRun, runHistory } from '../support/resets.js';
import { jobLedger, jobRow } from '../support/job-helpers.js';
import { catalog, priceFor } from '../../shared/catalog.js';
import type { Config } from '../../shared/config.js';

let suite: Service;
let tdb: TestDatabase;
let live: LiveFal;
let el: FakeElevenLabs;
let config: Config;
let gw: Gateway;
const credits = 1000;

before(async () => {
  [live, el] = await Promise.all([startLiveFal(), startFakeElevenLabs()]);
  suite = await startService(
    {
      ...live.env,
      ...el.env,
      ...unhurriedLimits,
    },
    { roles: 'workflows,io,fetch,provider:fal,provider:elevenlabs' },
  );
  ({ tdb, config, gw } = suite);
});

after(async () => {
  await suite?.close();
  await Promise.all([live?.close(), el?.close()]);
});

const speechesOf = (script: string) => el.requestsOf('tts').filter((r) => (r.json as { text?: string }).text === script).length;
const lipsyncsOf = (id: string) => live.fal.requestsOf('submit').filter((r) => JSON.stringify(r.json).includes(`jobs/${id}/`));

/** A talking actor whose lipsync fal refused after its submit: failed, refunded, its speech kept. */
async function failedTalkingActor(t: Tenant, script: string): Promise<{ id: string; runId: string; price: number }> {
  const voice = await insertVoice(tdb.db, { providerVoiceId: [...el.voices][0]! });
  const actor = await insertActor(tdb.db, gw.storage, { defaultVoiceId: voice });
  live.fal.nextOutcome('content_policy');
  const r = await api(gw.baseUrl, t.apiKey).post('/v1/talking-actors/generate', { project_id: t.projectId, actor_id: actor, script });
  assert.equal(r.status, 200, r.text);
  const id = r.body.data.id as string;
  const runId = await closedRun(gw.client, id, 'FAILED');
  const price = priceFor(catalog['talking-actor'], { script });
  assert.deepEqual(await jobLedger(tdb.db, id), [
    ['charge', -price],
    ['refund', price],
  ]);
  assert.equal(speechesOf(script), 1);
  assert.equal(lipsyncsOf(id).length, 1);
  const keys = await jobObjectKeys(config, id);
  assert.ok(keys.length === 1 && keys[0]!.endsWith('/speech.wav'), `the failure keeps the speech, nothing else: ${keys.join(', ')}`);
  return { id, runId, price };
}

/** The reset points: the first workflow task, and the one that followed the speech step's result. */
async function points(id: string, runId: string): Promise<{ first: number; afterSpeech: number }> {
  const h = await runHistory(gw.client, id, runId);
  const spoken = h.events.find((e) => e.activityTaskCompletedEventAttributes && Number(e.eventId) > 0 && scheduledType(h.events, e) === 'speak');
  assert.ok(spoken, 'the history has the speech step');
  const afterSpeech = h.points.find((p) => p > Number(spoken.eventId));
  assert.ok(afterSpeech !== undefined);
  return { first: h.points[0]!, afterSpeech };
}

type Events = Awaited<ReturnType<typeof runHistory>>['events'];
function scheduledType(events: Events, completed: Events[number]): string | undefined {
  const scheduledId = Number(completed.activityTaskCompletedEventAttributes!.scheduledEventId);
  return events.find((e) => Number(e.eventId) === scheduledId)?.activityTaskScheduledEventAttributes?.activityType?.name ?? undefined;
}

describe('resetting a talking actor whose lipsync fal refused', () => {
  for (const at of ['afterSpeech', 'first'] as const) {
    test(`reset to ${at === 'first' ? 'its first workflow task (the speech step runs again)' : 'the task after its speech step (replayed)'}: completed, charged once, one speech paid`, async () => {
      const t = await createTenant(tdb.db, credits);
      const script = `The lighthouse keeps its light on [${at}-${t.workspaceId}].`;
      const { id, runId, price } = await failedTalkingActor(t, script);
      const point = (await points(id, runId))[at];
      const newRun = await resetRun(gw.client, config.TEMPORAL_NAMESPACE, id, runId, point);

      assert.deepEqual(await gw.client.workflow.getHandle(id, newRun).result(), { outputs: 1 });
      const row = await jobRow(tdb.db, id);
      assert.equal(row.status, 'completed', JSON.stringify(row.error));
      assert.deepEqual(await jobLedger(tdb.db, id), [
        ['charge', -price],
        ['refund', price],
        ['recharge', -price],
      ]);
      assert.equal(await creditsOf(tdb.db, t), credits - price, 'charged exactly once in total');
      assert.equal(speechesOf(script), 1, 'ElevenLabs spoke the script once: the new run found the stored speech');
      const lipsyncs = lipsyncsOf(id);
      assert.equal(lipsyncs.length, 2, 'the refused lipsync, then one new one');
      // The new lipsync's audio is there to download, as fal's runner would.
      const audio = await fetch(String((lipsyncs[1]!.json as { audio_url: string }).audio_url));
      assert.equal(audio.status, 200);
      assert.equal(audio.headers.get('content-type'), 'audio/wav');
    });
  }
});
