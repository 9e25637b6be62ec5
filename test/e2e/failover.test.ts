// Provider failover at run time, charged once, on the real stack: the gateway over HTTP,
// workflows on Temporal, Postgres, outputs stored in MinIO from a loopback HTTPS "CDN". grok-video has
// two live routes here: fal's queue first, then xAI's own video API, both local fakes speaking their
// providers' protocols (they count every submit, status call and cancel). A job whose provider fails
// in a way another provider can fix continues on the next route; the customer's own faults do not
// move it; every job is charged its create price once; the circuit breaker (shared through Postgres)
// sends new jobs past a failing route and lets a trial through to bring traffic back.
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createTenant, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, creditsOf, type InProcessGateway as Gateway } from '../support/services.js';
import { falRequestsWith, startFailoverStack, submitsWith, type FailoverStack } from '../support/failover-stack.js';
import { createVideoOnFal, jobFinished, jobLedger } from '../support/job-helpers.js';
import type { FakeFal } from '../support/fake-providers/fal.js';
import type { FakeXai } from '../support/fake-providers/xai.js';
import { json } from '../support/fake-providers/server.js';
import { searchAttributes } from '../../workflows/definitions.js';

let stack: FailoverStack<'xai'>;
let tdb: TestDatabase;
let fal: FakeFal;
let xai: FakeXai;
let gw: Gateway;

const model = 'grok-video';
const price = 6; // grok-video, 1 second
const unavailable = json(503, { detail: 'Service Unavailable' });

before(async () => {
  stack = await startFailoverStack({
    secondary: 'xai',
    roles: 'workflows,io,fetch,provider:fal,provider:xai',
    env: {
      PROVIDER_BREAKER_MIN_ATTEMPTS: '5',
      PROVIDER_BREAKER_FAILURE_PERCENT: '50',
      // Longer than any test: the recovery test moves the breaker's clock instead of waiting.
      PROVIDER_BREAKER_OPEN_MS: '3600000',
    },
  });
  ({ tdb, fal, secondary: xai, gw } = stack);
});

after(() => stack?.close());

beforeEach(async () => {
  fal.up();
  xai.up();
  fal.flow = ['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED'];
  await tdb.db.deleteFrom('provider_circuits').execute();
});

const create = (t: Tenant, marker: string) => createVideoOnFal(gw.baseUrl, t, model, marker);

const finished = (id: string) => jobFinished(tdb.db, id);

const falRequests = (op: 'submit' | 'status' | 'cancel', marker: string) => falRequestsWith(fal, op, marker);
const xaiSubmits = (marker: string) => submitsWith(xai, marker);

const ledger = (id: string) => jobLedger(tdb.db, id);

async function record(t: Tenant, id: string) {
  const r = await api(gw.baseUrl, t.apiKey).get(`/v1/videos/${id}`);
  assert.equal(r.status, 200, r.text);
  return r.body.data;
}

const circuit = async (provider: string) =>
  (await tdb.db.selectFrom('provider_circuits').select('state').where('provider', '=', provider).where('model', '=', model).executeTakeFirst())?.state ??
  'closed';

async function listedModel(t: Tenant) {
  const r = await api(gw.baseUrl, t.apiKey).get('/v1/models');
  assert.equal(r.status, 200, r.text);
  return (r.body.data as any[]).find((m) => m.name === model);
}

async function servingProvider(id: string): Promise<string | undefined> {
  return (await gw.client.workflow.getHandle(id).describe()).typedSearchAttributes.get(searchAttributes.servingProvider);
}

/**
 * Completed on xAI, charged its price once, with one xAI submit: after giving fal up (one attempt
 * recorded), or, with `skippedIfOpen`, straight away once fal's breaker had opened (no attempt,
 * fal never asked for this job).
 */
async function assertServedBySecondary(t: Tenant, id: string, marker: string, opts: { skippedIfOpen?: boolean } = {}): Promise<'gave-up' | 'skipped'> {
  const row = await finished(id);
  assert.equal(row.status, 'completed', JSON.stringify(row.error));
  assert.equal(row.outputs?.length, 1);
  assert.equal(xaiSubmits(marker), 1, `exactly one submit on the secondary for ${marker}`);
  assert.deepEqual(await ledger(id), [['charge', -price]], `${marker} charged once`);
  const rec = await record(t, id);
  assert.equal(rec.provider, 'xai');
  if (opts.skippedIfOpen && rec.provider_attempts === undefined) {
    assert.equal(falRequests('submit', marker), 0, `${marker} went to xAI without an attempt, so fal never saw it`);
    return 'skipped';
  }
  assert.equal(rec.provider_attempts?.length, 1, JSON.stringify(rec.provider_attempts));
  assert.equal(rec.provider_attempts[0].provider, 'fal');
  assert.match(rec.provider_attempts[0].error, /HTTP 50[23]/);
  return 'gave-up';
}

