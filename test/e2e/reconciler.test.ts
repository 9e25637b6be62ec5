// The reconciler at scale, on the real stack with fal's queue protocol served locally:
//   - a terminated job is found by one visibility query, refunded, and its provider request is
//     canceled from the reference stored on its row; a pass costs a constant number of Temporal
//     calls plus one per job it settles, and none for the healthy jobs in flight;
//   - a reset run terminated before its first step: the row still names the run the reset
//     replaced, and is settled from it once;
//   - a job whose final database write was lost (its workflow completed or failed, the row went
//     back to generating) is repaired from the database side within two passes, whatever the
//     search attributes say: completed with its stored outputs, or failed and refunded;
//   - two reconciler replicas never act on the same row: neither when they settle terminated jobs
//     nor when they start jobs whose start failed, and a claim held by one is skipped by the other.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, Connection, type WorkflowClientInterceptor } from '@temporalio/client';
import { pino } from 'pino';
import { reconcilerOf } from '../support/reconciler.js';
import { createTenant, createTestDatabase, testConfig, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, creditsOf, startGateway, startWorkers, type InProcessGateway as Gateway, type Workers } from '../support/services.js';
import { startLiveFal, type LiveFal } from '../support/fake-providers/live-fal.js';
import { createDb, type Database } from '../../db/index.js';
import * as jobsRepo from '../../db/repos/jobs.js';
import * as leases from '../../db/repos/job-leases.js';
import { inFlightStatuses } from '../../jobs/index.js';
import { ledgerForJob } from '../support/ledger.js';
import type { ReconcilePass, Reconciler } from '../../worker/reconciler.js';
import { listClosedInFlightRuns } from '../../workflows/visibility.js';
import { PROVIDER_CANCEL_RUN_TIMEOUT_MS } from '../../workflows/definitions.js';
import { closedRun, resetRun, runHistory } from '../support/resets.js';
import { sql } from 'kysely';
import type { Config } from '../../shared/config.js';
import { createImage } from '../support/job-helpers.js';
import { codecDataConverter } from '../../codec/payload-codec.js';

let tdb: TestDatabase;
let live: LiveFal;
let config: Config;
let gw: Gateway;
let workers: Workers;
const price = 4; // nano-banana-2, one image
const pools: Database[] = [];

before(async () => {
  tdb = await createTestDatabase();
  live = await startLiveFal();
  // Every request stays in fal's queue: the jobs are in flight at the provider until the test ends them.
  live.fal.flow = ['IN_QUEUE'];
  // The reconcilers are driven by hand (runOnce).
  config = testConfig(tdb.url, { ...live.env, RATE_LIMIT_GENERATE_PER_MIN: '1000', RATE_LIMIT_POLL_PER_MIN: '100000', RECONCILE_INTERVAL_MS: '3600000' });
  gw = await startGateway(config, tdb.db);
  workers = await startWorkers(config, tdb.db);
});

after(async () => {
  await workers?.stop();
  await gw?.close();
  await Promise.all(pools.map((p) => p.destroy()));
  await live?.close();
  await tdb?.drop();
});

/** A reconciler replica with its own pool, as another worker process would have. */
function replica(client: Client = gw.client, overrides: Partial<Config> = {}): Reconciler {
  const db = createDb(tdb.url, 4);
  pools.push(db);
  return reconcilerOf({ config: { ...config, ...overrides }, db, storage: workers.service.storage, client, logger: pino({ level: 'silent' }) });
}

const create = (t: Tenant, prompt: string, baseUrl = gw.baseUrl) => createImage(baseUrl, t, prompt);

