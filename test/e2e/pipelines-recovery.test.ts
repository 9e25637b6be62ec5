// Pipelines when things go wrong mid-way, on the real stack with every step on the local fal queue
// (image → video from that image → replace actor over that video):
// - a cancel during step 2: step 2's request is canceled at fal and its job refunded (fal confirms,
//   so in full), step 3 never gets a job nor a charge, and the pipeline ends failed, canceled;
// - kill -9 of the worker process that runs the parent workflow, its activities and the fal calls,
//   while step 2's request is at fal: a new worker takes over and the pipeline completes, each step
//   submitted to fal once and charged once.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, waitFor, type Tenant } from '../support/stack.js';
import { api, creditsOf, startWorkers } from '../support/services.js';
import { falRequestsWith, spawnWorkerProcess, startFailoverStack, type FailoverStack, type WorkerProcess } from '../support/failover-stack.js';
import { jobRow } from '../support/job-helpers.js';
import { Holds } from '../support/holds.js';
import type { FakeFal } from '../support/fake-providers/fal.js';
import { imageStep, videoStep } from '../support/pipeline-steps.js';

let stack: FailoverStack;

before(async () => {
  // No in-process workers: each test brings its own (in-process with holds, or worker processes).
  stack = await startFailoverStack({ roles: '' });
});

after(async () => {
  await stack?.close();
});

const steps = (marker: string) => [
  imageStep(`a lighthouse ${marker}`),
  videoStep(`a slow pan ${marker}`),
  {
    id: 'over',
    kind: 'replace_actor',
    body: {
      prompt: `dance ${marker}`,
      duration: 3,
      aspect_ratio: '16:9',
      image_file_id: { from: 'still', output: 0 },
      video_file_id: { from: 'clip', output: 0 },
    },
  },
];

async function create(t: Tenant, marker: string): Promise<any> {
  const r = await api(stack.gw.baseUrl, t.apiKey).post('/v1/pipelines', { project_id: t.projectId, steps: steps(marker) });
  assert.equal(r.status, 200, r.text);
  return r.body.data;
}

async function pipeline(t: Tenant, id: string): Promise<any> {
  const r = await api(stack.gw.baseUrl, t.apiKey).get(`/v1/pipelines/${id}`);
  assert.equal(r.status, 200, r.text);
  return r.body.data;
}

const ended = (t: Tenant, id: string, timeoutMs = 120_000) =>
  waitFor(
    `pipeline ${id} to end`,
    async () => {
      const p = await pipeline(t, id);
      return p.status === 'completed' || p.status === 'failed' ? p : undefined;
    },
    timeoutMs,
    200,
  );

/** The job id of a step's first attempt (shared/pipelines.ts stepJobId). */
const stepJob = (prefix: string, pipelineId: string, position: number) => `${prefix}_${pipelineId.replace(/^pl_/, '')}-s${position}-a0`;

