// What operators do in the Temporal Web UI, done through the same Temporal client APIs the UI uses:
// find jobs by id and by search attribute (list / visibility queries), read the summary, reset a
// failed job so it runs again and is charged exactly once, cancel and terminate a running job.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import { createTenant, testConfig, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import {
  api,
  creditsOf,
  startGateway,
  startService,
  startWorkers,
  waitForJobStatus,
  type InProcessGateway as Gateway,
  type Service,
  type Workers,
} from '../support/services.js';
import { insertUpload, probeUrl } from '../support/fixtures.js';
import { ledgerForJob } from '../support/ledger.js';
import { searchAttributes } from '../../workflows/definitions.js';
import type { Config } from '../../shared/config.js';
import { imageBody } from '../support/job-helpers.js';

let svc: Service;
let tdb: TestDatabase;
let gw: Gateway;

const limits = { RATE_LIMIT_GENERATE_PER_MIN: '1000', RATE_LIMIT_POLL_PER_MIN: '100000' };

before(async () => {
  // The reconciler is driven by hand (runOnce).
  svc = await startService({ ...limits, RECONCILE_INTERVAL_MS: '3600000' });
  ({ tdb, gw } = svc);
});

after(async () => {
  await svc?.close();
});

/** The workflows a visibility query finds (what the Web UI's search box runs). */
async function list(client: Client, query: string): Promise<WorkflowExecutionInfo[]> {
  const found: WorkflowExecutionInfo[] = [];
  for await (const wf of client.workflow.list({ query })) found.push(wf);
  return found;
}

/** Visibility is eventually consistent: wait until the query finds exactly the expected workflow ids. */
async function waitForListed(client: Client, query: string, ids: string[]): Promise<WorkflowExecutionInfo[]> {
  const want = [...ids].sort().join(',');
  return waitFor(
    `visibility query ${query} to find ${want || 'nothing'}`,
    async () => {
      const found = await list(client, query);
      return found
        .map((w) => w.workflowId)
        .sort()
        .join(',') === want
        ? found
        : undefined;
    },
    30_000,
    250,
  );
}