/** Jobs generating at fal, each with its request reference stored on its row. */
async function jobsAtProvider(t: Tenant, n: number, label: string): Promise<string[]> {
  const ids = await Promise.all(Array.from({ length: n }, (_, i) => create(t, `${label} ${i}`)));
  await waitFor(`${n} jobs to hold a provider reference`, async () => {
    const rows = await tdb.db.selectFrom('jobs').select(['status', 'provider_ref']).where('id', 'in', ids).execute();
    return rows.length === n && rows.every((r) => r.status === 'generating' && r.provider_ref) ? true : undefined;
  });
  return ids;
}

/** fal's request id stored on the job's row. */
async function falRequestOf(jobId: string): Promise<string> {
  const row = (await jobsRepo.getJob(tdb.db, jobId))!;
  const ref = row.provider_ref as Record<string, unknown>;
  const id = Object.values(ref).find((v) => typeof v === 'string' && live.fal.states.has(v));
  assert.ok(id, `the row of ${jobId} names a fal request`);
  return id as string;
}

const cancelsAtFal = (requestId: string) => live.fal.requestsOf('cancel').filter((r) => r.path.split('/')[4] === requestId).length;

async function terminateAll(ids: string[]): Promise<void> {
  await Promise.all(ids.map((id) => gw.client.workflow.getHandle(id).terminate('operator: stuck job')));
  // Visibility is eventually consistent: the closed runs are listed a moment later.
  await waitFor(
    `visibility to list ${ids.length} terminated runs`,
    async () => {
      const { runs } = await listClosedInFlightRuns(gw.client, { taskQueuePrefix: config.TASK_QUEUE_PREFIX, closedAfter: new Date(Date.now() - 3_600_000) });
      const listed = new Set(runs.map((r) => r.jobId));
      return ids.every((id) => listed.has(id)) ? true : undefined;
    },
    30_000,
    200,
  );
}

describe('a job whose workflow was terminated', () => {
  test('is refunded and its provider request canceled from its stored reference; healthy jobs in flight cost no Temporal call', async () => {
    const t = await createTenant(tdb.db, 100);
    const [healthy] = await jobsAtProvider(t, 1, 'healthy');
    const terminated = await jobsAtProvider(t, 3, 'terminated');
    const requests = await Promise.all(terminated.map(falRequestOf));
    assert.equal(await creditsOf(tdb.db, t), 100 - 4 * price);
    await terminateAll(terminated);

    const reconciler = replica();
    const passes: ReconcilePass[] = [];
    await waitFor('the reconciler to settle the terminated jobs', async () => {
      passes.push(await reconciler.runOnce());
      return passes.flatMap((p) => p.settled).length === terminated.length ? true : undefined;
    });
    assert.deepEqual(passes.flatMap((p) => p.settled).sort(), [...terminated].sort());
    for (const p of passes) {
      // One listing of closed runs, one describe and one provider cancel per job settled.
      assert.ok(p.temporalCalls <= 1 + 2 * p.settled.length, `a pass made ${p.temporalCalls} Temporal calls to settle ${p.settled.length} jobs`);
    }
    for (const id of terminated) {
      const row = (await jobsRepo.getJob(tdb.db, id))!;
      assert.equal(row.status, 'failed');
      assert.equal(row.error?.code, 'canceled');
      assert.match(row.error?.message ?? '', /terminated/);
      assert.deepEqual(
        (await ledgerForJob(tdb.db, id)).map((l) => [l.reason, Number(l.delta)]),
        [
          ['charge', -price],
          ['refund', price],
        ],
      );
    }
    assert.equal(await creditsOf(tdb.db, t), 100 - price, 'only the healthy job stays charged');
    // The provider-cancel workflow cancels each request at fal, once, from the reference on the row.
    await waitFor('fal to receive one cancel per terminated request', () => (requests.every((r) => cancelsAtFal(r) === 1) ? true : undefined));
    for (const id of terminated) {
      const runTimeout = (await gw.client.workflow.getHandle(`${id}-provider-cancel`).describe()).raw.executionConfig?.workflowRunTimeout;
      assert.equal(
        Number(runTimeout?.seconds ?? 0) * 1000 + Math.round((runTimeout?.nanos ?? 0) / 1e6),
        PROVIDER_CANCEL_RUN_TIMEOUT_MS,
        'each provider-cancel run is bounded: its retry bound and as long again',
      );
    }

    // Nothing to settle now: a pass is one visibility call, whatever is in flight.
    const idle = await reconciler.runOnce();
    assert.deepEqual(idle, { started: [], settled: [], completed: [], temporalCalls: 1 });
    const row = (await jobsRepo.getJob(tdb.db, healthy!))!;
    assert.equal(row.status, 'generating', 'the healthy job is untouched');
    assert.equal(row.reconcile_lease_until, null, 'and never claimed');
  });
});

