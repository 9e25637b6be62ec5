// A job's deadline (`deadline_seconds` on create), on the real stack (a gateway over HTTP, workflows
// on Temporal, Postgres, MinIO) with fal's queue faked on loopback: a job whose deadline passes
// while it waits for the provider's only slot is never submitted and is refunded in full; one whose
// deadline passes while fal runs it is canceled at fal once and settled as its customer's cancel
// would be; one that finishes first is charged its price, its deadline timer canceled; one whose
// deadline passed before any workflow ran is failed by the reconciler without a start.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { pino } from 'pino';
import { createTenant, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, creditsOf, startService, type InProcessGateway as Gateway, type Service, type Workers } from '../support/services.js';
import { startLiveFal, type LiveFal } from '../support/fake-providers/live-fal.js';
import { falRequestsWith } from '../support/failover-stack.js';
import { jobFinished, jobLedger, jobRow } from '../support/job-helpers.js';
import { Holds } from '../support/holds.js';
import { closedRun, runHistory } from '../support/resets.js';
import { reconcilerOf } from '../support/reconciler.js';
import { insertJobWithCharge } from '../../db/repos/jobs.js';
import type { Config } from '../../shared/config.js';
import { catalog } from '../../shared/catalog.js';

// nano-banana-2 on fal: 4 credits per image (shared/catalog.ts).
const price = 4;
/** What fal bills for the image (nano-banana-2): kept when a cancel reaches a request fal had started. */
const cost = catalog['nano-banana-2'].price.providerCost;

let suite: Service;
let tdb: TestDatabase;
let live: LiveFal;
let config: Config;
let gw: Gateway;
let workers: Workers;
const holds = new Holds();

before(async () => {
  live = await startLiveFal();
  suite = await startService(
    {
      ...live.env,
      // One fal request at a time: a held job in front keeps the next one queued.
      PROVIDER_CONCURRENCY: 'fal=1',
      RATE_LIMIT_GENERATE_PER_MIN: '100000',
      RATE_LIMIT_POLL_PER_MIN: '100000',
      RECONCILE_INTERVAL_MS: '3600000',
    },
    { roles: 'workflows,io,fetch,provider:fal', workers: { activityInterceptors: [holds.activityInterceptor] } },
  );
  ({ tdb, config, gw, workers } = suite);
});

after(async () => {
  await suite?.close();
  await live?.close();
});

const client = (t: Tenant) => api(gw.baseUrl, t.apiKey);
const body = (t: Tenant, marker: string, more: Record<string, unknown> = {}) => ({
  project_id: t.projectId,
  prompt: `a lighthouse at dusk ${marker}`,
  model: 'nano-banana-2',
  aspect_ratio: '1:1',
  count: 1,
  ...more,
});

async function createImage(t: Tenant, marker: string, more: Record<string, unknown> = {}): Promise<string> {
  const r = await client(t).post('/v1/images/generate', body(t, marker, more));
  assert.equal(r.status, 200, r.text);
  return r.body.data.id as string;
}

/** The activity types of the job's workflow whose tasks reached a worker (ActivityTaskStarted). */
async function startedActivities(id: string, status: string): Promise<string[]> {
  const runId = await closedRun(gw.client, id, status);
  const { events } = await runHistory(gw.client, id, runId);
  const scheduled = new Map(
    events.filter((e) => e.activityTaskScheduledEventAttributes).map((e) => [Number(e.eventId), e.activityTaskScheduledEventAttributes!.activityType!.name!]),
  );
  return events.filter((e) => e.activityTaskStartedEventAttributes).map((e) => scheduled.get(Number(e.activityTaskStartedEventAttributes!.scheduledEventId))!);
}

