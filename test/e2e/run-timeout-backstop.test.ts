// The backstop no deploy can defeat: a generation run pinned to a build whose workers are all gone
// (a deploy that stopped the old build before it drained) gets no workflow task ever again, yet it
// ends at its workflowRunTimeout (the model's deadline + JOB_RUN_TIMEOUT_GRACE_MS, set on every
// start, the reconciler's included). The reconciler then refunds the job and cancels its request
// at the provider, and meanwhile the reconciler role's mediagen_workflows_without_pollers gauge
// names the build, so the MediagenWorkflowsWithoutPollers alert rule (evaluated here against the
// scraped text) fires. The run timeout counts from the run's start and the model's deadline from
// its first step, so the timeout holds JOB_START_WAIT_MS as well: a job whose first step waited in
// a backlog past the deadline plus the grace still completes, charged once, its output stored; one
// that waited past JOB_START_WAIT_MS fails unsubmitted, refunded in full. Real Temporal dev server
// (Worker Versioning), Postgres and MinIO; the fal queue is the local fake speaking fal's Queue API.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import { createTenant, createTestDatabase, insertImageJob, testConfig, waitFor, type TestDatabase } from '../support/stack.js';
import { creditsOf, startWorkers, type Workers } from '../support/services.js';
import { startLiveFal, type LiveFal } from '../support/fake-providers/live-fal.js';
import { alertRule, evaluateAlert } from '../support/ops.js';
import { jobFinished, jobLedger, jobRow } from '../support/job-helpers.js';
import { createWorkerService, type WorkerService } from '../../worker/service.js';
import { createWorkerMetrics, serveWorkerMetrics } from '../../worker/metrics.js';
import { parseRoles } from '../../worker/roles.js';
import { describeDeployment } from '../../worker/deployment.js';
import { resolveJobRoute } from '../../shared/routing.js';
import { catalog } from '../../shared/catalog.js';
import { randomToken } from '../../shared/ids.js';
import { jobRunTimeoutMs } from '../../workflows/client.js';
import { testDataConverter } from '../support/codec.js';

let tdb: TestDatabase;
let live: LiveFal;
let connection: Connection;
let temporal: Client;

before(async () => {
  tdb = await createTestDatabase();
  live = await startLiveFal();
  connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  temporal = new Client({ connection, namespace: 'default', ...testDataConverter() });
});

after(async () => {
  await connection?.close();
  await live?.close();
  await tdb?.drop();
});

// The alert needs a run still open on the lost build: the gauge counts running workflows, and X's
// pollers must first go stale and the server's visibility catch up, over a minute on a loaded
// machine. A run timeout of 45 s + grace once closed the run before that (the alert then never
// fires), so the deadline leaves two minutes.
const DEADLINE_SECONDS = 105;
const GRACE_MS = 15_000;
const START_WAIT_MS = 5_000;

