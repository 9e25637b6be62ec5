// An operator's Reset, from every point the Temporal Web UI offers (every WorkflowTaskCompleted of
// the history), on the real stack. A job that failed at its provider after the request was
// recorded (the local fal queue refuses its first request) is reset to each point before the
// failing result: whichever database step the new run runs first claims the job (re-charging it),
// a check that finds the canceled request submits again, and the job ends completed with its
// ledger netting to one price. A reset past the failing result replays the failure: the job stays
// failed and refunded, nothing more is submitted. A job its customer canceled is never revived by a
// reset, from any point: it stays failed, uncharged, and nothing is submitted again. A job that
// failed longer ago than its model's deadline is revived with a deadline counted from the new run's
// claim, not from the replayed clock.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, Connection } from '@temporalio/client';
import { sql } from 'kysely';
import { createTenant, createTestDatabase, testConfig, unhurriedLimits, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, creditsOf, startGateway, startWorkers, type InProcessGateway as Gateway, type Workers } from '../support/services.js';
import type { FakeFal } from '../support/fake-providers/fal.js';
import { startLiveFal, type LiveFal } from '../support/fake-providers/live-fal.js';
import { closedRun, pointOfLocalActivity, resetRun, runHistory } from '../support/resets.js';
import type { Config } from '../../shared/config.js';
import { jobToStart, startJobWorkflow } from '../../workflows/client.js';
import { catalog } from '../../shared/catalog.js';
import { createImage, jobLedger, jobRow } from '../support/job-helpers.js';

let tdb: TestDatabase;
let fal: FakeFal;
let live: LiveFal;
let config: Config;
let gw: Gateway;
let workers: Workers;

const price = 4; // nano-banana-2, one image
/** What fal bills for that image: kept when a cancel reaches a request fal had started. */
const cost = catalog['nano-banana-2'].price.providerCost;
const credits = 100;

before(async () => {
  tdb = await createTestDatabase();
  live = await startLiveFal();
  fal = live.fal;
  config = testConfig(tdb.url, {
    ...live.env,
    ...unhurriedLimits,
  });
  gw = await startGateway(config, tdb.db);
  workers = await startWorkers(config, tdb.db, 'workflows,io,fetch,provider:fal');
});

after(async () => {
  await workers?.stop();
  await gw?.close();
  await live?.close();
  await tdb?.drop();
});

const submitsFor = (marker: string) => fal.requestsOf('submit').filter((r) => JSON.stringify(r.json).includes(marker)).length;
const rowOf = (id: string) => jobRow(tdb.db, id);
const ledger = (id: string) => jobLedger(tdb.db, id);

const create = (t: Tenant, prompt: string, baseUrl = gw.baseUrl) => createImage(baseUrl, t, prompt);

/** The reset points of a run, and the first that replays its failure (the task that ran failJob). */
async function resetPoints(client: Client, id: string, runId: string): Promise<{ points: number[]; failedAt: number | undefined }> {
  const h = await runHistory(client, id, runId);
  return { points: h.points, failedAt: pointOfLocalActivity(h, 'failJob') };
}

const reset = (client: Client, id: string, runId: string, point: number) => resetRun(client, config.TEMPORAL_NAMESPACE, id, runId, point);