describe('deadline_seconds', () => {
  test('is checked: an integer from 10 to 604800 (7 days); anything else is a 400', async () => {
    const t = await createTenant(tdb.db, 100);
    for (const bad of [9, 604_801, 12.5, '60', -1]) {
      const r = await client(t).post('/v1/images/generate', body(t, '[bad]', { deadline_seconds: bad }));
      assert.equal(r.status, 400, `${JSON.stringify(bad)}: ${r.text}`);
      assert.equal(r.body.error.code, 'invalid_request');
      assert.match(r.body.error.message, /deadline_seconds/);
    }
    assert.equal(await creditsOf(tdb.db, t), 100, 'a refused create charges nothing');
  });

  test('the dry run says when the job would be canceled (null without a deadline)', async () => {
    const t = await createTenant(tdb.db, 100);
    const before = Date.now();
    const quote = await client(t).post('/v1/images/generate?dry_run=true', body(t, '[quote]', { deadline_seconds: 3600 }));
    const afterQuote = Date.now();
    assert.equal(quote.status, 200, quote.text);
    assert.equal(quote.body.data.price, price);
    const at = quote.body.data.deadline_at as number;
    assert.ok(at >= before + 3_600_000 && at <= afterQuote + 3_600_000, `deadline_at ${at} is the quote's time plus an hour`);
    const none = await client(t).post('/v1/images/generate?dry_run=true', body(t, '[quote]'));
    assert.equal(none.body.data.deadline_at, null);
  });

  test('a job finishing before its deadline completes, charged its price, its deadline timer canceled', async () => {
    live.fal.flow = ['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED'];
    const t = await createTenant(tdb.db, 100);
    const id = await createImage(t, `[in-time-${t.workspaceId}]`, { deadline_seconds: 600 });
    const row = await jobFinished(tdb.db, id, 120_000);
    assert.equal(row.status, 'completed');
    assert.deepEqual(await jobLedger(tdb.db, id), [['charge', -price]]);
    const rec = await client(t).get(`/v1/images/${id}`);
    assert.equal(rec.status, 200, rec.text);
    assert.equal(rec.body.data.deadline_at - rec.body.data.created_at, 600_000, 'deadline_at is the create time plus deadline_seconds');
    // Nothing is left to fail it later: its run closed completed, and the deadline's timer was canceled.
    const runId = await closedRun(gw.client, id, 'COMPLETED');
    const { events } = await runHistory(gw.client, id, runId);
    const timers = (attr: 'timerStartedEventAttributes' | 'timerFiredEventAttributes' | 'timerCanceledEventAttributes') => events.filter((e) => e[attr]).length;
    assert.equal(timers('timerCanceledEventAttributes'), 1, 'the deadline timer was canceled');
    assert.equal(timers('timerStartedEventAttributes'), timers('timerFiredEventAttributes') + 1, 'every other timer (a poll wait) fired');
    // A job without a deadline shows null.
    const plain = await createImage(t, `[no-deadline-${t.workspaceId}]`);
    assert.equal((await client(t).get(`/v1/images/${plain}`)).body.data.deadline_at, null);
    await jobFinished(tdb.db, plain, 120_000);
  });

  test('a job whose deadline passes while it waits for the provider is never submitted and is refunded in full', async () => {
    live.fal.flow = ['IN_QUEUE', 'COMPLETED'];
    const t = await createTenant(tdb.db, 100);
    const front = `[front-${t.workspaceId}]`;
    const queued = `[queued-${t.workspaceId}]`;
    // The job in front holds fal's only slot (its request made, the step not yet reported back).
    const held = holds.activity('submitAndCheck', 'after');
    let first = '';
    try {
      first = await createImage(t, front);
      assert.equal(await held.reached, first);
      const id = await createImage(t, queued, { deadline_seconds: 10 });
      const row = await jobFinished(tdb.db, id, 120_000);
      assert.equal(row.status, 'failed');
      assert.equal(row.error?.code, 'deadline_exceeded');
      assert.match(row.error!.message, /deadline .* passed before it was submitted to a provider/);
      assert.equal(row.provider_ref, null);
      assert.equal(falRequestsWith(live.fal, 'submit', queued), 0, 'fal saw no request of it');
      assert.deepEqual(await jobLedger(tdb.db, id), [
        ['charge', -price],
        ['refund', price],
      ]);
      const rec = await client(t).get(`/v1/images/${id}`);
      assert.deepEqual(rec.body.data.cancel, { refunded: price, kept: 0, after_submit: false });
      assert.equal(rec.body.data.error.code, 'deadline_exceeded');
      // Its submit step never reached a worker.
      assert.ok(!(await startedActivities(id, 'FAILED')).includes('submitAndCheck'));
    } finally {
      held.release();
    }
    await held.finished;
    assert.equal((await jobFinished(tdb.db, first, 120_000)).status, 'completed', 'the job in front completes');
    assert.equal(await creditsOf(tdb.db, t), 100 - price, 'only the job in front is charged');
    assert.equal(falRequestsWith(live.fal, 'submit', queued), 0);
  });

  test('a job whose deadline passes while the provider runs it is canceled there once and settled as a cancel is: fal had started it, so its cost is kept', async () => {
    live.fal.flow = [...Array<'IN_PROGRESS'>(2000).fill('IN_PROGRESS'), 'COMPLETED'];
    const t = await createTenant(tdb.db, 100);
    const marker = `[running-${t.workspaceId}]`;
    try {
      const id = await createImage(t, marker, { deadline_seconds: 10 });
      await waitFor('the fal request to be recorded', async () => ((await jobRow(tdb.db, id)).provider_ref ? true : undefined), 60_000, 100);
      const row = await jobFinished(tdb.db, id, 120_000);
      assert.equal(row.status, 'failed');
      assert.equal(row.error?.code, 'deadline_exceeded');
      assert.match(row.error!.message, /deadline .* passed before it completed; its provider request was canceled/);
      // The run cancels the request before it closes: once closed, fal has seen exactly one cancel.
      await closedRun(gw.client, id, 'FAILED');
      assert.equal(falRequestsWith(live.fal, 'submit', marker), 1);
      assert.equal(falRequestsWith(live.fal, 'cancel', marker), 1);
      // As a customer's cancel after the submit: fal answers 202 to a cancel of a running request and
      // only signals its runner, so the cancel is not confirmed and the provider cost is kept.
      await waitFor('the job to be settled', async () => ((await creditsOf(tdb.db, t)) === 100 - cost ? true : undefined), 60_000, 100);
      assert.deepEqual(await jobLedger(tdb.db, id), [
        ['charge', -price],
        ['refund', price - cost],
      ]);
      const rec = await client(t).get(`/v1/images/${id}`);
      assert.deepEqual(rec.body.data.cancel, { refunded: price - cost, kept: cost, after_submit: true });
    } finally {
      live.fal.flow = ['IN_QUEUE', 'COMPLETED'];
    }
  });

  test('a job whose deadline passed before any workflow ran is failed by the reconciler, never started, refunded in full', async () => {
    const t = await createTenant(tdb.db, 100);
    // A job whose start after commit failed (no workflow), created a minute ago with a 10 s deadline.
    const job = await insertJobWithCharge(tdb.db, {
      id: `img_late${Date.now()}`,
      kind: 'image',
      workspaceId: t.workspaceId,
      projectId: t.projectId,
      apiKeyId: t.apiKeyId,
      model: 'nano-banana-2',
      params: { prompt: 'too late', aspect_ratio: '1:1', count: 1, provider: 'fal', deadline_seconds: 300 },
      price,
      deadlineSeconds: -50,
    });
    await sql`update jobs set created_at = now() - interval '60 seconds' where id = ${job.id}`.execute(tdb.db);
    const reconciler = reconcilerOf({ config, db: tdb.db, storage: workers.service.storage, client: gw.client, logger: pino({ level: 'silent' }) });
    const pass = await reconciler.runOnce();
    assert.ok(pass.settled.includes(job.id), 'settled by the pass');
    assert.ok(!pass.started.includes(job.id), 'not started');
    const row = await jobRow(tdb.db, job.id);
    assert.equal(row.status, 'failed');
    assert.equal(row.error?.code, 'deadline_exceeded');
    assert.equal(row.workflow_started, true, 'marked, so no later pass starts it');
    assert.deepEqual(await jobLedger(tdb.db, job.id), [
      ['charge', -price],
      ['refund', price],
    ]);
    await assert.rejects(gw.client.workflow.getHandle(job.id).describe(), /not found/i);
    // A second pass leaves it alone.
    const again = await reconciler.runOnce();
    assert.ok(!again.started.includes(job.id) && !again.settled.includes(job.id));
  });
});