describe('finding jobs in the Temporal Web UI', () => {
  test('a job is found by id and by each search attribute, JobStatus follows the job, and the summary names the job without its prompt', async () => {
    const t = await createTenant(tdb.db, 100);
    const c = api(gw.baseUrl, t.apiKey);
    // The longest prompt the API accepts: neither summary nor details may carry it.
    const prompt = `a lighthouse at night ${'with waves '.repeat(400)}`.slice(0, 4000);
    const created = await c.post('/v1/images/generate', imageBody(t, prompt));
    assert.equal(created.status, 200, created.text);
    const id = created.body.data.id as string;

    const desc = await gw.client.workflow.getHandle(id).describe();
    assert.equal(desc.workflowId, id, 'the workflow id is the job id');
    assert.equal(desc.type, 'imageGeneration');
    const summary = await desc.staticSummary();
    assert.ok(summary, 'the workflow has a static summary');
    assert.match(summary, /image/);
    assert.match(summary, /nano-banana-2/);
    // Summaries are not encoded by the payload codec: they name the job, never the customer's text.
    assert.equal(summary, `image · nano-banana-2 · ${created.body.data.provider}`);
    assert.ok(!summary.includes('lighthouse'), 'the summary carries no prompt');
    assert.ok(!summary.includes('\n'), 'summary is one line');
    const details = await desc.staticDetails();
    assert.ok(details?.includes(t.workspaceId));
    assert.ok(!details?.includes('lighthouse'), 'details carry no prompt');

    const job = await waitForJobStatus(c, `/v1/images/${id}`, ['completed', 'failed']);
    assert.equal(job.status, 'completed');

    const [byWorkspace] = await waitForListed(gw.client, `WorkspaceId='${t.workspaceId}'`, [id]);
    const sa = byWorkspace!.typedSearchAttributes;
    assert.deepEqual(
      {
        workspaceId: sa.get(searchAttributes.workspaceId),
        projectId: sa.get(searchAttributes.projectId),
        jobKind: sa.get(searchAttributes.jobKind),
        mediaModel: sa.get(searchAttributes.mediaModel),
      },
      { workspaceId: t.workspaceId, projectId: t.projectId, jobKind: 'image', mediaModel: 'nano-banana-2' },
    );
    await waitForListed(gw.client, `WorkflowId='${id}'`, [id]);
    await waitForListed(gw.client, `ProjectId='${t.projectId}'`, [id]);
    await waitForListed(gw.client, `WorkspaceId='${t.workspaceId}' AND JobKind='image'`, [id]);
    await waitForListed(gw.client, `WorkspaceId='${t.workspaceId}' AND JobKind='video'`, []);
    await waitForListed(gw.client, `WorkspaceId='${t.workspaceId}' AND MediaModel='nano-banana-2'`, [id]);
    await waitForListed(gw.client, `WorkspaceId='${t.workspaceId}' AND MediaModel='seedream-4.5'`, []);
    // JobStatus is kept current by the workflow: it ends as `completed`, not as the `pending` it started with.
    const [done] = await waitForListed(gw.client, `WorkspaceId='${t.workspaceId}' AND JobStatus='completed'`, [id]);
    assert.equal(done!.typedSearchAttributes.get(searchAttributes.jobStatus), 'completed');
    await waitForListed(gw.client, `WorkspaceId='${t.workspaceId}' AND JobStatus='pending'`, []);
  });

  test('a failed job is found with JobStatus=failed and its history tells why', async () => {
    const faulty = testConfig(tdb.url, { ...limits, LOCAL_RENDER_FAULTS: 'true', RECONCILE_INTERVAL_MS: '3600000' });
    const fgw = await startGateway(faulty, tdb.db);
    const fworkers = await startWorkers(faulty, tdb.db);
    try {
      const t = await createTenant(tdb.db, 100);
      const c = api(fgw.baseUrl, t.apiKey);
      const created = await c.post('/v1/images/generate', imageBody(t, 'broken [fail:terminal]'));
      const id = created.body.data.id as string;
      const job = await waitForJobStatus(c, `/v1/images/${id}`, ['completed', 'failed']);
      assert.equal(job.status, 'failed');
      await waitForListed(fgw.client, `WorkspaceId='${t.workspaceId}' AND JobStatus='failed'`, [id]);
      const handle = fgw.client.workflow.getHandle(id);
      assert.match(job.error.message, /injected terminal failure/);
      // The Web UI shows the failure chain of the workflow result: the workflow failure caused by the cause.
      await assert.rejects(handle.result(), (err: Error) => {
        assert.equal(err.name, 'WorkflowFailedError');
        assert.match(String((err.cause as Error | undefined)?.message), /injected terminal failure/);
        return true;
      });
      const desc = await handle.describe();
      assert.equal(desc.status.name, 'FAILED');
    } finally {
      await fworkers.stop();
      await fgw.close();
    }
  });
});

