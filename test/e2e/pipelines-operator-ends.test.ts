// An operator's Terminate or Cancel of a pipeline's parent workflow, on the real stack (gateway over
// HTTP, the parent and its step jobs' workflows on the Temporal dev server, Postgres, MinIO, the
// local renderer holding each render for a while): the reconciler ends the pipeline as the
// customer's cancel does — `failed` with error code `canceled`, the running step's job canceled and
// refunded, the steps after it skipped and never charged, no resume — and never starts a new run of
// it, however long it sits past the stall period. A reset of the running parent (which terminates
// the run it replaces) is no such end: the reset run completes the pipeline, each step charged once.
// (A run the reconciler itself terminated is restarted once: test/e2e/pipelines.test.ts and
// test/e2e/control-fleet.test.ts.)
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { createTenant, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, creditsOf, startService, type InProcessGateway as Gateway, type Service } from '../support/services.js';
import { jobLedger, jobRow } from '../support/job-helpers.js';
import { imageStep, videoStep } from '../support/pipeline-steps.js';
import { reconcilerOf } from '../support/reconciler.js';
import { resetRun, runHistory } from '../support/resets.js';
import type { Config } from '../../shared/config.js';

let suite: Service;
let tdb: TestDatabase;
let config: Config;
let gw: Gateway;
/** The stall period the reconciler here uses: past it, a pipeline nobody moves on is restarted unless it was ended. */
const STALL_MS = 1000;

before(async () => {
  suite = await startService({
    // The workers' own reconciler stays out of it: the test runs passes by hand.
    RECONCILE_INTERVAL_MS: '3600000',
    RATE_LIMIT_GENERATE_PER_MIN: '1000',
    RATE_LIMIT_POLL_PER_MIN: '100000',
    // Each render takes this long, so the operator acts while step 1's job is at the renderer.
    LOCAL_RENDER_LATENCY_MS: '30000',
  });
  ({ tdb, config, gw } = suite);
});

after(async () => {
  await suite?.close();
});

const reconciler = (stallMs: number) =>
  reconcilerOf({ config: { ...config, PIPELINE_STALL_MS: stallMs }, db: tdb.db, storage: gw.storage, client: gw.client, logger: pino({ level: 'silent' }) });

/** A two-step pipeline, once step 1's job is generating at the renderer: its id, step 1's job and the parent's run. */
async function pipelineAtStep1(t: Tenant, name: string): Promise<{ id: string; stillJob: string; runId: string }> {
  const client = api(gw.baseUrl, t.apiKey);
  const created = await client.post('/v1/pipelines', { project_id: t.projectId, steps: [imageStep(`${name} still`), videoStep(`${name} pan`)] });
  assert.equal(created.status, 200, created.text);
  const id = created.body.data.id as string;
  const stillJob = await waitFor('step 1 to have its job', async () => (await client.get(`/v1/pipelines/${id}`)).body.data.steps[0].job_id ?? undefined);
  await waitFor("step 1's job to be at the renderer", async () => ((await jobRow(tdb.db, stillJob)).status === 'generating' ? true : undefined));
  const run = await gw.client.workflow.getHandle(id).describe();
  return { id, stillJob, runId: run.runId };
}

/** Reconciler passes until the pipeline ended; then passes until the stall period has passed twice over, and the parent's runs. */
async function endedByReconciler(
  t: Tenant,
  id: string,
  opts: { stallMs: number; timeoutMs: number } = { stallMs: STALL_MS, timeoutMs: 60_000 },
): Promise<{ p: any; runs: { runId: string; status: string }[] }> {
  const client = api(gw.baseUrl, t.apiKey);
  const r = reconciler(opts.stallMs);
  const p = await waitFor(
    'the reconciler to end the pipeline',
    async () => {
      await r.runOnce();
      const p = (await client.get(`/v1/pipelines/${id}`)).body.data;
      return p.status === 'completed' || p.status === 'failed' ? p : undefined;
    },
    opts.timeoutMs,
    200,
  );
  // A stalled pipeline would be restarted by now: the ended one has one run, its parent's.
  const quietSince = Date.now();
  await waitFor(
    'passes past twice the stall period',
    async () => {
      await r.runOnce();
      return Date.now() - quietSince > 2 * opts.stallMs ? true : undefined;
    },
    30_000 + 2 * opts.stallMs,
    200,
  );
  const runs: { runId: string; status: string }[] = [];
  for await (const w of gw.client.workflow.list({ query: `WorkflowId = '${id}'` })) runs.push({ runId: w.runId, status: w.status.name });
  return { p, runs };
}