describe('two reconciler replicas', () => {
  test('settling terminated jobs: every job is settled by exactly one of them, refunded once, its request canceled once', async () => {
    const t = await createTenant(tdb.db, 1000);
    const ids = await jobsAtProvider(t, 12, 'shared settle');
    const requests = await Promise.all(ids.map(falRequestOf));
    await terminateAll(ids);

    const [a, b] = [replica(), replica()];
    const byA: string[] = [];
    const byB: string[] = [];
    await waitFor('the replicas to settle every terminated job', async () => {
      const [pa, pb] = await Promise.all([a.runOnce(), b.runOnce()]);
      byA.push(...pa.settled);
      byB.push(...pb.settled);
      return byA.length + byB.length >= ids.length ? true : undefined;
    });
    assert.deepEqual(
      byA.filter((id) => byB.includes(id)),
      [],
      'no job settled by both',
    );
    assert.deepEqual([...byA, ...byB].sort(), [...ids].sort(), 'every job settled once');
    for (const id of ids) {
      assert.deepEqual(
        (await ledgerForJob(tdb.db, id)).map((l) => l.reason),
        ['charge', 'refund'],
      );
    }
    assert.equal(await creditsOf(tdb.db, t), 1000);
    await waitFor('fal to receive one cancel per request', () => (requests.every((r) => cancelsAtFal(r) === 1) ? true : undefined));
  });

  test('starting jobs whose start failed: each workflow is started by exactly one of them, once', async () => {
    // A gateway whose Temporal is unreachable: the creates commit, their starts fail.
    const deadClient = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1', connectTimeout: 200 }) });
    const dgw = await startGateway({ ...config, WORKFLOW_START_TIMEOUT_MS: 500 }, tdb.db, { temporal: deadClient });
    try {
      const t = await createTenant(tdb.db, 1000);
      const ids = await Promise.all(Array.from({ length: 12 }, (_, i) => create(t, `unstarted ${i}`, dgw.baseUrl)));
      // Each replica's start calls, through a client interceptor on its own client.
      const startsOf = (calls: string[]): WorkflowClientInterceptor => ({
        start: (input, next) => {
          calls.push(input.options.workflowId);
          return next(input);
        },
      });
      const callsA: string[] = [];
      const callsB: string[] = [];
      const clientOf = (calls: string[]) =>
        new Client({
          connection: gw.client.connection,
          namespace: config.TEMPORAL_NAMESPACE,
          ...codecDataConverter(config),
          interceptors: { workflow: [startsOf(calls)] },
        });
      const [a, b] = [replica(clientOf(callsA)), replica(clientOf(callsB))];
      const started: string[] = [];
      // The replicas leave jobs younger than a few seconds to the gateway's own start.
      await waitFor(
        'the replicas to start every job',
        async () => {
          const [pa, pb] = await Promise.all([a.runOnce(), b.runOnce()]);
          started.push(...pa.started, ...pb.started);
          return started.length >= ids.length ? true : undefined;
        },
        30_000,
        250,
      );
      assert.deepEqual([...started].sort(), [...ids].sort());
      assert.deepEqual(
        callsA.filter((id) => callsB.includes(id)),
        [],
        'no job started by both',
      );
      assert.deepEqual([...callsA, ...callsB].sort(), [...ids].sort(), 'one start call per job');
      const rows = await tdb.db.selectFrom('jobs').select('workflow_started').where('id', 'in', ids).execute();
      assert.ok(rows.every((r) => r.workflow_started));
    } finally {
      await dgw.close();
    }
  });

  test("a claim held by one replica's open transaction is skipped by the other, and its lease keeps it off afterwards", async () => {
    const t = await createTenant(tdb.db, 1000);
    const ids = await jobsAtProvider(t, 4, 'claimed rows');
    const other = createDb(tdb.url, 2);
    pools.push(other);
    let releaseFirst!: () => void;
    const firstHolds = new Promise<void>((r) => (releaseFirst = r));
    let firstClaimed!: (ids: string[]) => void;
    const claimedByFirst = new Promise<string[]>((r) => (firstClaimed = r));
    const first = tdb.db.transaction().execute(async (tx) => {
      firstClaimed((await leases.claimInFlightJobs(tx, inFlightStatuses, ids.slice(0, 2), 60_000)).map((j) => j.id));
      await firstHolds;
    });
    assert.deepEqual((await claimedByFirst).sort(), ids.slice(0, 2).sort());
    // While the first claim is uncommitted, its rows are locked: the other replica skips them at once.
    const second = await leases.claimInFlightJobs(other, inFlightStatuses, ids, 60_000);
    assert.deepEqual(second.map((j) => j.id).sort(), ids.slice(2).sort());
    releaseFirst();
    await first;
    // Committed: the first replica's lease keeps the rows off, and so does the second's.
    assert.deepEqual(await leases.claimInFlightJobs(other, inFlightStatuses, ids, 60_000), []);
    assert.deepEqual(await leases.claimInFlightJobs(tdb.db, inFlightStatuses, ids, 60_000), []);
  });
});

