// The operator acts the reconciler detects, in the audit log, on the real stack (Temporal dev
// server, fal's queue protocol served locally): a job whose workflow an operator terminated, and a
// running job an operator reset, are each recorded exactly once as `system:reconciler`, although
// two reconciler replicas run their passes at the same time and keep running them afterwards; the
// events are visible to the job's workspace through GET /v1/audit-events, and to no other.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { reconcilerOf } from '../support/reconciler.js';
import { createTenant, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, startService, type InProcessGateway as Gateway, type Service, type Workers } from '../support/services.js';
import { startLiveFal, type LiveFal } from '../support/fake-providers/live-fal.js';
import { createDb, type Database } from '../../db/index.js';
import * as jobsRepo from '../../db/repos/jobs.js';
import type { Reconciler } from '../../worker/reconciler.js';
import { listClosedInFlightRuns } from '../../workflows/visibility.js';
import { resetRun, runHistory } from '../support/resets.js';
import type { Config } from '../../shared/config.js';
import { createImage } from '../support/job-helpers.js';

let suite: Service;
let tdb: TestDatabase;
let live: LiveFal;
let config: Config;
let gw: Gateway;
let workers: Workers;
const price = 4; // nano-banana-2, one image
const pools: Database[] = [];

before(async () => {
  live = await startLiveFal();
  // Every request stays in fal's queue: the jobs are in flight until the test ends them.
  live.fal.flow = ['IN_QUEUE'];
  // The reconcilers are driven by hand (runOnce).
  suite = await startService({ ...live.env, RATE_LIMIT_GENERATE_PER_MIN: '1000', RATE_LIMIT_POLL_PER_MIN: '100000', RECONCILE_INTERVAL_MS: '3600000' });
  ({ tdb, config, gw, workers } = suite);
});

after(async () => {
  // The replicas' pools close before their database is dropped.
  await Promise.all(pools.map((p) => p.destroy()));
  await suite?.close();
  await live?.close();
});

/** A reconciler replica with its own pool, as another worker process would have. */
function replica(): Reconciler {
  const db = createDb(tdb.url, 4);
  pools.push(db);
  return reconcilerOf({ config, db, storage: workers.service.storage, client: gw.client, logger: pino({ level: 'silent' }) });
}

/** A job generating at fal, its request reference stored on its row. */
async function jobAtProvider(t: Tenant, label: string): Promise<string> {
  const id = await createImage(gw.baseUrl, t, label);
  await waitFor(`${id} to hold a provider reference`, async () => {
    const row = await jobsRepo.getJob(tdb.db, id);
    return row?.status === 'generating' && row.provider_ref ? true : undefined;
  });
  return id;
}

/** Waits until visibility lists the closed run `runId` of job `id`. */
async function listedClosed(id: string, runId: string): Promise<void> {
  await waitFor(
    `visibility to list run ${runId} of ${id} as closed`,
    async () => {
      const { runs } = await listClosedInFlightRuns(gw.client, { taskQueuePrefix: config.TASK_QUEUE_PREFIX, closedAfter: new Date(Date.now() - 3_600_000) });
      return runs.some((r) => r.jobId === id && r.runId === runId) ? true : undefined;
    },
    30_000,
    200,
  );
}

const eventsOf = (jobId: string) => tdb.db.selectFrom('audit_events').selectAll().where('target_id', '=', jobId).orderBy('created_at').execute();

/** Both replicas run a pass at the same time, until `done`; then two more rounds each. */
async function runReplicas(replicas: Reconciler[], what: string, done: () => Promise<boolean>): Promise<void> {
  await waitFor(
    what,
    async () => {
      await Promise.all(replicas.map((r) => r.runOnce()));
      return (await done()) ? true : undefined;
    },
    60_000,
    250,
  );
  for (let i = 0; i < 2; i++) await Promise.all(replicas.map((r) => r.runOnce()));
}

describe('an operator terminate detected by the reconciler', () => {
  test('is recorded once by two replicas, with the run and the refund, and shown only to its workspace', async () => {
    const t = await createTenant(tdb.db, 100);
    const other = await createTenant(tdb.db, 100);
    const id = await jobAtProvider(t, 'terminated by an operator');
    const handle = gw.client.workflow.getHandle(id);
    const runId = (await handle.describe()).runId;
    await handle.terminate('operator: stuck job');
    await listedClosed(id, runId);

    await runReplicas([replica(), replica()], 'the job to be settled', async () => (await jobsRepo.getJob(tdb.db, id))!.status === 'failed');
    const events = await eventsOf(id);
    assert.deepEqual(
      events.map((e) => [e.action, e.actor, e.workspace_id, e.target_type]),
      [['job.terminated_detected', 'system:reconciler', t.workspaceId, 'job']],
      'exactly one event for the terminate',
    );
    assert.deepEqual(events[0]!.details, { kind: 'image', run_id: runId, refunded: price });

    const seen = await api(gw.baseUrl, t.apiKey).get('/v1/audit-events?action=job.terminated_detected');
    assert.equal(seen.status, 200, seen.text);
    assert.deepEqual(
      seen.body.data.map((e: { target_id: string }) => e.target_id),
      [id],
    );
    const unseen = await api(gw.baseUrl, other.apiKey).get('/v1/audit-events?action=job.terminated_detected');
    assert.equal(unseen.status, 200, unseen.text);
    assert.deepEqual(unseen.body.data, [], "another workspace's owner sees none of it");
  });
});

describe('an operator reset of a running job detected by the reconciler', () => {
  test('is recorded once, naming the replaced run and the new one, and the job is left to the new run', async () => {
    const t = await createTenant(tdb.db, 100);
    const id = await jobAtProvider(t, 'reset by an operator');
    const replaced = (await gw.client.workflow.getHandle(id).describe()).runId;
    const { points } = await runHistory(gw.client, id, replaced);
    const newRun = await resetRun(gw.client, config.TEMPORAL_NAMESPACE, id, replaced, points[0]!);
    // The new run claims the job at its first step: the row then names it, not the replaced run.
    await waitFor(`the new run to claim ${id}`, async () => ((await jobsRepo.getJob(tdb.db, id))!.status_run_id === newRun ? true : undefined), 60_000, 100);
    await listedClosed(id, replaced);

    await runReplicas([replica(), replica()], 'the reset to be recorded', async () => (await eventsOf(id)).length > 0);
    const events = await eventsOf(id);
    assert.deepEqual(
      events.map((e) => [e.action, e.actor, e.workspace_id]),
      [['job.reset_detected', 'system:reconciler', t.workspaceId]],
      'exactly one event for the reset',
    );
    assert.deepEqual(events[0]!.details, { kind: 'image', replaced_run_id: replaced, replaced_run_closed_as: 'TERMINATED', latest_run_id: newRun });
    const row = (await jobsRepo.getJob(tdb.db, id))!;
    assert.equal(row.status, 'generating', 'the new run still holds the job');
    assert.equal(row.status_run_id, newRun);

    const seen = await api(gw.baseUrl, t.apiKey).get(`/v1/audit-events?target_id=${id}`);
    assert.equal(seen.status, 200, seen.text);
    assert.deepEqual(
      seen.body.data.map((e: { action: string }) => e.action),
      ['job.reset_detected'],
    );
    await gw.client.workflow.getHandle(id, newRun).terminate('test over');
  });
});