/** The pipeline ended as the customer's cancel ends it: step 1's job canceled and refunded in full (the renderer costs nothing), step 2 never charged. */
async function assertEndedAsCanceled(t: Tenant, p: any, stillJob: string, creditsBefore: number): Promise<void> {
  assert.equal(p.status, 'failed');
  assert.equal(p.error?.code, 'canceled', JSON.stringify(p.error));
  const [still, clip] = p.steps;
  assert.deepEqual([still.status, clip.status], ['failed', 'skipped']);
  assert.deepEqual(still.jobs, [stillJob]);
  assert.deepEqual(clip.jobs, [], 'step 2 never got a job');
  const job = await jobRow(tdb.db, stillJob);
  assert.equal(job.status, 'failed');
  assert.equal(job.error?.code, 'canceled');
  assert.deepEqual(await jobLedger(tdb.db, stillJob), [
    ['charge', -still.price],
    ['refund', still.price],
  ]);
  assert.equal(await creditsOf(tdb.db, t), creditsBefore, 'nothing charged in the end');
  assert.equal(p.charged, 0);
  const resumed = await api(gw.baseUrl, t.apiKey).post(`/v1/pipelines/${p.id}/resume`, {});
  assert.equal(resumed.status, 409, 'a canceled pipeline is not resumed');
  assert.equal(resumed.body.error.code, 'not_resumable');
}

describe("an operator's terminate of a pipeline's parent", () => {
  test('ends the pipeline canceled as a customer cancel does, and is never restarted', { timeout: 180_000 }, async () => {
    const t = await createTenant(tdb.db, 1000);
    const before = await creditsOf(tdb.db, t);
    const { id, stillJob, runId } = await pipelineAtStep1(t, 'a terminated');
    await gw.client.workflow.getHandle(id, runId).terminate('operator: wrong pipeline');
    const { p, runs } = await endedByReconciler(t, id);
    await assertEndedAsCanceled(t, p, stillJob, before);
    assert.deepEqual(runs, [{ runId, status: 'TERMINATED' }], 'no new run of the parent');
  });
});

describe("an operator's cancel of a pipeline's parent (the Web UI's Request Cancellation)", () => {
  test('ends the pipeline canceled as a customer cancel does, and is never restarted', { timeout: 180_000 }, async () => {
    const t = await createTenant(tdb.db, 1000);
    const before = await creditsOf(tdb.db, t);
    const { id, stillJob, runId } = await pipelineAtStep1(t, 'a canceled');
    await gw.client.workflow.getHandle(id, runId).cancel();
    const { p, runs } = await endedByReconciler(t, id);
    await assertEndedAsCanceled(t, p, stillJob, before);
    assert.deepEqual(runs, [{ runId, status: 'CANCELLED' }], 'no new run of the parent');
  });
});

describe("an operator's reset of a running pipeline parent", () => {
  test('is not taken for an end: the reset run completes the pipeline, each step charged once', { timeout: 240_000 }, async () => {
    const t = await createTenant(tdb.db, 1000);
    const before = await creditsOf(tdb.db, t);
    const { id, stillJob, runId } = await pipelineAtStep1(t, 'a reset');
    const history = await runHistory(gw.client, id, runId);
    const newRun = await resetRun(gw.client, config.TEMPORAL_NAMESPACE, id, runId, history.points[0]!);
    // A stall period above the parent's longest wait between two looks at its step (10 s): a run that
    // works is not stalled.
    const { p, runs } = await endedByReconciler(t, id, { stallMs: 15_000, timeoutMs: 180_000 });
    assert.equal(p.status, 'completed', JSON.stringify(p.error));
    assert.deepEqual(p.steps[0].jobs, [stillJob], 'step 1 ran as one job');
    for (const s of p.steps) assert.equal(s.charged, s.price, `step ${s.id} charged once`);
    assert.equal(before - (await creditsOf(tdb.db, t)), p.price);
    assert.deepEqual(
      runs.sort((a, b) => (a.runId === runId ? -1 : b.runId === runId ? 1 : 0)),
      [
        { runId, status: 'TERMINATED' },
        { runId: newRun, status: 'COMPLETED' },
      ],
      'the replaced run and the reset run, nothing more',
    );
  });
});
