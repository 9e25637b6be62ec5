// The races that could once refund a completed job or revive a canceled one, each driven
// deterministically by holding a real activity (or the reconciler's describe) until the test
// releases it, with the credits and the stored media checked at the end:
//   - cancel racing completion, both orders: a completed job is never refunded, a refunded job
//     keeps no media;
//   - a cancel after a start that timed out at the client but succeeded, and a cancel before a
//     late start: markGenerating never revives and re-charges the failed job;
//   - the reconciler finding a closed run of a job that a newer run (an operator's reset) holds:
//     never failed;
//   - the reconciler finding a job whose workflow has not run its first step: not started twice.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { reconcilerOf } from '../support/reconciler.js';
import { createTenant, insertImageJob, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, creditsOf, startService, waitForJobStatus, type InProcessGateway as Gateway, type Service, type Workers } from '../support/services.js';
import { Holds } from '../support/holds.js';
import { jobObjectKeys, probeUrl } from '../support/fixtures.js';
import * as jobsRepo from '../../db/repos/jobs.js';
import { jobToStart, startJobWorkflow } from '../../workflows/client.js';
import type { Config } from '../../shared/config.js';
import { createImage, jobLedger } from '../support/job-helpers.js';

let suite: Service;
let tdb: TestDatabase;
let config: Config;
let gw: Gateway;
let workers: Workers;
const holds = new Holds();
const price = 4; // nano-banana-2, one image

before(async () => {
  // The reconciler is driven by hand (runOnce).
  suite = await startService(
    { RECONCILE_INTERVAL_MS: '3600000', RATE_LIMIT_GENERATE_PER_MIN: '1000', RATE_LIMIT_POLL_PER_MIN: '100000' },
    { workers: { activityInterceptors: [holds.activityInterceptor] } },
  );
  ({ tdb, config, gw, workers } = suite);
});

after(async () => {
  await suite?.close();
});

const create = (t: Tenant, prompt: string) => createImage(gw.baseUrl, t, prompt);

const storedKeys = (jobId: string) => jobObjectKeys(config, jobId);

const ledger = (id: string) => jobLedger(tdb.db, id);
const rowStatus = async (id: string) => (await jobsRepo.getJob(tdb.db, id))!.status;
const workflowStatus = async (id: string) => (await gw.client.workflow.getHandle(id).describe()).status.name;

describe('cancel racing completion', () => {
  test('cancel wins: the job is failed and refunded, its outputs are removed, and the completion that comes late is refused', async () => {
    const t = await createTenant(tdb.db, 100);
    const c = api(gw.baseUrl, t.apiKey);
    const complete = holds.activity('completeJob', 'before');
    const id = await create(t, 'cancel wins');
    assert.equal(await complete.reached, id);
    assert.ok(
      (await storedKeys(id)).some((k) => /\/output-1\.png$/.test(k)),
      'the outputs are stored before completion',
    );

    const canceled = await c.post(`/v1/images/${id}/cancel`);
    assert.equal(canceled.status, 200, canceled.text);
    const job = await waitForJobStatus(c, `/v1/images/${id}`, ['failed', 'completed']);
    assert.equal(job.status, 'failed');
    assert.equal(job.error.code, 'canceled');
    assert.equal(await creditsOf(tdb.db, t), 100);

    complete.release();
    const late = await complete.finished;
    assert.equal(late.ok, false, 'the late completion is refused');
    assert.match(String(!late.ok && late.error.message), /failed and cannot become completed/);
    assert.equal(await rowStatus(id), 'failed');
    assert.deepEqual(await ledger(id), [
      ['charge', -price],
      ['refund', price],
    ]);
    assert.equal(await creditsOf(tdb.db, t), 100);
    assert.deepEqual(await storedKeys(id), [], 'no media is kept for a refunded job');
    const url = await c.get(`/v1/images/${id}/url`);
    assert.equal(url.status, 409);
    assert.equal(url.body.error.code, 'generation_failed');
    await waitFor('the workflow to close as canceled', async () => ((await workflowStatus(id)) === 'CANCELLED' ? true : undefined));
  });

  test('completion wins: the failure that comes late leaves the completed job charged, with its media', async () => {
    const t = await createTenant(tdb.db, 100);
    const c = api(gw.baseUrl, t.apiKey);
    const complete = holds.activity('completeJob', 'before');
    const id = await create(t, 'completion wins');
    await complete.reached;
    const fail = holds.activity('failJob', 'before', id);

    const canceled = await c.post(`/v1/images/${id}/cancel`);
    assert.equal(canceled.status, 200, canceled.text);
    await fail.reached; // the workflow saw the cancel and is about to fail the job
    complete.release();
    assert.equal((await complete.finished).ok, true);
    assert.equal(await rowStatus(id), 'completed');
    fail.release();
    assert.equal((await fail.finished).ok, true, 'failing a completed job is a no-op, not an error');

    assert.equal(await rowStatus(id), 'completed');
    assert.deepEqual(await ledger(id), [['charge', -price]], 'a completed job is never refunded');
    assert.equal(await creditsOf(tdb.db, t), 100 - price);
    const url = await c.get(`/v1/images/${id}/url`);
    assert.equal(url.status, 200, url.text);
    assert.equal((await probeUrl(url.body.data.url)).contentType, 'image/png');
    const again = await c.post(`/v1/images/${id}/cancel`);
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, 'not_cancelable');
  });
});