describe('resetting a failed job', () => {
  test('a job failed for an input that came back is reset to its first workflow task, completes, and is charged exactly once', async () => {
    const own = testConfig(tdb.url, { ...limits, RECONCILE_INTERVAL_MS: '3600000' });
    const ogw = await startGateway(own, tdb.db);
    let oworkers: Workers | undefined;
    try {
      const t = await createTenant(tdb.db, 1000);
      const c = api(ogw.baseUrl, t.apiKey);
      const startFrame = await insertUpload(tdb.db, ogw.storage, t, 'image');
      // No worker polls this suite's queues yet: the workflow waits while its input goes away.
      const created = await c.post('/v1/videos/generate', {
        project_id: t.projectId,
        prompt: 'a kite over the dunes',
        model: 'seedance-1.5',
        aspect_ratio: '9:16',
        duration: 4,
        resolution: '480p',
        start_frame_file_id: startFrame,
      });
      assert.equal(created.status, 200, created.text);
      const id = created.body.data.id as string;
      const price = 4 * 8;
      assert.equal(await creditsOf(tdb.db, t), 1000 - price);
      await tdb.db.updateTable('file_uploads').set({ status: 'failed' }).where('id', '=', startFrame).execute();

      oworkers = await startWorkers(own, tdb.db);
      const failed = await waitForJobStatus(c, `/v1/videos/${id}`, ['completed', 'failed']);
      assert.equal(failed.status, 'failed');
      assert.equal(failed.error.code, 'generation_failed');
      assert.match(failed.error.message, /no longer available/);
      assert.equal(await creditsOf(tdb.db, t), 1000, 'the failure refunded the job');

      // The operator fixes the cause and presses Reset (to the first workflow task) in the Web UI.
      await tdb.db.updateTable('file_uploads').set({ status: 'completed' }).where('id', '=', startFrame).execute();
      const handle = ogw.client.workflow.getHandle(id);
      // The row says failed from the local step inside the workflow's last task; the UI shows the
      // workflow Failed once that task has completed.
      const { runId } = await waitFor('the workflow to close as failed', async () => {
        const d = await handle.describe();
        return d.status.name === 'FAILED' ? d : undefined;
      });
      const history = await handle.fetchHistory();
      const firstTaskCompleted = history.events?.find((e) => e.workflowTaskCompletedEventAttributes);
      assert.ok(firstTaskCompleted?.eventId, 'the history has a completed workflow task');
      const reset = await ogw.client.workflowService.resetWorkflowExecution({
        namespace: own.TEMPORAL_NAMESPACE,
        workflowExecution: { workflowId: id, runId },
        workflowTaskFinishEventId: firstTaskCompleted.eventId,
        requestId: randomUUID(),
        reason: 'operator: start frame restored',
      });
      assert.ok(reset.runId && reset.runId !== runId, 'the reset started a new run');

      await waitFor('the reset job to be generating again', async () => {
        const r = await c.get(`/v1/videos/${id}`);
        return ['generating', 'completed'].includes(r.body.data.status) ? true : undefined;
      });
      const job = await waitForJobStatus(c, `/v1/videos/${id}`, ['completed', 'failed']);
      assert.equal(job.status, 'completed', JSON.stringify(job.error));
      assert.equal(job.error, null);
      const url = await c.get(`/v1/videos/${id}/url`);
      assert.equal(url.status, 200);
      const media = await probeUrl(url.body.data.url);
      assert.equal(media.videoCodec, 'h264');

      const ledger = await ledgerForJob(tdb.db, id);
      assert.deepEqual(
        ledger.map((l) => [l.reason, l.delta]),
        [
          ['charge', -price],
          ['refund', price],
          ['recharge', -price],
        ],
      );
      assert.equal(await creditsOf(tdb.db, t), 1000 - price, 'charged exactly once in total');
      const result = await ogw.client.workflow.getHandle(id, reset.runId).result();
      assert.deepEqual(result, { outputs: 1 });
      await waitForListed(ogw.client, `WorkspaceId='${t.workspaceId}' AND JobStatus='completed'`, [id]);
    } finally {
      await oworkers?.stop();
      await ogw.close();
    }
  });
});

