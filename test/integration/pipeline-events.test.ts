// A pipeline's event stream on the real Postgres with the gateway over HTTP, the pipeline and its
// step's job moved by the repository functions the activities use (no workers): twenty streams of
// one pipeline cost about one read per change, however many streams; a step's job's progress reaches them
// through the job's own notification (no pipeline row write), a step's row change through the
// pipeline trigger, each with a larger id. The time from each write's commit to its event on every
// stream is measured and bounded.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { createTenant, createTestDatabase, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { call, startInProcessGateway, type Gateway } from './gateway-harness.js';
import { openEventStream, type SseStream } from '../support/sse.js';
import type { App } from '../../api/app.js';
import { newId } from '../../shared/ids.js';
import { stepJobId } from '../../shared/pipelines.js';
import * as jobsRepo from '../../db/repos/jobs.js';
import * as pipelinesRepo from '../../db/repos/pipelines.js';
import * as progressRepo from '../../db/repos/job-progress.js';

let tdb: TestDatabase;
let gw: Gateway & { app: App };

before(async () => {
  tdb = await createTestDatabase();
  gw = await startInProcessGateway(tdb.db, tdb.url, { RATE_LIMIT_POLL_PER_MIN: '100000', SSE_HEARTBEAT_MS: '60000' });
});

after(async () => {
  await gw?.close();
  await tdb?.drop();
});

async function insertPipeline(owner: Tenant): Promise<string> {
  const id = newId('pl');
  const step = (stepId: string) => ({
    stepId,
    kind: 'image' as const,
    model: 'nano-banana-2',
    body: { prompt: 'streamed', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 },
    params: { prompt: 'streamed', aspect_ratio: '1:1', count: 1 },
    refs: [],
    priority: 'normal' as const,
    deadlineSeconds: null,
    price: 4,
  });
  await tdb.db.transaction().execute((tx) =>
    pipelinesRepo.insertPipeline(tx, {
      id,
      workspaceId: owner.workspaceId,
      projectId: owner.projectId,
      apiKeyId: owner.apiKeyId,
      price: 8,
      webhookUrl: null,
      webhookEvents: null,
      steps: [step('one'), step('two')],
    }),
  );
  return id;
}

const ms = () => performance.timeOrigin + performance.now();

test('twenty streams of one pipeline: one read per change, a step job’s progress and a step’s row change each reach every stream with a larger id', async () => {
  const owner = await createTenant(tdb.db, 100);
  const id = await insertPipeline(owner);
  await waitFor('the new key to be known', async () => (await call(gw.baseUrl, 'GET', '/v1/no-such-route', { key: owner.apiKey })).status === 404);
  const streams: SseStream[] = [];
  for (let i = 0; i < 20; i++) {
    const s = await openEventStream(gw.baseUrl, `/v1/pipelines/${id}/events`, { authorization: `Bearer ${owner.apiKey}` });
    assert.equal(s.status, 200, s.body);
    streams.push(s);
  }
  await Promise.all(streams.map((s) => s.waitForEvents(1)));
  const hub = gw.app.jobEvents;
  assert.equal(hub.pipelines.watchers(), 20);
  await waitFor('the listener', () => hub.listening());
  const reads = hub.pipelines.reads();
  const delays: number[] = [];
  const arrived = async (n: number, since: number) => {
    const got = await Promise.all(streams.map((s) => s.waitForEvents(n)));
    for (const events of got) delays.push(events[n - 1]!.receivedAt - since);
    return got[0]!.map((e) => ({ id: Number(e.id), record: JSON.parse(e.data) }));
  };

  // The step starts: its job is created and the step row names it (as pipelineStartStep does).
  const jobId = stepJobId('image', id, 0, 0);
  let t0 = ms();
  await tdb.db.transaction().execute(async (tx) => {
    await pipelinesRepo.lockPipeline(tx, id);
    await jobsRepo.insertJobWithCharge(tx, {
      id: jobId,
      kind: 'image',
      workspaceId: owner.workspaceId,
      projectId: owner.projectId,
      apiKeyId: owner.apiKeyId,
      model: 'nano-banana-2',
      params: { prompt: 'streamed', aspect_ratio: '1:1', count: 1, provider: 'local' },
      price: 4,
    });
    await pipelinesRepo.updateStep(tx, id, 0, { status: 'pending', jobId, addJob: jobId });
  });
  let events = await arrived(2, t0);
  assert.equal(events[1]!.record.steps[0].job_id, jobId);

  // The step's job moves: only the jobs row is written, the pipeline's streams hear it.
  t0 = ms();
  await progressRepo.setJobPhase(tdb.db, jobId, 'generating', 1);
  events = await arrived(3, t0);
  assert.deepEqual(events[2]!.record.steps[0].progress, { phase: 'generating', percent: null });

  t0 = ms();
  await progressRepo.recordPollProgress(tdb.db, jobId, { percent: 40, queuePosition: null, attempt: 1 }, 0);
  events = await arrived(4, t0);
  assert.equal(events[3]!.record.steps[0].progress.percent, 40);

  // A step's row alone (no pipeline update of its own): the trigger moves the pipeline's counter.
  t0 = ms();
  await pipelinesRepo.markWaitingSteps(tdb.db, id, 1, 'skipped');
  events = await arrived(5, t0);
  assert.equal(events[4]!.record.steps[1].status, 'skipped');

  const ids = events.map((e) => e.id);
  assert.ok(
    ids.every((n, i) => i === 0 || n > ids[i - 1]!),
    `ids grow: ${ids.join(', ')}`,
  );
  for (const s of streams)
    assert.deepEqual(
      s.events.map((e) => e.id),
      streams[0]!.events.map((e) => e.id),
      'every stream got the same events',
    );
  // Four changes; the step's start notifies twice in one commit (its job's insert and the pipeline's
  // counter), which may cost one more read: never one per stream.
  const spent = hub.pipelines.reads() - reads;
  assert.ok(spent >= 4 && spent <= 5, `${spent} reads for four changes on twenty streams`);
  delays.sort((a, b) => a - b);
  const p50 = delays[Math.floor(delays.length / 2)]!;
  const max = delays.at(-1)!;
  console.log(`pipeline events: write → event on 20 streams, p50 ${p50.toFixed(1)} ms, max ${max.toFixed(1)} ms over ${delays.length} deliveries`);
  assert.ok(max < 2_000, `every event within 2 s of its write (max ${max.toFixed(0)} ms)`);
  for (const s of streams) s.close();
  await waitFor('the streams to be let go', () => hub.pipelines.watchers() === 0);
});