describe('cancel and a start the client did not see', () => {
  test('a start that timed out at the client but succeeded: cancel goes through Temporal, and markGenerating coming late does not revive or re-charge the job', async () => {
    const t = await createTenant(tdb.db, 100);
    const c = api(gw.baseUrl, t.apiKey);
    const start = holds.activity('startGenerating', 'before');
    const id = await create(t, 'start answer lost');
    await start.reached;
    // The gateway never heard the start succeed: the row says not started.
    await tdb.db.updateTable('jobs').set({ workflow_started: false }).where('id', '=', id).execute();

    const canceled = await c.post(`/v1/images/${id}/cancel`);
    assert.equal(canceled.status, 200, canceled.text);
    const job = await waitForJobStatus(c, `/v1/images/${id}`, ['failed', 'completed']);
    assert.equal(job.error.code, 'canceled');
    assert.equal(await creditsOf(tdb.db, t), 100);

    start.release();
    const late = await start.finished;
    assert.equal(late.ok, false, 'the late start is refused');
    assert.match(String(!late.ok && late.error.message), /failed and cannot become generating/);
    assert.equal(await rowStatus(id), 'failed');
    assert.deepEqual(await ledger(id), [
      ['charge', -price],
      ['refund', price],
    ]);
    assert.equal(await creditsOf(tdb.db, t), 100);
    // The reconciler starts pending jobs only: nothing to start here.
    const pass = await workers.fleet.reconciler!.runOnce();
    assert.deepEqual([pass.started, pass.settled], [[], []]);
    assert.deepEqual(await ledger(id), [
      ['charge', -price],
      ['refund', price],
    ]);
  });

  test('a cancel before the workflow exists fails the job here; the start that lands late cannot revive it', async () => {
    const t = await createTenant(tdb.db, 100);
    const c = api(gw.baseUrl, t.apiKey);
    const job = await insertImageJob(tdb.db, t, { prompt: 'late start', price });
    const id = job.id;
    const canceled = await c.post(`/v1/images/${id}/cancel`);
    assert.equal(canceled.status, 200, canceled.text);
    assert.equal(canceled.body.data.status, 'failed');
    assert.equal(canceled.body.data.error.code, 'canceled');
    assert.equal(await creditsOf(tdb.db, t), 100);

    await startJobWorkflow(gw.client, jobToStart(job, config.TASK_QUEUE_PREFIX));
    await assert.rejects(gw.client.workflow.getHandle(id).result(), (err: Error) => {
      assert.match(String((err.cause as Error | undefined)?.message), /failed and cannot become generating/);
      return true;
    });
    const row = (await jobsRepo.getJob(tdb.db, id))!;
    assert.equal(row.status, 'failed');
    assert.equal(row.error?.code, 'canceled', 'the first failure stands');
    assert.deepEqual(await ledger(id), [
      ['charge', -price],
      ['refund', price],
    ]);
    assert.equal(await creditsOf(tdb.db, t), 100);
  });
});