describe('a reset run terminated before its first step', () => {
  test('the job is settled once from the run its row still names: refunded once, its provider request canceled once', async () => {
    const t = await createTenant(tdb.db, 100);
    const [id] = await jobsAtProvider(t, 1, 'reset then terminate');
    const request = await falRequestOf(id!);
    const replaced = (await gw.client.workflow.getHandle(id!).describe()).runId;
    const { points } = await runHistory(gw.client, id!, replaced);
    // With no worker polling, the new run's first workflow task never runs before its terminate.
    await workers.stop();
    try {
      const newRun = await resetRun(gw.client, config.TEMPORAL_NAMESPACE, id!, replaced, points[0]!);
      await gw.client.workflow.getHandle(id!, newRun).terminate('operator: stuck job');
      assert.equal((await jobsRepo.getJob(tdb.db, id!))!.status_run_id, replaced, 'the row still names the replaced run');
    } finally {
      workers = await startWorkers(config, tdb.db);
    }

    const reconciler = replica();
    const settled: string[] = [];
    await waitFor(
      'the reconciler to settle the job',
      async () => {
        settled.push(...(await reconciler.runOnce()).settled);
        return settled.includes(id!) ? true : undefined;
      },
      60_000,
      250,
    );
    // Later passes (visibility still lists both closed runs) change nothing.
    for (let i = 0; i < 2; i++) assert.deepEqual((await reconciler.runOnce()).settled, []);
    const row = (await jobsRepo.getJob(tdb.db, id!))!;
    assert.equal(row.status, 'failed');
    assert.equal(row.error?.code, 'canceled');
    assert.deepEqual(
      (await ledgerForJob(tdb.db, id!)).map((l) => [l.reason, Number(l.delta)]),
      [
        ['charge', -price],
        ['refund', price],
      ],
      'refunded exactly once',
    );
    assert.equal(await creditsOf(tdb.db, t), 100);
    await waitFor('fal to receive one cancel of the request', () => (cancelsAtFal(request) === 1 ? true : undefined));
  });
});