describe('provider failover at run time, charged once', () => {
  test('the primary answers 503 to every call: 20 jobs complete on the secondary, each charged once, and the breaker opens', async () => {
    fal.down(['submit', 'status', 'result', 'cancel'], unavailable);
    const t = await createTenant(tdb.db, 1000);
    const markers = Array.from({ length: 20 }, (_, i) => `[outage-${i}]`);
    const ids = await Promise.all(markers.map((m) => create(t, m)));
    // The jobs whose runs start after the breaker opened (the workflow worker runs a few at a
    // time) skip fal; the breaker opens only after PROVIDER_BREAKER_MIN_ATTEMPTS gave it up.
    const ways: string[] = [];
    for (const [i, id] of ids.entries()) ways.push(await assertServedBySecondary(t, id, markers[i]!, { skippedIfOpen: true }));
    assert.ok(ways.filter((w) => w === 'gave-up').length >= 5, `at least the breaker's minimum gave fal up: ${ways.join(', ')}`);
    assert.equal(await creditsOf(tdb.db, t), 1000 - 20 * price);
    assert.equal(await servingProvider(ids[0]!), 'xai', 'the search attribute names the serving provider');

    // The fleet's breaker for fal on this model is open: a new job never calls fal.
    assert.equal(await circuit('fal'), 'open');
    const falCalls = fal.requests.length;
    const next = await create(t, '[after-open]');
    const row = await finished(next);
    assert.equal(row.status, 'completed', JSON.stringify(row.error));
    assert.equal(fal.requests.length, falCalls, 'the open route was skipped without a call');
    assert.equal(xaiSubmits('[after-open]'), 1);
    const rec = await record(t, next);
    assert.equal(rec.provider, 'xai');
    assert.equal(rec.provider_attempts, undefined, 'a skipped route is not an attempt');
    assert.deepEqual(await ledger(next), [['charge', -price]]);

    // Operators see it: the model is degraded, with each route's breaker.
    const listed = await listedModel(t);
    assert.equal(listed.availability, 'degraded');
    assert.deepEqual(
      listed.routes.map((r: { provider: string; circuit: string; status: string; unavailable_reason: string | null }) => ({
        provider: r.provider,
        circuit: r.circuit,
        status: r.status,
        unavailable_reason: r.unavailable_reason,
      })),
      [
        { provider: 'fal', circuit: 'open', status: 'available', unavailable_reason: null },
        { provider: 'xai', circuit: 'closed', status: 'available', unavailable_reason: null },
      ],
    );
    const metrics = await gw.app.metrics.registry.metrics();
    assert.match(metrics, /mediagen_provider_circuit_open\{provider="fal",model="grok-video"\} 1/);
  });

  test('the primary fails after the submit (status 5xx past its budget): the job completes on the secondary, the primary request canceled once', async () => {
    fal.down(['status'], json(502, { detail: 'Bad Gateway' }));
    const t = await createTenant(tdb.db, 100);
    const marker = '[status-down]';
    const id = await create(t, marker);
    await assertServedBySecondary(t, id, marker);
    assert.equal(falRequests('submit', marker), 1, 'one submit at the primary');
    assert.ok(falRequests('status', marker) >= 2, 'the primary status was asked until its budget ran out');
    assert.equal(falRequests('cancel', marker), 1, "the primary's request was canceled once");
    assert.equal(await creditsOf(tdb.db, t), 100 - price);
  });

  test("our account at the primary is out of balance (fal's 403): the job moves at once, without retrying the primary", async () => {
    fal.down(['submit'], json(403, { detail: 'User is locked. Reason: Exhausted balance. Top up your balance at fal.ai/dashboard/billing.' }));
    const t = await createTenant(tdb.db, 100);
    const marker = '[no-balance]';
    const id = await create(t, marker);
    const row = await finished(id);
    assert.equal(row.status, 'completed', JSON.stringify(row.error));
    assert.equal(falRequests('submit', marker), 1, 'an account error is not retried at the same provider');
    assert.equal(xaiSubmits(marker), 1);
    const rec = await record(t, id);
    assert.equal(rec.provider, 'xai');
    assert.match(rec.provider_attempts[0].error, /HTTP 403/);
    assert.deepEqual(await ledger(id), [['charge', -price]]);
  });

  test('the primary refuses for moderation: the job fails with its reason, refunded, and never fails over', async () => {
    fal.nextOutcome('content_policy');
    const t = await createTenant(tdb.db, 100);
    const marker = '[moderated]';
    const id = await create(t, marker);
    const row = await finished(id);
    assert.equal(row.status, 'failed');
    assert.equal(row.error?.code, 'generation_failed');
    assert.match(row.error!.message, /content/i);
    assert.equal(xaiSubmits(marker), 0, 'no failover for the customer’s own fault');
    assert.deepEqual(await ledger(id), [
      ['charge', -price],
      ['refund', price],
    ]);
    assert.equal(await creditsOf(tdb.db, t), 100);
    const rec = await record(t, id);
    assert.equal(rec.provider, 'fal');
    assert.equal(rec.provider_attempts, undefined);
    assert.equal(await circuit('fal'), 'closed', "a customer's fault counts nothing against the provider");
  });

  test('both routes down: the job fails once, refunded exactly, its error naming both attempts', async () => {
    fal.down(['submit', 'status', 'result', 'cancel'], unavailable);
    xai.down(['submit', 'status'], json(503, { code: 'unavailable', error: 'The service is currently unavailable' }));
    const t = await createTenant(tdb.db, 100);
    const marker = '[both-down]';
    const id = await create(t, marker);
    const row = await finished(id);
    assert.equal(row.status, 'failed');
    assert.match(row.error!.message, /every route of grok-video failed: fal: .*503.*; then xai: .*503/);
    assert.deepEqual(
      await ledger(id),
      [
        ['charge', -price],
        ['refund', price],
      ],
      'refunded exactly once',
    );
    assert.equal(await creditsOf(tdb.db, t), 100);
    const rec = await record(t, id);
    assert.deepEqual(
      rec.provider_attempts.map((a: { provider: string }) => a.provider),
      ['fal', 'xai'],
    );
    const handle = gw.client.workflow.getHandle(id);
    await waitFor('the workflow to close', async () => ((await handle.describe()).status.name === 'FAILED' ? true : undefined), 60_000, 200);
  });

  test('breaker recovery: after the open period a trial job goes to the primary, succeeds, and traffic returns', async () => {
    fal.down(['submit', 'status', 'result', 'cancel'], unavailable);
    const t = await createTenant(tdb.db, 1000);
    const opening = await Promise.all(Array.from({ length: 5 }, (_, i) => create(t, `[opening-${i}]`)));
    for (const id of opening) assert.equal((await finished(id)).status, 'completed');
    assert.equal(await circuit('fal'), 'open');

    // fal recovers, but while the breaker is open new jobs still skip it.
    fal.up();
    const skipped = await create(t, '[while-open]');
    assert.equal((await finished(skipped)).status, 'completed');
    assert.equal(falRequests('submit', '[while-open]'), 0);

    // The open period passes (moved on the shared clock instead of waited for): one trial job goes to fal.
    await sql`update provider_circuits set opened_at = opened_at - interval '2 hours' where provider = 'fal' and model = ${model}`.execute(tdb.db);
    const trial = await create(t, '[trial]');
    const trialRow = await finished(trial);
    assert.equal(trialRow.status, 'completed', JSON.stringify(trialRow.error));
    assert.equal(falRequests('submit', '[trial]'), 1, 'the trial went to the primary');
    assert.equal(xaiSubmits('[trial]'), 0);
    assert.equal((await record(t, trial)).provider, 'fal');
    assert.equal(await circuit('fal'), 'closed', 'the trial closed the breaker');

    // Traffic is back on the primary.
    const back = await Promise.all(['[back-0]', '[back-1]', '[back-2]'].map((m) => create(t, m)));
    for (const [i, id] of back.entries()) {
      assert.equal((await finished(id)).status, 'completed');
      assert.equal(falRequests('submit', `[back-${i}]`), 1);
      assert.equal(xaiSubmits(`[back-${i}]`), 0);
    }
    assert.equal((await listedModel(t)).availability, 'available');
  });
});
