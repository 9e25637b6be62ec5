// What customers and operators see of the queues, on real Postgres through a gateway over HTTP:
// a waiting job's `queue_position` in its workspace's share of its provider's queue, GET /v1/queue
// (waiting jobs, recent waits, estimated wait per model and priority, cached per replica), and the
// per-workspace queue gauges with the starvation alert evaluated on their scrape. Job rows are
// written directly (no workflow runs): the gateway's Temporal client points nowhere.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import { pino } from 'pino';
import { sql } from 'kysely';
import { Registry } from 'prom-client';
import { createTestDatabase, createTenant, insertImageJob, testConfig, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import * as jobsRepo from '../../db/repos/jobs.js';
import * as jobMoves from '../../jobs/index.js';
import { jobsAheadQuery, workspaceQueues } from '../../db/repos/queue.js';
import type { JobPriority } from '../../shared/job-model.js';
import { createApp } from '../../api/app.js';
import { createStorage } from '../../shared/storage.js';
import { QUEUE_CACHE_MS, queueEntries, RECENT_WAIT_SECONDS } from '../../api/routes/queue.js';
import { boundWorkspaces, OTHER_WORKSPACES, RECENT_WINDOW_SECONDS, registerQueueMetrics, TOP_WORKSPACES } from '../../worker/queue-metrics.js';
import { alertRule, evaluateAlert, samplesOf } from '../support/ops.js';
import { call } from './gateway-harness.js';
import { bulkInsertJobs } from '../support/job-rows.js';

let tdb: TestDatabase;
let server: Server;
let base: string;
let app: ReturnType<typeof createApp>;
let temporal: Client;

before(async () => {
  tdb = await createTestDatabase();
  const config = testConfig(tdb.url, { HOST: '127.0.0.1', PROVIDERS_MODE: 'local' });
  temporal = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1', connectTimeout: 100 }), namespace: 'default' });
  app = createApp({ config, db: tdb.db, storage: createStorage(config), temporal, logger: pino({ level: 'silent' }) });
  server = createServer(app.app).listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  server?.closeAllConnections();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  await app?.close();
  await temporal?.connection.close();
  await tdb?.drop();
});

/** A waiting image job of `t` on `provider` at `priority`. */
async function waiting(t: Tenant, priority: JobPriority = 'normal', provider: 'local' | 'fal' = 'local'): Promise<string> {
  const job = await insertImageJob(tdb.db, t, { route: { provider, ...(provider === 'fal' ? { provider_model_id: 'fal-ai/nano-banana' } : {}) } });
  if (priority !== 'normal') await tdb.db.updateTable('jobs').set({ priority }).where('id', '=', job.id).execute();
  return job.id;
}

/** The job's request reached its provider (the submit step's write), `run-1` holding it. */
async function submit(id: string): Promise<void> {
  await jobsRepo.markWorkflowStarted(tdb.db, id);
  await tdb.db.transaction().execute((tx) => jobMoves.claimJob(tx, id, 'run-1'));
  assert.equal(await jobsRepo.recordProviderRef(tdb.db, id, 'run-1', { provider: 'local', id: `r-${id}` }, { phase: 'generating', attempt: 1 }), true);
}

/** A finished job of `t` created `waitedSeconds + agoSeconds` ago and submitted `agoSeconds` ago. */
async function finished(t: Tenant, priority: JobPriority, waitedSeconds: number, agoSeconds = 60): Promise<void> {
  const id = await waiting(t, priority);
  await sql`update jobs set status = 'completed', finished_at = now(),
              created_at = now() - make_interval(secs => ${waitedSeconds + agoSeconds}), submitted_at = now() - make_interval(secs => ${agoSeconds})
            where id = ${id}`.execute(tdb.db);
}

const positionOf = async (t: Tenant, id: string) => {
  const res = await call(base, 'GET', `/v1/images/${id}`, { key: t.apiKey });
  assert.equal(res.status, 200, res.text);
  return res.body.data.progress?.queue_position as number | null | undefined;
};

describe('queue position and GET /v1/queue', () => {
  let a: Tenant;
  let b: Tenant;
  const ids: Record<string, string> = {};

  before(async () => {
    a = await createTenant(tdb.db, 1000);
    b = await createTenant(tdb.db, 1000);
    ids.a1 = await waiting(a);
    ids.a2 = await waiting(a);
    ids.a3 = await waiting(a, 'low');
    ids.a4 = await waiting(a, 'high');
    ids.b1 = await waiting(b);
    ids.aFal = await waiting(a, 'normal', 'fal');
    // Recent waits of low jobs: 10, 20 and 30 seconds, submitted a minute ago; one outside the window.
    for (const w of [10, 20, 30]) await finished(b, 'low', w);
    await finished(b, 'low', 500, RECENT_WAIT_SECONDS + 60);
  });

  test("a waiting job's position counts its workspace's waiting jobs ahead of it on the same provider: higher priorities, then its own in creation order", async () => {
    assert.equal(await positionOf(a, ids.a4!), 1, 'high: nothing above it');
    assert.equal(await positionOf(a, ids.a1!), 2, 'normal: the high job goes first, though created later');
    assert.equal(await positionOf(a, ids.a2!), 3);
    assert.equal(await positionOf(a, ids.a3!), 4, 'low: behind every normal and high job');
    assert.equal(await positionOf(b, ids.b1!), 1, "another workspace's jobs are not ahead in its share");
    assert.equal(await positionOf(a, ids.aFal!), 1, "another provider's queue is another queue");

    await submit(ids.a1!);
    const submitted = await call(base, 'GET', `/v1/images/${ids.a1}`, { key: a.apiKey });
    assert.equal(submitted.body.data.status, 'generating');
    assert.equal(submitted.body.data.progress.queue_position, null, 'submitted: only the provider reports a position');
    assert.equal(await positionOf(a, ids.a2!), 2, 'a submitted job no longer counts');
    assert.equal(await positionOf(a, ids.a3!), 3);
  });

  test('GET /v1/queue: waiting jobs (the workspace and everyone), recent waits and the estimate per model and priority', async () => {
    const res = await call(base, 'GET', '/v1/queue', { key: a.apiKey });
    assert.equal(res.status, 200, res.text);
    const entry = (priority: JobPriority, body = res.body) => body.data.find((e: any) => e.model === 'nano-banana-2' && e.priority === priority);
    // Every public model has its three priorities.
    assert.equal(res.body.data.length % 3, 0);
    assert.ok(res.body.data.some((e: any) => e.model === 'sora-2'));

    // a: a2 normal (a1 submitted), a3 low, a4 high and a fal job (fal is not the model's queue here); b: b1 normal.
    const normal = entry('normal');
    assert.equal(normal.provider, 'local');
    assert.deepEqual(normal.waiting, { workspace: 2, total: 3 }, 'the fal job counts with the model too');
    assert.deepEqual(entry('high').waiting, { workspace: 1, total: 1 });
    assert.deepEqual(entry('low').waiting, { workspace: 1, total: 1 });

    // The low waits of the window: 10, 20, 30 (percentile_cont: p90 = 20 + 0.8 × 10); the old one is outside it.
    assert.deepEqual(entry('low').recent_wait, { jobs: 3, p50_seconds: 20, p90_seconds: 28 });
    assert.equal(entry('normal').recent_wait.jobs, 1, "a1's submit");
    assert.ok(entry('normal').recent_wait.p50_seconds < 5);
    assert.equal(entry('high').recent_wait, null);

    // Estimate: 4 submits on the local queue in the window. A new normal job of a waits behind a's
    // high and normal jobs on it (a4, a2) and b's one normal job (b1): 3 jobs at 4 per 15 minutes.
    const rate = 4 / RECENT_WAIT_SECONDS;
    assert.equal(entry('normal').estimated_wait_seconds, Math.round((3 / rate) * 10) / 10);
    // A new high job waits behind a4 only.
    assert.equal(entry('high').estimated_wait_seconds, Math.round((1 / rate) * 10) / 10);

    // b sees its own share: its normal job, and nothing ahead of a new high job but a's high one (up to its own + 1).
    const forB = await call(base, 'GET', '/v1/queue?model=nano-banana-2', { key: b.apiKey });
    assert.equal(forB.status, 200, forB.text);
    assert.equal(forB.body.data.length, 3, 'one model, three priorities');
    assert.deepEqual(entry('normal', forB.body).waiting, { workspace: 1, total: 3 });
    assert.equal(entry('high', forB.body).estimated_wait_seconds, Math.round((1 / rate) * 10) / 10);
  });

  test("the estimate gives each other waiting workspace its weight's share of the turns ahead", () => {
    const w = (workspaceId: string, priority: JobPriority, waiting: number, weight: number) => ({
      workspaceId,
      provider: 'local',
      model: 'nano-banana-2',
      priority,
      waiting,
      oldestSeconds: 1,
      weight,
    });
    // 90 submits on the local queue in the window: 0.1 a second.
    const snap = {
      waiting: [w('me', 'normal', 2, 1), w('heavy', 'normal', 50, 3), w('light', 'normal', 50, 0.5), w('batch', 'low', 50, 1)],
      recent: [{ provider: 'local', model: 'nano-banana-2', priority: 'normal' as const, submitted: 90, p50Seconds: 1, p90Seconds: 2 }],
    };
    const config = testConfig(tdb.url, { PROVIDERS_MODE: 'local' });
    const est = (weight: number, priority: JobPriority) =>
      queueEntries(config, snap, { workspaceId: 'me', weight }, 'nano-banana-2').find((e) => e.priority === priority)!.estimated_wait_seconds;
    // My 2 jobs go first in my turns; in the 3 turns of mine until the new job, heavy (3×) gets 9 and light (½×) 2 (rounded up); low jobs are not ahead: 13 jobs.
    assert.equal(est(1, 'normal'), 130);
    // A workspace of weight 3 waits behind fewer of theirs: heavy 3, light 1 (6 jobs).
    assert.equal(est(3, 'normal'), 60);
    // A low job waits behind every normal one (102), then takes turns with batch's low ones: 1 of them (103 jobs).
    assert.equal(est(1, 'low'), 1030);
    // Nothing of a higher or the same priority waits: no wait.
    assert.equal(est(1, 'high'), 0);
  });

  test('GET /v1/queue refuses an unknown model and an unauthenticated call', async () => {
    const bad = await call(base, 'GET', '/v1/queue?model=no-such-model', { key: a.apiKey });
    assert.equal(bad.status, 400, bad.text);
    assert.equal(bad.body.error.code, 'invalid_request');
    assert.match(bad.body.error.message, /model/);
    const anon = await call(base, 'GET', '/v1/queue');
    assert.equal(anon.status, 401, anon.text);
    assert.equal(anon.body.error.code, 'unauthorized');
  });

  test('GET /v1/queue reads the queues at most once per cache period per replica', async () => {
    const total = async () =>
      (await call(base, 'GET', '/v1/queue?model=nano-banana-2', { key: a.apiKey })).body.data.find((e: any) => e.priority === 'normal').waiting.total as number;
    const before = await total();
    const started = Date.now();
    await waiting(b);
    // Within the cache period the answer is the cached one; after it, the new job shows.
    const cached = await total();
    if (Date.now() - started < QUEUE_CACHE_MS - 500) assert.equal(cached, before, 'served from the cache');
    await waitFor('the new job in the answer', async () => (await total()) === before + 1, QUEUE_CACHE_MS + 5_000, 200);
    assert.ok(Date.now() - started >= QUEUE_CACHE_MS - 1_000, 'not before the cache period ended');
  });
});

describe('per-workspace queue gauges and the starvation alert', () => {
  test('queued, running, oldest queued and recent waits per workspace; MediagenWorkspaceStarved fires for the workspace nothing of which started while others did', async () => {
    const starved = await createTenant(tdb.db, 1000);
    const busy = await createTenant(tdb.db, 1000);
    const old = await waiting(starved);
    await waiting(starved);
    await sql`update jobs set created_at = now() - interval '20 minutes' where id = ${old}`.execute(tdb.db);
    const running = await waiting(busy);
    await submit(running);
    await finished(busy, 'normal', 40);
    await finished(busy, 'normal', 60);

    const registry = new Registry();
    registerQueueMetrics(registry, () => workspaceQueues(tdb.db, RECENT_WINDOW_SECONDS));
    const text = await registry.metrics();
    const of = (name: string, ws: string, extra: Record<string, string> = {}) =>
      samplesOf(text, name).find((s) => s.labels.workspace_id === ws && Object.entries(extra).every(([k, v]) => s.labels[k] === v))?.value;

    assert.equal(of('mediagen_workspace_jobs_queued', starved.workspaceId), 2);
    assert.equal(of('mediagen_workspace_jobs_running', starved.workspaceId), 0);
    const age = of('mediagen_workspace_queue_oldest_seconds', starved.workspaceId)!;
    assert.ok(age >= 20 * 60 && age < 21 * 60, `oldest queued ${age}s`);
    assert.equal(of('mediagen_workspace_jobs_submitted_recent', starved.workspaceId), 0);
    assert.equal(of('mediagen_workspace_queue_wait_seconds', starved.workspaceId, { quantile: '0.5' }), undefined, 'no wait without a submit');

    assert.equal(of('mediagen_workspace_jobs_queued', busy.workspaceId), 0);
    assert.equal(of('mediagen_workspace_jobs_running', busy.workspaceId), 1);
    assert.equal(of('mediagen_workspace_jobs_submitted_recent', busy.workspaceId), 3);
    // Waits 40, 60 and about 0 (the job just submitted): median 40, p90 = 40 + 0.8 × 20.
    assert.equal(Math.round(of('mediagen_workspace_queue_wait_seconds', busy.workspaceId, { quantile: '0.5' })!), 40);
    assert.equal(Math.round(of('mediagen_workspace_queue_wait_seconds', busy.workspaceId, { quantile: '0.9' })!), 56);

    const rule = alertRule('MediagenWorkspaceStarved');
    const firing = evaluateAlert(rule.expr, text).map((s) => s.labels.workspace_id);
    assert.deepEqual(firing, [starved.workspaceId], 'only the starved workspace');

    // Once one of its jobs reaches its provider, it is not starved (however old its other job).
    await submit(old);
    const after = await registry.metrics();
    assert.deepEqual(evaluateAlert(rule.expr, after), []);
  });

  test('labels are bounded: the top workspaces by queued jobs and by oldest queued job, the rest as "other"', () => {
    const rows = Array.from({ length: 50 }, (_, i) => ({
      workspaceId: `ws_${String(i).padStart(2, '0')}`,
      queued: i < 40 ? 100 - i : 0,
      running: 1,
      // The last queued ones waited longest: the starved kind, with few jobs.
      oldestQueuedSeconds: i < 40 ? i * 10 : 0,
      submittedRecently: 1,
      waitP50Seconds: i,
      waitP90Seconds: 2 * i,
    }));
    const out = boundWorkspaces(rows);
    const names = out.map((r) => r.workspaceId);
    assert.ok(out.length <= 2 * TOP_WORKSPACES + 1, `${out.length} series`);
    for (let i = 0; i < TOP_WORKSPACES; i++) assert.ok(names.includes(`ws_${String(i).padStart(2, '0')}`), `top by queued ${i}`);
    for (let i = 30; i < 40; i++) assert.ok(names.includes(`ws_${i}`), `top by oldest ${i}`);
    const other = out.find((r) => r.workspaceId === OTHER_WORKSPACES)!;
    const folded = rows.filter((r) => !names.includes(r.workspaceId));
    assert.equal(
      other.queued,
      folded.reduce((s, r) => s + r.queued, 0),
    );
    assert.equal(other.running, folded.length);
    assert.equal(other.oldestQueuedSeconds, Math.max(...folded.map((r) => r.oldestQueuedSeconds)));
    // Sums are kept: every queued job is counted once.
    assert.equal(
      out.reduce((s, r) => s + r.queued, 0),
      rows.reduce((s, r) => s + r.queued, 0),
    );
    // Few workspaces: all named, no "other".
    assert.deepEqual(
      boundWorkspaces(rows.slice(0, 3)).map((r) => r.workspaceId),
      ['ws_00', 'ws_01', 'ws_02'],
    );
  });
});

// Last: its bulk rows (old pending jobs) would count in the figures above.
describe('the position read at scale', () => {
  test("is one range of the waiting-jobs index, whatever the workspace's history", async () => {
    const c = await createTenant(tdb.db, 1000);
    // 20,000 jobs of the workspace's history (a quarter of them pending on no provider), then three waiting on the local queue.
    await bulkInsertJobs(tdb.db, c, 20_000, 'qv');
    const mine = [await waiting(c), await waiting(c), await waiting(c)];
    await sql`analyze jobs`.execute(tdb.db);
    const job = (await jobsRepo.getJob(tdb.db, mine[2]!))!;
    const plan = (await sql<{ 'QUERY PLAN': string }>`explain (analyze) ${jobsAheadQuery(job)}`.execute(tdb.db)).rows.map((r) => r['QUERY PLAN']).join('\n');
    assert.match(plan, /jobs_waiting_idx/, plan);
    assert.equal(await positionOf(c, mine[2]!), 3);
  });
});