test(
  'a run whose build lost every worker ends at its run timeout, refunded, its provider request canceled, and the no-pollers alert fires meanwhile',
  { timeout: 600_000 },
  async () => {
    const deployment = `backstop-${randomToken(8).toLowerCase()}`;
    const X = `x-${randomToken(8).toLowerCase()}`;
    const Y = `y-${randomToken(8).toLowerCase()}`;
    const config = testConfig(tdb.url, {
      ...live.env,
      RECONCILE_INTERVAL_MS: '1000',
      JOB_RUN_TIMEOUT_GRACE_MS: String(GRACE_MS),
      JOB_START_WAIT_MS: String(START_WAIT_MS),
      // A build counts as polled while a worker of it polled this recently (production: 90 s).
      VERSION_POLLERS_FRESH_MS: '15000',
      WORKER_DEPLOYMENT_NAME: deployment,
      WORKER_DEPLOYMENT_PROMOTE: 'newer',
      WORKER_DRAIN_CHECK_MS: '0',
    });
    const build = (buildId: string) => ({ ...config, WORKER_BUILD_ID: buildId });
    const current = async () => (await describeDeployment(temporal.workflowService, 'default', deployment))?.current;
    // The fal request stays IN_PROGRESS (the fake's walk is longer than the test): only the run timeout ends this job.
    live.fal.flow = Array<'IN_PROGRESS'>(10_000).fill('IN_PROGRESS');

    const fleets: (Workers | WorkerService)[] = [];
    let metricsServer: Server | undefined;
    try {
      const t = await createTenant(tdb.db, 100);
      // Build X: every role, the reconciler among them (it starts the job below: its start path).
      const x = await startWorkers(build(X), tdb.db, 'workflows,io,fetch,reconciler,provider:fal');
      fleets.push(x);
      await waitFor(`${X} to be current`, async () => (await current()) === X, 60_000, 250);

      const route = resolveJobRoute(config, catalog['nano-banana-2'])!;
      assert.equal(route.provider, 'fal');
      const job = await insertImageJob(tdb.db, t, {
        price: 4,
        deadlineSeconds: DEADLINE_SECONDS,
        route: { provider: 'fal', provider_model_id: route.provider_model_id! },
      });
      const jobId = job.id;
      // The reconciler of X starts the job's workflow; its render is submitted to fal and stays there.
      const requestId = await waitFor(
        `${jobId}'s fal request`,
        () => [...live.fal.states.values()].find((s) => String(s.input.prompt).includes(jobId))?.id,
        60_000,
        100,
      );
      assert.equal((await jobRow(tdb.db, jobId)).status, 'generating');
      const desc = await temporal.workflow.getHandle(jobId).describe();
      assert.equal(desc.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId, X, 'the job is pinned to X');
      const runTimeout = desc.raw.executionConfig?.workflowRunTimeout;
      assert.equal(
        Number(runTimeout?.seconds ?? 0) * 1000 + Math.round((runTimeout?.nanos ?? 0) / 1e6),
        jobRunTimeoutMs(DEADLINE_SECONDS, GRACE_MS, START_WAIT_MS),
        'the run timeout is the start bound, the deadline and the grace',
      );
      assert.equal(await creditsOf(tdb.db, t), 96, 'charged at create');

      // A deploy gone wrong: every worker of X stops with the job in flight; build Y takes over.
      await x.stop();
      fleets.splice(fleets.indexOf(x), 1);
      const metrics = createWorkerMetrics();
      const y = createWorkerService(build(Y), parseRoles('workflows,io,fetch,reconciler,provider:fal'), { db: tdb.db, metrics, processExtras: false });
      await y.start();
      fleets.push(y);
      metricsServer = await serveWorkerMetrics(metrics, '127.0.0.1', 0);
      const metricsUrl = `http://127.0.0.1:${(metricsServer.address() as AddressInfo).port}/metrics`;
      await waitFor(`${Y} to be current`, async () => (await current()) === Y, 60_000, 250);

      // The gauge names X (one job on it, no poller); the alert rule fires for X, and for X only.
      const rule = alertRule('MediagenWorkflowsWithoutPollers');
      const firing = await waitFor(
        'the no-pollers alert to fire',
        async () => {
          const scraped = await (await fetch(metricsUrl)).text();
          const series = evaluateAlert(rule.expr, scraped);
          return series.length > 0 ? series : undefined;
        },
        // X's pollers go stale after VERSION_POLLERS_FRESH_MS, then the server's poller list and its
        // visibility count must say so: on a loaded machine, well over a minute.
        180_000,
        500,
      );
      assert.deepEqual(firing, [{ labels: { deployment, build_id: X }, value: 1 }]);
      assert.equal((await jobRow(tdb.db, jobId)).status, 'generating', 'the alert fires while the job still hangs');

      // The run timeout ends it; the reconciler (on Y) refunds it and cancels its fal request.
      const row = await waitFor(
        `${jobId} to be settled`,
        async () => {
          const r = await jobRow(tdb.db, jobId);
          return r.status === 'failed' ? r : undefined;
        },
        jobRunTimeoutMs(DEADLINE_SECONDS, GRACE_MS, START_WAIT_MS) + 60_000,
        250,
      );
      assert.equal((await temporal.workflow.getHandle(jobId).describe()).status.name, 'TIMED_OUT');
      const ledger = await jobLedger(tdb.db, jobId);
      assert.equal(ledger.length, 2, `charged once, refunded once: ${JSON.stringify(ledger)}`);
      assert.equal(
        ledger.reduce((sum, [, delta]) => sum + Number(delta), 0),
        0,
        'the refund nets the charge',
      );
      assert.equal(await creditsOf(tdb.db, t), 100, 'refunded in full');
      assert.ok(row.error, 'the job says why it failed');
      // fal was running the request: it takes the cancel (202) and signals its runner.
      await waitFor(`the fal request ${requestId} to be asked to cancel`, () => (live.fal.states.get(requestId)?.cancelsAsked ?? 0) >= 1, 60_000, 250);
      assert.equal(live.fal.requestsOf('cancel').filter((r) => r.path.includes(requestId)).length, 1, 'canceled once');

      // Nothing runs on X any more: the gauge and the alert go quiet.
      await waitFor('the no-pollers alert to resolve', async () => evaluateAlert(rule.expr, await (await fetch(metricsUrl)).text()).length === 0, 60_000, 500);
    } finally {
      metricsServer?.close();
      for (const f of fleets.reverse()) await f.stop();
    }
  },
);