describe('the reconciler and a job whose workflow has not run its first step', () => {
  test('a started job still waiting is not started twice: the reconciler finds its workflow and marks the job', async () => {
    const t = await createTenant(tdb.db, 100);
    const start = holds.activity('startGenerating', 'before');
    const id = await create(t, 'waiting in a backlog');
    await start.reached;
    assert.equal((await jobsRepo.getJob(tdb.db, id))!.workflow_started, false, 'the gateway leaves the mark to the workflow');
    const reconciler = reconcilerOf({ config, db: tdb.db, storage: gw.storage, client: gw.client, logger: pino({ level: 'silent' }) });
    // Once the job is a few seconds old a pass claims it, finds its workflow listed and marks it.
    await waitFor(
      'the reconciler to mark the job started',
      async () => {
        const pass = await reconciler.runOnce();
        assert.deepEqual(pass.started, [], 'already started: nothing started');
        return (await jobsRepo.getJob(tdb.db, id))!.workflow_started ? true : undefined;
      },
      30_000,
      500,
    );

    start.release();
    assert.equal((await start.finished).ok, true);
    const job = await waitForJobStatus(api(gw.baseUrl, t.apiKey), `/v1/images/${id}`, ['completed', 'failed']);
    assert.equal(job.status, 'completed');
    const runs = [];
    for await (const w of gw.client.workflow.list({ query: `WorkflowId = '${id}'` })) runs.push(w.runId);
    assert.equal(runs.length, 1, 'one workflow run');
    assert.deepEqual(await ledger(id), [['charge', -price]]);
    assert.equal(await creditsOf(tdb.db, t), 100 - price);
  });
});

describe('the reconciler and a run replaced by an operator reset', () => {
  test('the terminated run is listed, but the job the new run holds is left to it: completed, charged once', async () => {
    const t = await createTenant(tdb.db, 100);
    const c = api(gw.baseUrl, t.apiKey);
    const oldSubmit = holds.activity('submitAndCheck', 'before');
    const id = await create(t, 'reset while generating');
    await oldSubmit.reached;
    const handle = gw.client.workflow.getHandle(id);
    const first = await handle.describe();
    // Reset to the first workflow task: the old run is terminated with JobStatus still `generating`.
    const history = await handle.fetchHistory();
    const firstTask = history.events!.find((e) => e.workflowTaskCompletedEventAttributes)!;
    const newRun = holds.activity('startGenerating', 'before', id);
    await gw.client.workflowService.resetWorkflowExecution({
      namespace: config.TEMPORAL_NAMESPACE,
      workflowExecution: { workflowId: id, runId: first.runId },
      reason: 'test: reset while the reconciler looks',
      workflowTaskFinishEventId: firstTask.eventId,
      requestId: `reset-${id}`,
    });
    const reconciler = reconcilerOf({ config, db: tdb.db, storage: gw.storage, client: gw.client, logger: pino({ level: 'silent' }) });
    // The new run has not claimed the job yet: the row still names the terminated run.
    await newRun.reached;
    await waitFor(
      'visibility to list the terminated run',
      async () => {
        for await (const w of gw.client.workflow.list({ query: `WorkflowId = '${id}' AND ExecutionStatus = 'Terminated' AND JobStatus = 'generating'` }))
          return w.runId === first.runId;
        return undefined;
      },
      30_000,
      200,
    );
    await waitFor(
      'visibility to list the new run as running',
      async () => {
        for await (const _ of gw.client.workflow.list({ query: `WorkflowId = '${id}' AND ExecutionStatus = 'Running'` })) return true;
        return undefined;
      },
      30_000,
      200,
    );
    assert.deepEqual((await reconciler.runOnce()).settled, [], "the job is the new run's");
    assert.equal(await rowStatus(id), 'generating');

    // The terminated run's step ends (its completion is refused by Temporal), then the new run goes on.
    oldSubmit.release();
    await oldSubmit.finished;
    newRun.release();
    const job = await waitForJobStatus(c, `/v1/images/${id}`, ['completed', 'failed']);
    assert.equal(job.status, 'completed');
    assert.deepEqual((await reconciler.runOnce()).settled, []);
    assert.deepEqual(await ledger(id), [['charge', -price]]);
    assert.equal(await creditsOf(tdb.db, t), 100 - price);
    assert.equal((await c.get(`/v1/images/${id}/url`)).status, 200);
  });
});
