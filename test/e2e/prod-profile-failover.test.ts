// Chaos during a failover on the prod profile (scripts/stack.sh up prod): the Temporal server on
// Postgres, two gateways and the worker fleets as their own processes. The suite points the profile
// at local fakes through its overrides file ($STATE/overrides.env, read by scripts/stack-prod.sh):
// grok-video's two live routes are the fake fal queue, then the fake xAI video API, outputs on a
// loopback HTTPS "CDN". That CDN is why the overrides also set NODE_ENV=test: production refuses
// FETCH_ALLOW_LOOPBACK_ORIGIN, the only way past the SSRF guard to a loopback origin. fal accepts
// every submit and then answers 502 to every status check, so each job gives fal up and moves to xAI;
// the xAI fleet's worker process (worker-xai) is killed with SIGKILL while every job's first status
// check at xAI is in flight, and `stack.sh up prod` starts it again. Every job completes on xAI with
// one submit there, its fal request canceled once, charged its price once.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import type { Database } from '../../db/index.js';
import { createTenant, waitFor } from '../support/stack.js';
import { api, creditsOf } from '../support/services.js';
import { openProfileSuite, processAlive, type ProfileSuite } from '../support/profile-stack.js';
import { falRequestsWith, submitsWith } from '../support/failover-stack.js';
import { jobFinished, jobLedger, jobRow } from '../support/job-helpers.js';
import { startLiveFal, type LiveFal } from '../support/fake-providers/live-fal.js';
import { startFakeXai, type FakeXai } from '../support/fake-providers/xai.js';
import { json } from '../support/fake-providers/server.js';
import { roleScopedSecrets, secretsOfRoles } from '../../shared/routing.js';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

let suite: ProfileSuite;
let stack: ProfileSuite['stack'];
let db: Database;
let temporal: Client;
let live: LiveFal;
let xai: FakeXai;

const model = 'grok-video';
const price = 6; // grok-video, 1 second
const jobs = 5;
const up = () => suite.up();

/** The breaker of grok-video's routes starts closed: an earlier run's failovers may have opened fal's. */
const resetCircuits = (d: Database) => d.deleteFrom('provider_circuits').where('model', '=', model).execute();

before(
  async () => {
    live = await startLiveFal();
    xai = await startFakeXai();
    xai.filesBaseUrl = live.cdn.origin;
    const overrides = { ...live.env, NODE_ENV: 'test', XAI_API_KEY: xai.key, XAI_BASE_URL: xai.url, PROVIDER_FAILOVER_BUDGET_MS: '1500' };
    suite = await openProfileSuite('prod', { overrides, beforeUp: (d) => resetCircuits(d) });
    ({ stack, db, temporal } = suite);
  },
  { timeout: 4_200_000 },
);

after(
  async () => {
    // Back to the profile's own settings, breakers closed, for the suites that follow.
    await suite?.close(() => resetCircuits(db));
    await Promise.all([live?.close(), xai?.close()]);
  },
  { timeout: 600_000 },
);

const rowOf = (id: string) => jobRow(db, id);