describe('a cancel during step 2', () => {
  let defaultFlow: FakeFal['flow'];
  before(() => {
    defaultFlow = stack.fal.flow;
  });
  test('step 2 is canceled at fal and refunded, step 3 is never charged', async () => {
    const holds = new Holds();
    const workers = await startWorkers(stack.config, stack.tdb.db, 'workflows,io,fetch,provider:fal', { activityInterceptors: [holds.activityInterceptor] });
    try {
      const t = await createTenant(stack.tdb.db, 1000);
      const before = await creditsOf(stack.tdb.db, t);
      const submitsBefore = stack.fal.requestsOf('submit').length;
      const marker = `[cancel-${t.workspaceId}]`;
      const created = await create(t, marker);
      const clipJob = stepJob('vid', created.id, 1);
      // Step 2's request stays queued at fal: its status checks are held until the cancel is done.
      const held = holds.activity('awaitProvider', 'before', clipJob);
      await held.reached;
      assert.ok((await jobRow(stack.tdb.db, clipJob)).provider_ref, "step 2's request is at fal");
      // And fal keeps it queued (step 1 is done): a cancel is confirmed only for a request fal reports
      // queued, which the status checks released after the cancel must not walk into running.
      stack.fal.flow = [...Array<'IN_QUEUE'>(2000).fill('IN_QUEUE'), 'COMPLETED'];
      const stillPrice = (await pipeline(t, created.id)).steps[0].price;

      const r = await api(stack.gw.baseUrl, t.apiKey).post(`/v1/pipelines/${created.id}/cancel`, {});
      assert.equal(r.status, 200, r.text);
      held.release();
      const done = await ended(t, created.id);
      assert.equal(done.status, 'failed');
      assert.equal(done.error.code, 'canceled');
      const [still, clip, over] = done.steps;
      assert.equal(still.status, 'completed');
      assert.equal(clip.status, 'failed');
      assert.equal(clip.error.code, 'canceled');
      assert.equal(over.status, 'skipped');
      assert.deepEqual(over.jobs, [], 'step 3 never got a job');
      assert.equal(over.charged, 0);
      await waitFor(
        'fal to be asked to cancel step 2',
        () => (falRequestsWith(stack.fal, 'cancel', `a slow pan ${marker}`) === 1 ? true : undefined),
        60_000,
        100,
      );
      // fal confirms the cancel of a queued request: step 2 is refunded in full, step 1 stays paid.
      await waitFor('step 2 to be refunded', async () => ((await creditsOf(stack.tdb.db, t)) === before - stillPrice ? true : undefined), 60_000, 100);
      assert.equal(stack.fal.requestsOf('submit').length, submitsBefore + 2, 'steps 1 and 2 reached fal, step 3 never did');
      const again = await api(stack.gw.baseUrl, t.apiKey).post(`/v1/pipelines/${created.id}/cancel`, {});
      assert.equal(again.status, 409);
      assert.equal(again.body.error.code, 'not_cancelable');
      const resume = await api(stack.gw.baseUrl, t.apiKey).post(`/v1/pipelines/${created.id}/resume`, {});
      assert.equal(resume.status, 409, 'a canceled pipeline is not resumed');
    } finally {
      stack.fal.flow = defaultFlow;
      await workers.stop();
    }
  });
});

describe('kill -9 of the worker during step 2', () => {
  test('a new worker takes over: the pipeline completes, each step submitted once and charged once', { timeout: 240_000 }, async () => {
    const t = await createTenant(stack.tdb.db, 1000);
    const before = await creditsOf(stack.tdb.db, t);
    const marker = `[kill-${t.workspaceId}]`;
    const submitsBefore = stack.fal.requestsOf('submit').length;
    // fal moves a request on only when asked its status: killed right after the submit, the worker
    // leaves step 2's request queued there until the next worker asks.
    let first: WorkerProcess | undefined;
    let second: WorkerProcess | undefined;
    try {
      first = await spawnWorkerProcess(stack, 'workflows,io,fetch,provider:fal');
      const created = await create(t, marker);
      const clipJob = stepJob('vid', created.id, 1);
      await waitFor(
        'step 2 to be at fal',
        async () => ((await jobRow(stack.tdb.db, clipJob).catch(() => undefined))?.provider_ref ? true : undefined),
        120_000,
        50,
      );
      first.child.kill('SIGKILL');
      await first.exited;
      second = await spawnWorkerProcess(stack, 'workflows,io,fetch,provider:fal');
      const done = await ended(t, created.id, 180_000);
      assert.equal(done.status, 'completed', JSON.stringify(done.error));
      // Steps 1 and 2 by their prompts; step 3's request carries none at fal, so by the count of every submit.
      assert.equal(falRequestsWith(stack.fal, 'submit', `a lighthouse ${marker}`), 1, 'step 1 submitted once');
      assert.equal(falRequestsWith(stack.fal, 'submit', `a slow pan ${marker}`), 1, 'step 2 submitted once');
      assert.equal(stack.fal.requestsOf('submit').length, submitsBefore + 3, 'step 3 submitted once');
      for (const s of done.steps) {
        assert.equal((await jobRow(stack.tdb.db, s.job_id)).params.provider, 'fal');
        assert.equal(s.jobs.length, 1);
        assert.equal(s.charged, s.price);
        assert.equal(s.refunded, 0);
        assert.equal(s.outputs.length, 1);
      }
      assert.equal(before - (await creditsOf(stack.tdb.db, t)), done.price, 'charged the sum of the steps, once');
    } finally {
      for (const p of [first, second]) if (p && p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
      await Promise.all([first?.exited, second?.exited]);
    }
  });
});