test(
  'a job whose first step waited in a backlog past the deadline plus the grace still completes, charged once, its output stored; one past its start bound fails unsubmitted, refunded',
  { timeout: 600_000 },
  async () => {
    // The old backstop (deadline + grace) is 45 s; the start bound gives a run 90 s more to start.
    const deadlineSeconds = 30;
    const graceMs = 15_000;
    const startWaitMs = 90_000;
    const config = testConfig(tdb.url, {
      ...live.env,
      RECONCILE_INTERVAL_MS: '1000',
      JOB_RUN_TIMEOUT_GRACE_MS: String(graceMs),
      JOB_START_WAIT_MS: String(startWaitMs),
    });
    live.fal.flow = ['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED'];
    const route = resolveJobRoute(config, catalog['nano-banana-2'])!;
    const t = await createTenant(tdb.db, 100);
    const insert = () => insertImageJob(tdb.db, t, { price: 4, deadlineSeconds, route: { provider: 'fal', provider_model_id: route.provider_model_id! } });
    const runOf = (jobId: string) => temporal.workflow.getHandle(jobId).describe();
    const ageOf = async (jobId: string) => Date.now() - (await runOf(jobId)).startTime.getTime();
    const submittedAtFal = (jobId: string) => [...live.fal.states.values()].some((s) => String(s.input.prompt).includes(jobId));

    // Only the reconciler runs at first: it starts each job's workflow, and no worker serves them.
    const starter = await startWorkers(config, tdb.db, 'reconciler');
    let fleet: Workers | undefined;
    try {
      const late = (await insert()).id;
      await waitFor(`${late}'s run to start`, async () => (await runOf(late)).status.name === 'RUNNING', 60_000, 250);
      await waitFor(`${late}'s run to have waited 40 s`, async () => (await ageOf(late)) >= 40_000, 60_000, 500);
      const held = (await insert()).id;
      await waitFor(`${held}'s run to start`, async () => (await runOf(held)).status.name === 'RUNNING', 60_000, 250);
      // Past the start bound for one, past the old backstop (deadline + grace) for the other.
      await waitFor(`${late}'s run to have waited past its start bound`, async () => (await ageOf(late)) > startWaitMs + 5_000, 120_000, 500);
      assert.ok((await ageOf(held)) > deadlineSeconds * 1000 + graceMs, 'the held job waited longer than the deadline plus the grace');
      for (const id of [late, held]) {
        assert.equal((await runOf(id)).status.name, 'RUNNING', `${id}'s run is still open, waiting for a worker`);
        assert.equal((await jobRow(tdb.db, id)).status, 'pending');
      }
      const runTimeout = (await runOf(held)).raw.executionConfig?.workflowRunTimeout;
      assert.equal(
        Number(runTimeout?.seconds ?? 0) * 1000 + Math.round((runTimeout?.nanos ?? 0) / 1e6),
        jobRunTimeoutMs(deadlineSeconds, graceMs, startWaitMs),
        'the run timeout holds the start bound, the deadline and the grace',
      );

      // The backlog clears: workers come.
      fleet = await startWorkers(config, tdb.db, 'workflows,io,fetch,provider:fal');
      const done = await jobFinished(tdb.db, held, 180_000);
      assert.equal(done.status, 'completed', `the held job completes: ${JSON.stringify(done.error)}`);
      assert.deepEqual(await jobLedger(tdb.db, held), [['charge', -4]], 'charged once, never refunded');
      const outputs = done.outputs ?? [];
      assert.equal(outputs.length, 1);
      assert.ok(await fleet.service.storage.stat(outputs[0]!.key), 'its output is in the store');
      // The run ends after its last activity wrote the row: on a loaded machine, a moment later.
      await waitFor(`${held}'s run to complete`, async () => (await runOf(held)).status.name !== 'RUNNING', 60_000, 250);
      assert.equal((await runOf(held)).status.name, 'COMPLETED');

      const failed = await jobFinished(tdb.db, late, 180_000);
      assert.equal(failed.status, 'failed');
      assert.match(failed.error?.message ?? '', /waited \d+ s to start, longer than its 90 s: it was not submitted/);
      assert.deepEqual(await jobLedger(tdb.db, late), [
        ['charge', -4],
        ['refund', 4],
      ]);
      assert.equal(submittedAtFal(late), false, 'nothing was asked of fal for it');
      assert.equal(await creditsOf(tdb.db, t), 96, 'only the completed job is paid for');
    } finally {
      await fleet?.stop();
      await starter.stop();
    }
  },
);