describe('resetting a failed job from every point of its history', () => {
  test('every point before the failing result ends completed and charged once; a point past it fails again, refunded', async () => {
    // One job to read the points from; every job below has the same history shape.
    const probeTenant = await createTenant(tdb.db, credits);
    fal.nextOutcome('content_policy');
    const probe = await create(probeTenant, 'a lighthouse [reset-probe]');
    const probeRun = await closedRun(gw.client, probe, 'FAILED');
    const { points, failedAt } = await resetPoints(gw.client, probe, probeRun);
    assert.ok(failedAt, 'the provider refused the request after it was submitted');
    assert.ok(points.length >= 4, `the history offers several reset points (${points.join(', ')})`);

    // One failed job per reset point, each its own workspace.
    const jobs: { t: Tenant; id: string; marker: string; index: number }[] = [];
    for (let index = 0; index < points.length; index++) {
      const t = await createTenant(tdb.db, credits);
      const marker = `[reset-${index}]`;
      fal.nextOutcome('content_policy');
      jobs.push({ t, id: await create(t, `a lighthouse ${marker}`), marker, index });
    }
    const resets = await Promise.all(
      jobs.map(async (j) => {
        const runId = await closedRun(gw.client, j.id, 'FAILED');
        const row = await rowOf(j.id);
        assert.equal(row.status, 'failed');
        assert.equal(await creditsOf(tdb.db, j.t), credits, 'the failure refunded the job');
        const own = await resetPoints(gw.client, j.id, runId);
        assert.deepEqual(own.points, points, 'the same history shape as the probe');
        const point = own.points[j.index]!;
        return { ...j, point, beforeFailure: point < own.failedAt!, newRun: await reset(gw.client, j.id, runId, point) };
      }),
    );
    assert.ok(resets.some((r) => r.beforeFailure) && resets.some((r) => !r.beforeFailure), 'points on both sides of the failure');

    for (const r of resets) {
      const what = `reset to event ${r.point} (point ${r.index + 1} of ${points.length})`;
      const handle = gw.client.workflow.getHandle(r.id, r.newRun);
      if (r.beforeFailure) {
        assert.deepEqual(await handle.result(), { outputs: 1 }, `${what}: the new run completes`);
        const row = await rowOf(r.id);
        assert.equal(row.status, 'completed', `${what}: ${JSON.stringify(row.error)}`);
        assert.equal(row.status_run_id, r.newRun);
        const l = await ledger(r.id);
        assert.deepEqual(
          l,
          [
            ['charge', -price],
            ['refund', price],
            ['recharge', -price],
          ],
          `${what}: charged, refunded, charged again`,
        );
        assert.equal(await creditsOf(tdb.db, r.t), credits - price, `${what}: charged exactly once in total`);
        const url = await api(gw.baseUrl, r.t.apiKey).get(`/v1/images/${r.id}/url`);
        assert.equal(url.status, 200, `${what}: ${url.text}`);
        assert.equal(submitsFor(r.marker), 2, `${what}: the refused request, then one new one`);
      } else {
        await assert.rejects(handle.result(), `${what}: the new run replays the failure`);
        const row = await rowOf(r.id);
        assert.equal(row.status, 'failed', what);
        assert.deepEqual(
          await ledger(r.id),
          [
            ['charge', -price],
            ['refund', price],
          ],
          `${what}: nothing charged again`,
        );
        assert.equal(await creditsOf(tdb.db, r.t), credits);
        assert.equal(submitsFor(r.marker), 1, `${what}: nothing submitted again`);
      }
    }
  });
});

describe('resetting a job its customer canceled', () => {
  test('from every point of its history, it stays failed with code canceled, charged only what fal billed, and nothing is submitted again', async () => {
    fal.flow = [...Array<'IN_PROGRESS'>(200).fill('IN_PROGRESS'), 'COMPLETED'];
    try {
      const probeTenant = await createTenant(tdb.db, credits);
      const cancelAfterSubmit = async (t: Tenant, marker: string) => {
        const id = await create(t, `a lighthouse ${marker}`);
        await waitFor(`${id}'s request to be recorded`, async () => ((await rowOf(id)).provider_ref ? true : undefined), 60_000, 100);
        const r = await api(gw.baseUrl, t.apiKey).post(`/v1/images/${id}/cancel`, {});
        assert.equal(r.status, 200, r.text);
        return { id, runId: await closedRun(gw.client, id, 'CANCELLED') };
      };
      const probe = await cancelAfterSubmit(probeTenant, '[cancel-probe]');
      const { points } = await resetPoints(gw.client, probe.id, probe.runId);
      assert.ok(points.length >= 2, `reset points: ${points.join(', ')}`);

      await Promise.all(
        points.map(async (_, index) => {
          const t = await createTenant(tdb.db, credits);
          const marker = `[canceled-reset-${index}]`;
          const { id, runId } = await cancelAfterSubmit(t, marker);
          const point = (await resetPoints(gw.client, id, runId)).points[index]!;
          const newRun = await reset(gw.client, id, runId, point);
          await assert.rejects(gw.client.workflow.getHandle(id, newRun).result(), `reset to event ${point}: the new run does not revive the job`);
          const row = await rowOf(id);
          assert.equal(row.status, 'failed');
          assert.equal(row.error?.code, 'canceled');
          // One charge, then the cancel after the submit refunds the price less the provider's cost: fal
          // had started the request, so it does not confirm the cancel and the cost is kept.
          const entries = await ledger(id);
          assert.deepEqual(entries[0], ['charge', -price], `reset to event ${point}: charged once`);
          assert.ok(
            entries.slice(1).every(([reason]) => reason === 'refund'),
            `reset to event ${point}: never charged again: ${JSON.stringify(entries)}`,
          );
          assert.equal(
            entries.slice(1).reduce((sum, [, delta]) => sum + Number(delta), 0),
            price - cost,
            `reset to event ${point}: refunded all but fal's cost`,
          );
          assert.equal(await creditsOf(tdb.db, t), credits - cost);
          assert.equal(submitsFor(marker), 1, `reset to event ${point}: nothing submitted again`);
        }),
      );
    } finally {
      fal.flow = ['IN_QUEUE', 'IN_QUEUE', 'IN_PROGRESS', 'COMPLETED'];
    }
  });
});

