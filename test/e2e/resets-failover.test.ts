// An operator's Reset of failover jobs, on the real stack: replace-actor jobs given by URLs, whose
// first route (the local fal queue) answers 503 to everything, so each fetches its inputs into our
// store, gives fal up and moves to Alibaba (DashScope, a local fake that downloads both inputs at
// submit), which refuses the generation for moderation: the job fails, refunded, keeping its
// fetched inputs. A reset to the workflow task that gave fal up, or to the one right after the
// inputs were fetched, runs the route step first: it claims the job (re-charging it), Alibaba gets
// one new submit that downloads the inputs the replayed request names, and the job ends completed,
// charged once.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, creditsOf, type InProcessGateway as Gateway } from '../support/services.js';
import { jobObjectKeys } from '../support/fixtures.js';
import { startFailoverStack, type FailoverStack } from '../support/failover-stack.js';
import { jobLedger, jobRow } from '../support/job-helpers.js';
import { closedRun, pointOfLocalActivity, resetRun, runHistory } from '../support/resets.js';
import type { LiveFal } from '../support/fake-providers/live-fal.js';
import type { FakeAlibaba } from '../support/fake-providers/alibaba.js';
import { json } from '../support/fake-providers/server.js';

let stack: FailoverStack<'alibaba'>;
let tdb: TestDatabase;
let live: LiveFal;
let alibaba: FakeAlibaba;
let gw: Gateway;

const duration = 3;
const price = 8 * duration; // replace-actor
const credits = 1000;

before(async () => {
  stack = await startFailoverStack({
    secondary: 'alibaba',
    roles: 'workflows,io,fetch,provider:fal,provider:alibaba',
    // Every job here gives fal up itself: the breaker never sends one past it.
    env: { PROVIDER_BREAKER_MIN_ATTEMPTS: '1000', PROVIDER_BREAKER_OPEN_MS: '3600000' },
  });
  ({ tdb, live, secondary: alibaba, gw } = stack);
  live.fal.down(['submit', 'status', 'result', 'cancel'], json(503, { detail: 'Service Unavailable' }));
});

after(() => stack?.close());

/** A replace-actor job from URLs (served by the loopback CDN) that failed on Alibaba after giving fal up. */
async function failedUrlJob(t: Tenant, marker: string): Promise<{ id: string; runId: string }> {
  alibaba.nextOutcome('moderated');
  const r = await api(gw.baseUrl, t.apiKey).post('/v1/replace-actors/generations', {
    project_id: t.projectId,
    image_url: `${live.cdn.origin}/character-${marker}.png`,
    video_url: `${live.cdn.origin}/motion-${marker}.mp4`,
    duration,
  });
  assert.equal(r.status, 200, r.text);
  const id = r.body.data.id as string;
  const runId = await closedRun(gw.client, id, 'FAILED');
  const row = await jobRow(tdb.db, id);
  assert.equal(row.status, 'failed');
  assert.equal(row.error?.code, 'generation_failed');
  assert.deepEqual(
    row.provider_attempts.map((a) => a.provider),
    ['fal'],
    'fal was given up',
  );
  assert.deepEqual(await jobLedger(tdb.db, id), [
    ['charge', -price],
    ['refund', price],
  ]);
  const keys = await jobObjectKeys(stack.config, id);
  assert.equal(keys.length, 2, `the fetched inputs stay after the failure, nothing else: ${keys.join(', ')}`);
  assert.ok(
    keys.every((k) => /\/input-(image|video)\.\w+$/.test(k)),
    keys.join(', '),
  );
  return { id, runId };
}

/** Resets the failed job to `point`, and checks it ends completed on Alibaba, charged once, with one new submit there. */
async function resetCompletes(t: Tenant, id: string, runId: string, point: number): Promise<void> {
  const falSubmits = live.fal.requestsOf('submit').length;
  const alibabaSubmits = alibaba.requestsOf('submit').length;
  const newRun = await resetRun(gw.client, stack.config.TEMPORAL_NAMESPACE, id, runId, point);
  assert.deepEqual(await gw.client.workflow.getHandle(id, newRun).result(), { outputs: 1 }, 'the new run completes');
  const row = await jobRow(tdb.db, id);
  assert.equal(row.status, 'completed', JSON.stringify(row.error));
  assert.equal(row.status_run_id, newRun);
  assert.deepEqual(
    await jobLedger(tdb.db, id),
    [
      ['charge', -price],
      ['refund', price],
      ['recharge', -price],
    ],
    'charged, refunded, charged again',
  );
  assert.equal(await creditsOf(tdb.db, t), credits - price, 'charged exactly once in total');
  assert.equal(alibaba.requestsOf('submit').length - alibabaSubmits, 1, 'one new submit at Alibaba');
  assert.equal(live.fal.requestsOf('submit').length - falSubmits, 0, 'fal, given up already, is not asked again');
  assert.ok(
    alibaba.fetchedInputs.slice(-2).every((f) => f.bytes > 0),
    'Alibaba downloaded both inputs from our store',
  );
  const rec = await api(gw.baseUrl, t.apiKey).get(`/v1/replace-actors/generations/${id}`);
  assert.equal(rec.status, 200, rec.text);
  assert.equal(rec.body.data.provider, 'alibaba');
  assert.deepEqual(
    rec.body.data.provider_attempts.map((a: { provider: string }) => a.provider),
    ['fal'],
    'the give-up is recorded once',
  );
}

describe('resetting a failed failover job', () => {
  test('to the workflow task that gave its first route up: the route step claims the job, and it completes on the next route', async () => {
    const t = await createTenant(tdb.db, credits);
    const { id, runId } = await failedUrlJob(t, 'give-up');
    // The second routeJob step is the give-up of fal (the first chose the starting route).
    const point = pointOfLocalActivity(await runHistory(gw.client, id, runId), 'routeJob', 1);
    assert.ok(point, 'the history has the give-up step');
    await resetCompletes(t, id, runId, point);
  });

  test('to the workflow task right after its URL inputs were fetched: the inputs are still there, and it completes', async () => {
    const t = await createTenant(tdb.db, credits);
    const { id, runId } = await failedUrlJob(t, 'fetched');
    const h = await runHistory(gw.client, id, runId);
    const point = pointOfLocalActivity(h, 'routeJob', 0);
    assert.ok(point, 'the history has the first route step');
    assert.ok(
      h.events.some((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'prepareProviderRequest' && Number(e.eventId) < point),
      'the point follows the fetch of the inputs',
    );
    await resetCompletes(t, id, runId, point);
  });
});