describe('canceling and terminating from the Temporal client', () => {
  let slow: Config;
  let sgw: Gateway;
  let sworkers: Workers;

  before(async () => {
    slow = testConfig(tdb.url, { ...limits, LOCAL_RENDER_LATENCY_MS: '120000', RECONCILE_INTERVAL_MS: '3600000' });
    sgw = await startGateway(slow, tdb.db);
    sworkers = await startWorkers(slow, tdb.db);
  });

  after(async () => {
    await sworkers?.stop();
    await sgw?.close();
  });

  /** A job that is `generating` at the provider (polling with durable timers). */
  async function generatingJob(t: Tenant, prompt: string): Promise<string> {
    const c = api(sgw.baseUrl, t.apiKey);
    const created = await c.post('/v1/images/generate', imageBody(t, prompt));
    assert.equal(created.status, 200, created.text);
    const id = created.body.data.id as string;
    await waitFor(`${id} to be generating at the provider`, async () => {
      const r = await c.get(`/v1/images/${id}`);
      return r.body.data.status === 'generating' && r.body.data.progress?.phase === 'generating' ? true : undefined;
    });
    return id;
  }

  test('cancel from the client (the UI Cancel button) fails the job with code canceled and refunds it', async () => {
    const t = await createTenant(tdb.db, 100);
    const c = api(sgw.baseUrl, t.apiKey);
    const id = await generatingJob(t, 'canceled by an operator');
    assert.equal(await creditsOf(tdb.db, t), 96);
    const handle = sgw.client.workflow.getHandle(id);
    await handle.cancel();
    const job = await waitForJobStatus(c, `/v1/images/${id}`, ['failed', 'completed']);
    assert.equal(job.status, 'failed');
    assert.equal(job.error.code, 'canceled');
    assert.equal(await creditsOf(tdb.db, t), 100);
    assert.deepEqual(
      (await ledgerForJob(tdb.db, id)).map((l) => l.reason),
      ['charge', 'refund'],
    );
    await waitFor('the workflow to close as canceled', async () => ((await handle.describe()).status.name === 'CANCELLED' ? true : undefined));
    await waitForListed(sgw.client, `WorkspaceId='${t.workspaceId}' AND JobStatus='failed'`, [id]);
    const again = await c.post(`/v1/images/${id}/cancel`);
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, 'not_cancelable');
  });

  test('terminate (which skips workflow code) is settled by the reconciler: failed, canceled, refunded once', async () => {
    const t = await createTenant(tdb.db, 100);
    const c = api(sgw.baseUrl, t.apiKey);
    const id = await generatingJob(t, 'terminated by an operator');
    const handle = sgw.client.workflow.getHandle(id);
    await handle.terminate('operator: stuck job');
    assert.equal((await handle.describe()).status.name, 'TERMINATED');
    // No workflow code ran: the row still says generating and the charge stands.
    assert.equal((await c.get(`/v1/images/${id}`)).body.data.status, 'generating');
    assert.equal(await creditsOf(tdb.db, t), 96);

    const reconciler = sworkers.fleet.reconciler!;
    await waitFor('the reconciler to settle the terminated job', async () => {
      await reconciler.runOnce();
      const row = await tdb.db.selectFrom('jobs').select('status').where('id', '=', id).executeTakeFirstOrThrow();
      return row.status === 'failed' ? true : undefined;
    });
    const job = (await c.get(`/v1/images/${id}`)).body.data;
    assert.equal(job.status, 'failed');
    assert.equal(job.error.code, 'canceled');
    assert.match(job.error.message, /terminated/);
    assert.equal(await creditsOf(tdb.db, t), 100);
    // Further passes change nothing.
    await reconciler.runOnce();
    await reconciler.runOnce();
    assert.deepEqual(
      (await ledgerForJob(tdb.db, id)).map((l) => l.reason),
      ['charge', 'refund'],
    );
    assert.equal(await creditsOf(tdb.db, t), 100);
  });
  test('cancelling a terminated job through the API settles it at once, refunded once', async () => {
    const t = await createTenant(tdb.db, 100);
    const c = api(sgw.baseUrl, t.apiKey);
    const id = await generatingJob(t, 'terminated, then canceled by its owner');
    await sgw.client.workflow.getHandle(id).terminate('operator: stuck job');
    const canceled = await c.post(`/v1/images/${id}/cancel`);
    assert.equal(canceled.status, 200, canceled.text);
    assert.equal(canceled.body.data.status, 'failed');
    assert.equal(canceled.body.data.error.code, 'canceled');
    assert.equal(await creditsOf(tdb.db, t), 100);
    await sworkers.fleet.reconciler!.runOnce();
    assert.deepEqual(
      (await ledgerForJob(tdb.db, id)).map((l) => l.reason),
      ['charge', 'refund'],
    );
  });
});