describe("resetting a job that failed longer ago than its model's deadline", () => {
  test('from every point before the failing result, it completes within a deadline counted from the new claim, charged once, with one new submit', async () => {
    const deadlineSeconds = 30;
    // One check before the provider's answer: each run fits its deadline even on a loaded machine.
    fal.flow = ['IN_QUEUE', 'COMPLETED'];
    // Jobs created by a gateway whose Temporal is unreachable stay unstarted: their deadline is
    // shortened before this suite starts their workflows, as a model with a short deadline would have.
    const deadClient = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1', connectTimeout: 200 }) });
    const dgw = await startGateway({ ...config, WORKFLOW_START_TIMEOUT_MS: 500 }, tdb.db, { temporal: deadClient });
    const failedJob = async (t: Tenant, marker: string) => {
      const id = await create(t, `a lighthouse ${marker}`, dgw.baseUrl);
      const row = await tdb.db
        .updateTable('jobs')
        .set({ params: sql`params || jsonb_build_object('deadline_seconds', ${deadlineSeconds}::int)` })
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirstOrThrow();
      fal.nextOutcome('content_policy');
      assert.equal(await startJobWorkflow(gw.client, jobToStart(row, config.TASK_QUEUE_PREFIX)), 'started');
      return { id, runId: await closedRun(gw.client, id, 'FAILED') };
    };
    try {
      const probe = await failedJob(await createTenant(tdb.db, credits), '[deadline-probe]');
      const { points, failedAt } = await resetPoints(gw.client, probe.id, probe.runId);
      const before = points.filter((p) => p < failedAt!);
      // At least the first task (before the submit) and the one after it (scheduling the wait for
      // the provider, which reports the failure): each is tried.
      assert.ok(before.length >= 2, `reset points before the failure: ${before.join(', ')}`);

      const jobs = await Promise.all(
        before.map(async (_, index) => {
          const t = await createTenant(tdb.db, credits);
          const marker = `[deadline-reset-${index}]`;
          return { t, marker, index, ...(await failedJob(t, marker)) };
        }),
      );
      // Every failure is now older than the model's deadline.
      await waitFor(
        'the failures to be older than the deadline',
        async () => {
          const rows = await tdb.db
            .selectFrom('jobs')
            .select(['status', 'finished_at'])
            .where(
              'id',
              'in',
              jobs.map((j) => j.id),
            )
            .execute();
          return rows.every((r) => r.status === 'failed' && Date.now() - new Date(r.finished_at!).getTime() > (deadlineSeconds + 1) * 1000) ? true : undefined;
        },
        120_000,
        500,
      );

      await Promise.all(
        jobs.map(async (j) => {
          const { points: own } = await resetPoints(gw.client, j.id, j.runId);
          const point = own[j.index]!;
          const what = `reset to event ${point} (point ${j.index + 1})`;
          const newRun = await reset(gw.client, j.id, j.runId, point);
          const result = await gw.client.workflow
            .getHandle(j.id, newRun)
            .result()
            .catch(async (err: Error) => assert.fail(`${what}: the new run failed (${err.message}): ${JSON.stringify((await rowOf(j.id)).error)}`));
          assert.deepEqual(result, { outputs: 1 }, `${what}: the new run completes`);
          const row = await rowOf(j.id);
          assert.equal(row.status, 'completed', `${what}: ${JSON.stringify(row.error)}`);
          assert.equal(row.status_run_id, newRun);
          assert.deepEqual(
            await ledger(j.id),
            [
              ['charge', -price],
              ['refund', price],
              ['recharge', -price],
            ],
            `${what}: charged, refunded, charged again`,
          );
          assert.equal(await creditsOf(tdb.db, j.t), credits - price, `${what}: charged exactly once in total`);
          assert.equal(submitsFor(j.marker), 2, `${what}: the refused request, then one new one`);
        }),
      );
    } finally {
      fal.flow = ['IN_QUEUE', 'IN_QUEUE', 'IN_PROGRESS', 'COMPLETED'];
      await dgw.close();
    }
  });
});