test(
  `${jobs} jobs fail over from fal to xAI and worker-xai is killed (SIGKILL) right after their submits: restarted by up prod, one submit each, fal canceled once, credits exact`,
  { timeout: 600_000 },
  async () => {
    const fal = live.fal;
    fal.flow = ['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED'];
    fal.down(['status'], json(502, { detail: 'Bad Gateway' }));
    // Each job's first status check at xAI hangs, so every step is in flight after its submit when the worker goes.
    xai.script('status', { status: 202, delayMs: 45_000 }, jobs);
    const startCredits = 1000;
    const t = await createTenant(db, startCredits);
    const markers = Array.from({ length: jobs }, (_, i) => `[prod-failover-${i}]`);
    const ids = await Promise.all(
      markers.map(async (marker, i) => {
        const r = await api(stack.gateways[i % 2]!, t.apiKey).post('/v1/videos/generate', {
          project_id: t.projectId,
          prompt: `a lighthouse at dusk ${marker}`,
          model,
          aspect_ratio: '16:9',
          duration: 1,
          resolution: '480p',
        });
        assert.equal(r.status, 200, r.text);
        assert.equal(r.body.data.provider, 'fal', 'new jobs start on the first route');
        return r.body.data.id as string;
      }),
    );

    const killed = await stack.pid('worker-xai');
    await waitFor(
      'every job submitted at xAI, its first status check there in flight on worker-xai',
      async () => {
        for (const id of ids) {
          if (((await rowOf(id)).provider_ref as { provider?: string } | null)?.provider !== 'xai') return undefined;
          const desc = await temporal.workflow.getHandle(id).describe();
          const step = (desc.raw.pendingActivities ?? []).find((a) => a.activityType?.name === 'submitAndCheck' && a.lastWorkerIdentity);
          if (Number(step?.lastWorkerIdentity?.split('@')[0]) !== killed) return undefined;
        }
        return new Set(xai.requestsOf('status').map((r) => r.path)).size >= jobs ? true : undefined;
      },
      240_000,
      100,
    );
    process.kill(killed, 'SIGKILL');
    await waitFor('worker-xai to die', () => !processAlive(killed), 30_000, 50);

    const restarted = await up();
    assert.match(restarted, /worker-xai: started/, restarted);
    for (const name of ['gateway-1', 'gateway-2', 'worker-core', 'worker-fal']) assert.match(restarted, new RegExp(`${name}: reusing`), restarted);
    assert.notEqual(await stack.pid('worker-xai'), killed);

    for (const [i, id] of ids.entries()) {
      const marker = markers[i]!;
      const row = await jobFinished(db, id, 240_000);
      assert.equal(row.status, 'completed', `${marker}: ${JSON.stringify(row.error)}`);
      assert.equal(row.outputs?.length, 1);
      assert.equal(submitsWith(xai, marker), 1, `${marker}: exactly one submit on the secondary`);
      assert.equal(falRequestsWith(fal, 'submit', marker), 1, `${marker}: one submit at the primary`);
      await waitFor(`${marker}: the primary's request to be canceled`, () => falRequestsWith(fal, 'cancel', marker) >= 1 || undefined, 60_000, 100);
      assert.equal(falRequestsWith(fal, 'cancel', marker), 1, `${marker}: the primary's request canceled once`);
      assert.deepEqual(await jobLedger(db, id), [['charge', -price]], `${marker}: charged once`);
      const rec = await api(stack.gateways[(i + 1) % 2]!, t.apiKey).get(`/v1/videos/${id}`);
      assert.equal(rec.status, 200, rec.text);
      assert.equal(rec.body.data.provider, 'xai', 'the record names the serving provider');
      assert.deepEqual(
        rec.body.data.provider_attempts.map((a: { provider: string }) => a.provider),
        ['fal'],
        'and the route it gave up',
      );
      assert.match(rec.body.data.provider_attempts[0].error, /HTTP 502/);
    }
    assert.equal(await creditsOf(db, t), startCredits - jobs * price, 'the workspace paid exactly the price of each job once');

    // The killed steps ran again, on the restarted worker-xai: a second attempt of each xAI step.
    for (const [i, id] of ids.entries()) {
      const events = (await temporal.workflow.getHandle(id).fetchHistory()).events ?? [];
      const xaiSteps = new Set(
        events.filter((e) => e.activityTaskScheduledEventAttributes?.taskQueue?.name === 'media-provider-xai').map((e) => String(e.eventId)),
      );
      const started = events.map((e) => e.activityTaskStartedEventAttributes).filter((a) => a && xaiSteps.has(String(a.scheduledEventId)));
      assert.ok(
        started.some((a) => (a!.attempt ?? 1) >= 2 && !a!.identity?.startsWith(`${killed}@`)),
        `${markers[i]}: the xAI step ran again on another worker process`,
      );
    }
  },
);

test('each process runs with the secrets its roles read and no other: provider keys on their fleets only, the webhook secrets key on the webhooks fleet', async () => {
  const processes = readFileSync(fileURLToPath(new URL('../../../scripts/prod/processes', import.meta.url)), 'utf8')
    .split('\n')
    .filter((l) => l.trim() && !l.startsWith('#'))
    .map((l) => l.trim().split(/\s+/));
  const set = (e: Record<string, string>) => roleScopedSecrets.filter((s) => e[s]);
  for (const [name, command, roles] of processes) {
    const e = await stack.environment(name!);
    const expected = secretsOfRoles(command === 'gateway' ? ['gateway'] : roles!.split(',')).filter(
      (s) => s === 'WEBHOOK_SECRETS_KEY' || s === 'FAL_KEY' || s === 'XAI_API_KEY',
    );
    assert.deepEqual(set(e), expected, `${name} (${roles ?? 'gateway'})`);
    assert.equal(e.PROVIDER_KEYS_SET, 'FAL_KEY,XAI_API_KEY', `${name} knows which provider keys the deployment sets`);
  }
});
