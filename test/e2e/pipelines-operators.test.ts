// What an operator does to a pipeline in Temporal, on the real stack (gateway over HTTP, the parent
// and its step jobs' workflows on Temporal, Postgres, MinIO, the local renderer):
// - a Reset of a failed step's job never charges the step a second time: refused while the
//   pipeline is failed, and after a resume ran the step as a new attempt; the reset run ends failed
//   naming why, the job's ledger and the workspace's balance unchanged.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { WorkflowFailedError } from '@temporalio/client';
import { createTenant, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, creditsOf, startService, type InProcessGateway as Gateway, type Service } from '../support/services.js';
import { closedRun, resetRun, runHistory } from '../support/resets.js';
import { jobLedger, jobRow } from '../support/job-helpers.js';
import { imageStep, videoStep } from '../support/pipeline-steps.js';
import type { Config } from '../../shared/config.js';

let suite: Service;
let tdb: TestDatabase;
let config: Config;
let gw: Gateway;

before(async () => {
  suite = await startService({
    RECONCILE_INTERVAL_MS: '3600000',
    RATE_LIMIT_GENERATE_PER_MIN: '1000',
    RATE_LIMIT_POLL_PER_MIN: '100000',
    LOCAL_RENDER_FAULTS: 'true',
  });
  ({ tdb, config, gw } = suite);
});

after(async () => {
  await suite?.close();
});

async function pipelineEnded(t: Tenant, id: string): Promise<any> {
  const client = api(gw.baseUrl, t.apiKey);
  return waitFor(
    `pipeline ${id} to end`,
    async () => {
      const r = await client.get(`/v1/pipelines/${id}`);
      assert.equal(r.status, 200, r.text);
      return r.body.data.status === 'completed' || r.body.data.status === 'failed' ? r.body.data : undefined;
    },
    120_000,
    200,
  );
}

/** Resets the job's last closed run to its first workflow task (the runbook's "First Workflow Task") and answers how the new run failed. */
async function resetJobAndFail(jobId: string): Promise<string> {
  const temporal = gw.client;
  const runId = await closedRun(temporal, jobId, 'FAILED');
  const history = await runHistory(temporal, jobId, runId);
  const newRun = await resetRun(temporal, config.TEMPORAL_NAMESPACE, jobId, runId, history.points[0]!);
  const err = await temporal.workflow
    .getHandle(jobId, newRun)
    .result()
    .then(
      () => assert.fail('the reset run of a superseded step job completed'),
      (e: unknown) => e,
    );
  assert.ok(err instanceof WorkflowFailedError, String(err));
  return err.cause?.message ?? '';
}

describe("an operator's reset of a failed pipeline step's job", () => {
  test('never charges the step again: refused while the pipeline is failed, and after a resume ran a new attempt', { timeout: 240_000 }, async () => {
    const t = await createTenant(tdb.db, 1000);
    const client = api(gw.baseUrl, t.apiKey);
    const before = await creditsOf(tdb.db, t);
    const created = await client.post('/v1/pipelines', { project_id: t.projectId, steps: [imageStep(), videoStep('a reset pan [fail:terminal]')] });
    assert.equal(created.status, 200, created.text);
    const failed = await pipelineEnded(t, created.body.data.id);
    assert.equal(failed.status, 'failed');
    const [still, clip] = failed.steps;
    const first = clip.job_id as string;
    assert.deepEqual(await jobLedger(tdb.db, first), [
      ['charge', -clip.price],
      ['refund', clip.price],
    ]);
    assert.equal(before - (await creditsOf(tdb.db, t)), still.price);
    // The provider's fault is gone by the time the operator resets (the marker in the prompt is the
    // fault): a revived job would render and complete, charged.
    const row = await jobRow(tdb.db, first);
    await tdb.db
      .updateTable('jobs')
      .set({ params: JSON.stringify({ ...(row.params as object), prompt: 'a reset pan' }) as never })
      .where('id', '=', first)
      .execute();

    // While the pipeline is failed: the step runs again only as a new attempt (a resume), not by reviving this one.
    const whileFailed = await resetJobAndFail(first);
    assert.match(
      whileFailed,
      new RegExp(`job ${first} is failed and cannot become generating: it is attempt 1 of step "clip" of pipeline ${failed.id}, which is failed`),
    );
    assert.deepEqual(await jobLedger(tdb.db, first), [
      ['charge', -clip.price],
      ['refund', clip.price],
    ]);
    assert.equal((await jobRow(tdb.db, first)).status, 'failed');
    assert.equal(before - (await creditsOf(tdb.db, t)), still.price, 'the refused reset charged nothing');

    const resumed = await client.post(`/v1/pipelines/${failed.id}/resume`, { body: videoStep('a reset pan').body });
    assert.equal(resumed.status, 200, resumed.text);
    const done = await pipelineEnded(t, failed.id);
    assert.equal(done.status, 'completed', JSON.stringify(done.error));
    const second = done.steps[1].job_id as string;
    assert.deepEqual(done.steps[1].jobs, [first, second]);

    // After the resume: the old attempt's job is refused, the new attempt's charge is the step's only one.
    const afterResume = await resetJobAndFail(first);
    assert.match(afterResume, new RegExp(`which has moved on to attempt 2 \\(job ${second}\\): reviving it would charge the step twice`));
    assert.deepEqual(await jobLedger(tdb.db, first), [
      ['charge', -clip.price],
      ['refund', clip.price],
    ]);
    assert.deepEqual(await jobLedger(tdb.db, second), [['charge', -done.steps[1].price]]);
    assert.equal(before - (await creditsOf(tdb.db, t)), still.price + done.steps[1].price, 'each step paid once');
    const record = (await client.get(`/v1/pipelines/${failed.id}`)).body.data;
    assert.equal(record.status, 'completed');
    assert.deepEqual(
      record.steps.map((s: any) => [s.status, s.job_id, s.jobs]),
      done.steps.map((s: any) => [s.status, s.job_id, s.jobs]),
      "the pipeline's state is untouched",
    );
    assert.equal(record.charged, still.price + done.steps[1].price);
  });
});