describe('a job whose final database write was lost', () => {
  const staleAfterMs = 60_000;
  /** The row as it was before its final write, last written longer ago than the stale bound. */
  const lostFinalWrite = (id: string) =>
    tdb.db
      .updateTable('jobs')
      .set({
        status: 'generating',
        outputs: null,
        error: null,
        finished_at: null,
        phase: 'generating',
        percent: null,
        updated_at: sql<Date>`now() - make_interval(secs => ${staleAfterMs / 1000 + 1})`,
      })
      .where('id', '=', id)
      .execute();

  test('completed workflow: within two passes the job is completed with its stored outputs, charged once', async () => {
    live.fal.flow = ['COMPLETED'];
    try {
      const t = await createTenant(tdb.db, 100);
      const id = await create(t, 'lost completion');
      await closedRun(gw.client, id, 'COMPLETED');
      const done = (await jobsRepo.getJob(tdb.db, id))!;
      assert.equal(done.status, 'completed');
      await lostFinalWrite(id);

      const reconciler = replica(gw.client, { RECONCILE_STALE_AFTER_MS: staleAfterMs });
      const passes = [await reconciler.runOnce(), await reconciler.runOnce()];
      assert.deepEqual(
        passes.flatMap((p) => p.completed).filter((j) => j === id),
        [id],
        'completed by the reconciler, once',
      );
      const row = (await jobsRepo.getJob(tdb.db, id))!;
      assert.equal(row.status, 'completed');
      assert.deepEqual(row.outputs, done.outputs, 'with the outputs its workflow stored');
      assert.deepEqual(
        (await ledgerForJob(tdb.db, id)).map((l) => [l.reason, Number(l.delta)]),
        [['charge', -price]],
        'charged once',
      );
      assert.equal(await creditsOf(tdb.db, t), 100 - price);
      const url = await api(gw.baseUrl, t.apiKey).get(`/v1/images/${id}/url`);
      assert.equal(url.status, 200, url.text);
    } finally {
      live.fal.flow = ['IN_QUEUE'];
    }
  });

  test('failed workflow: within two passes the job is failed and refunded once', async () => {
    live.fal.flow = ['COMPLETED'];
    try {
      const t = await createTenant(tdb.db, 100);
      live.fal.nextOutcome('content_policy');
      const id = await create(t, 'lost failure');
      await closedRun(gw.client, id, 'FAILED');
      assert.equal((await jobsRepo.getJob(tdb.db, id))!.status, 'failed');
      // The failure's commit is lost whole: the row goes back to generating and the refund is undone.
      await lostFinalWrite(id);
      await tdb.db.deleteFrom('credit_ledger').where('job_id', '=', id).where('reason', '=', 'refund').execute();
      await tdb.db
        .updateTable('workspaces')
        .set({ credits: sql`credits - ${price}` })
        .where('id', '=', t.workspaceId)
        .execute();
      assert.equal(await creditsOf(tdb.db, t), 100 - price);

      const reconciler = replica(gw.client, { RECONCILE_STALE_AFTER_MS: staleAfterMs });
      const passes = [await reconciler.runOnce(), await reconciler.runOnce()];
      assert.deepEqual(
        passes.flatMap((p) => p.settled).filter((j) => j === id),
        [id],
        'settled by the reconciler, once',
      );
      const row = (await jobsRepo.getJob(tdb.db, id))!;
      assert.equal(row.status, 'failed');
      assert.equal(row.error?.code, 'generation_failed');
      assert.deepEqual(
        (await ledgerForJob(tdb.db, id)).map((l) => [l.reason, Number(l.delta)]),
        [
          ['charge', -price],
          ['refund', price],
        ],
        'refunded once',
      );
      assert.equal(await creditsOf(tdb.db, t), 100);
    } finally {
      live.fal.flow = ['IN_QUEUE'];
    }
  });
});
