// Worker fleets as platform teams run them: the built worker (`node dist/worker/main.js`) as real
// processes, graceful shutdown on SIGTERM with the job finishing on another process, fleets with
// disjoint roles completing a job together, and the metrics endpoints of gateway and worker.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import { createTestDatabase, createTenant, testConfig, waitFor, type TestDatabase } from '../support/stack.js';
import { api, startGateway, startWorkers, type Workers } from '../support/services.js';
import { roleName } from '../../worker/roles.js';
import type { Config } from '../../shared/config.js';
import { serveApiMetrics } from '../../api/metrics.js';
import { imageBody } from '../support/job-helpers.js';

const workerMain = fileURLToPath(new URL('../../worker/main.js', import.meta.url));
const limits = { RATE_LIMIT_GENERATE_PER_MIN: '1000', RATE_LIMIT_POLL_PER_MIN: '100000', RECONCILE_INTERVAL_MS: '3600000' };

let tdb: TestDatabase;

before(async () => {
  tdb = await createTestDatabase();
});

after(async () => {
  await tdb?.drop();
});

/** A built worker process with the suite's configuration; resolves once it polls its queues. */
interface WorkerProcess {
  child: ChildProcess;
  pid: number;
  output(): string;
  exited: Promise<number | null>;
}

async function spawnWorker(config: Config, env: Record<string, string> = {}): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [workerMain], {
    env: {
      ...process.env,
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      DATABASE_URL: config.DATABASE_URL,
      TASK_QUEUE_PREFIX: config.TASK_QUEUE_PREFIX,
      LOCAL_RENDER_LATENCY_MS: String(config.LOCAL_RENDER_LATENCY_MS),
      RECONCILE_INTERVAL_MS: String(config.RECONCILE_INTERVAL_MS),
      WORKER_SHUTDOWN_GRACE_MS: '20000',
      WORKER_METRICS_PORT: '',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const proc = { child, pid: child.pid!, output: () => out, exited };
  await Promise.race([
    waitFor(`worker process ${child.pid} to start`, () => out.includes('"msg":"worker started"'), 60_000, 50),
    exited.then((code) => {
      throw new Error(`worker process exited with ${code} before starting:\n${out}`);
    }),
  ]);
  return proc;
}

async function stopProcess(p: WorkerProcess | undefined): Promise<void> {
  if (!p || p.child.exitCode !== null || p.child.signalCode !== null) return;
  p.child.kill('SIGTERM');
  await p.exited;
}

async function jobRow(id: string) {
  return tdb.db.selectFrom('jobs').select(['status', 'error', 'outputs']).where('id', '=', id).executeTakeFirstOrThrow();
}

async function waitForJob(id: string, statuses: string[], timeoutMs = 120_000) {
  return waitFor(
    `${id} to reach ${statuses.join('/')}`,
    async () => {
      const row = await jobRow(id);
      return statuses.includes(row.status) ? row : undefined;
    },
    timeoutMs,
    200,
  );
}

/** The worker identities (`<pid>@<host>`) that worked on the job: tasks in its history and activities in flight. */
async function identities(client: Client, jobId: string): Promise<{ history: string[]; pending: string[] }> {
  const handle = client.workflow.getHandle(jobId);
  const history = await handle.fetchHistory();
  const fromHistory = (history.events ?? [])
    .map((e) => e.workflowTaskStartedEventAttributes?.identity ?? e.activityTaskStartedEventAttributes?.identity)
    .filter((i): i is string => !!i);
  const desc = await handle.describe();
  const pending = (desc.raw.pendingActivities ?? []).map((a) => a.lastWorkerIdentity).filter((i): i is string => !!i);
  return { history: fromHistory, pending };
}

const pidOf = (identity: string) => Number(identity.split('@')[0]);

describe('graceful shutdown', () => {
  test('SIGTERM to the worker process running a job exits 0 and the job completes on another process', async () => {
    const config = testConfig(tdb.url, { ...limits, LOCAL_RENDER_LATENCY_MS: '6000' });
    const gw = await startGateway(config, tdb.db);
    const procs: WorkerProcess[] = [];
    try {
      procs.push(await spawnWorker(config), await spawnWorker(config));
      const t = await createTenant(tdb.db, 100);
      const c = api(gw.baseUrl, t.apiKey);
      const created = await c.post('/v1/images/generate', imageBody(t, 'a ship in a storm'));
      assert.equal(created.status, 200, created.text);
      const id = created.body.data.id as string;

      // Mid-job: submitted to the provider, which reports it as running for a few seconds more.
      await waitFor(`${id} to be generating at the provider`, async () => {
        const r = await c.get(`/v1/images/${id}`);
        return r.body.data.status === 'generating' && r.body.data.progress?.phase === 'generating' ? true : undefined;
      });
      const seen = await identities(gw.client, id);
      const lastIdentity = seen.pending.at(-1) ?? seen.history.at(-1);
      assert.ok(lastIdentity, 'some worker process worked on the job');
      const victim = procs.find((p) => p.pid === pidOf(lastIdentity));
      assert.ok(victim, `the job ran on one of the spawned processes (${lastIdentity})`);
      const survivor = procs.find((p) => p !== victim)!;

      victim.child.kill('SIGTERM');
      const code = await Promise.race([victim.exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 60_000).unref())]);
      assert.equal(code, 0, `the worker exits 0 after SIGTERM:\n${victim.output().slice(-2000)}`);
      assert.match(victim.output(), /shutting down/);

      const row = await waitForJob(id, ['completed', 'failed']);
      assert.equal(row.status, 'completed', JSON.stringify(row.error));
      const url = await c.get(`/v1/images/${id}/url`);
      assert.equal(url.status, 200);
      assert.equal((await fetch(url.body.data.url)).status, 200);

      const after = await identities(gw.client, id);
      const later = after.history.slice(seen.history.length).map(pidOf);
      assert.ok(later.includes(survivor.pid), `the rest of the job ran on the other process (${later.join(', ')})`);
      assert.equal(survivor.child.exitCode, null, 'the other process keeps running');
      const ws = await tdb.db.selectFrom('workspaces').select('credits').where('id', '=', t.workspaceId).executeTakeFirstOrThrow();
      assert.equal(ws.credits, 96);
    } finally {
      for (const p of procs) await stopProcess(p);
      await gw.close();
    }
  });

  test('SIGTERM during a provider render lets the in-flight activity finish on that process, then the job completes on the other', async () => {
    const config = testConfig(tdb.url, limits);
    const gw = await startGateway(config, tdb.db);
    const procs: WorkerProcess[] = [];
    try {
      // A grace far above the render: on a busy machine the render takes many times its few seconds.
      const grace = { WORKER_SHUTDOWN_GRACE_MS: '180000' };
      procs.push(await spawnWorker(config, grace), await spawnWorker(config, grace));
      const t = await createTenant(tdb.db, 1000);
      const c = api(gw.baseUrl, t.apiKey);
      // The longest, largest local render: the submit activity runs for a few seconds.
      const created = await c.post('/v1/videos/generate', {
        project_id: t.projectId,
        prompt: 'a long pan over a city',
        model: 'seedance-1.5',
        aspect_ratio: '16:9',
        duration: 12,
        resolution: '1080p',
      });
      assert.equal(created.status, 200, created.text);
      const id = created.body.data.id as string;
      const handle = gw.client.workflow.getHandle(id);

      const renderer = await waitFor(
        'the render to be in flight on a worker process',
        async () => {
          const desc = await handle.describe();
          const submit = (desc.raw.pendingActivities ?? []).find((a) => a.activityType?.name === 'submitAndCheck' && a.lastWorkerIdentity);
          return submit?.lastWorkerIdentity ?? undefined;
        },
        60_000,
        50,
      );
      const victim = procs.find((p) => p.pid === pidOf(renderer));
      assert.ok(victim, `the render runs on one of the spawned processes (${renderer})`);
      victim.child.kill('SIGTERM');
      const code = await Promise.race([victim.exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 200_000).unref())]);
      assert.equal(code, 0, `the worker exits 0 after SIGTERM:\n${victim.output().slice(-2000)}`);

      const row = await waitForJob(id, ['completed', 'failed']);
      assert.equal(row.status, 'completed', JSON.stringify(row.error));
      const events = (await handle.fetchHistory()).events ?? [];
      const submitScheduled = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'submitAndCheck')!;
      const submitCompleted = events.find((e) => String(e.activityTaskCompletedEventAttributes?.scheduledEventId) === String(submitScheduled.eventId));
      assert.ok(submitCompleted, 'the render completed');
      assert.equal(pidOf(submitCompleted.activityTaskCompletedEventAttributes!.identity!), victim.pid, 'the in-flight render finished on the stopping process');
      const survivor = procs.find((p) => p !== victim)!;
      // completeJob is a local activity: it ran inside the workflow task that followed the render.
      const nextTask = events.find((e) => e.workflowTaskStartedEventAttributes && Number(e.eventId) > Number(submitCompleted.eventId));
      assert.equal(pidOf(nextTask!.workflowTaskStartedEventAttributes!.identity!), survivor.pid, 'the job finished on the other process');
    } finally {
      for (const p of procs) await stopProcess(p);
      await gw.close();
    }
  });
});

describe('fleets with disjoint roles', () => {
  test('a workflows+io+fetch fleet and a provider:local fleet complete a job together', async () => {
    const config = testConfig(tdb.url, limits);
    const gw = await startGateway(config, tdb.db);
    let a: Workers | undefined;
    let b: Workers | undefined;
    try {
      a = await startWorkers(config, tdb.db, 'workflows,io,fetch');
      assert.deepEqual(a.fleet.roles.map(roleName), ['workflows', 'io', 'fetch']);
      const t = await createTenant(tdb.db, 100);
      const c = api(gw.baseUrl, t.apiKey);
      const created = await c.post('/v1/images/generate', imageBody(t, 'two fleets'));
      const id = created.body.data.id as string;

      // Fleet A alone gets the job as far as the provider queue, where it waits for a provider fleet.
      await waitFor(`${id} to wait for the provider`, async () => {
        const r = await c.get(`/v1/images/${id}`);
        return r.body.data.status === 'generating' && r.body.data.progress?.phase === 'submitting' ? true : undefined;
      });
      // The row says `submitting` as soon as the step before ends; the workflow schedules the submit
      // a moment later, and there it stays: no fleet polls the provider queue yet.
      await waitFor(`${id}'s submit to be scheduled`, async () => {
        const desc = await gw.client.workflow.getHandle(id).describe();
        const pending = (desc.raw.pendingActivities ?? []).map((p) => p.activityType?.name);
        return pending.length === 1 && pending[0] === 'submitAndCheck';
      });
      assert.equal((await c.get(`/v1/images/${id}`)).body.data.status, 'generating');

      b = await startWorkers(config, tdb.db, 'provider:local');
      assert.deepEqual(b.fleet.roles.map(roleName), ['provider:local']);
      const queuesA = a.fleet.workers.map((w) => w.options.taskQueue);
      const queuesB = b.fleet.workers.map((w) => w.options.taskQueue);
      assert.deepEqual(queuesB, [`${config.TASK_QUEUE_PREFIX}-provider-local`, `${config.TASK_QUEUE_PREFIX}-provider-local-waits`]);
      assert.ok(!queuesA.some((q) => queuesB.includes(q)), 'the fleets poll disjoint task queues');

      const row = await waitForJob(id, ['completed', 'failed']);
      assert.equal(row.status, 'completed', JSON.stringify(row.error));
      assert.equal((await c.get(`/v1/images/${id}/url`)).status, 200);

      // The provider step ran on the provider fleet's queue; the Postgres steps ran as local
      // activities in fleet A's workflow worker (markers, no activity task). The row turns completed
      // inside the last workflow task, before that task's marker is in the history: read the history
      // of the closed run.
      const handle = gw.client.workflow.getHandle(id);
      await waitFor(`${id}'s run to close`, async () => ((await handle.describe()).status.name === 'COMPLETED' ? true : undefined));
      const history = await handle.fetchHistory();
      const scheduled = (history.events ?? [])
        .map((e) => e.activityTaskScheduledEventAttributes)
        .filter((s) => !!s)
        .map((s) => `${s.activityType?.name}@${s.taskQueue?.name?.slice(config.TASK_QUEUE_PREFIX.length + 1)}`);
      assert.deepEqual(scheduled, ['submitAndCheck@provider-local']);
      const localSteps = (history.events ?? []).filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity').length;
      assert.equal(localSteps, 2, 'startGenerating and completeJob ran as local activities');
    } finally {
      await b?.stop();
      await a?.stop();
      await gw.close();
    }
  });
});

describe('metrics', () => {
  test('the gateway metrics port exposes request, rate-limit, job and credit series; /healthz and /readyz answer', async () => {
    // A generate limit of 1 per minute: the second create is refused and counted.
    const config = testConfig(tdb.url, { ...limits, RATE_LIMIT_GENERATE_PER_MIN: '1' });
    const gw = await startGateway(config, tdb.db);
    try {
      const t = await createTenant(tdb.db, 100);
      const c = api(gw.baseUrl, t.apiKey);
      assert.equal((await c.post('/v1/images/generate', imageBody(t, 'counted'))).status, 200);
      const refused = await c.post('/v1/images/generate', imageBody(t, 'refused'));
      assert.equal(refused.status, 429);
      assert.equal((await c.get('/healthz')).status, 200);
      assert.equal((await c.get('/readyz')).status, 200);

      // Metrics have their own loopback port, as api/server.ts serves them.
      const metricsServer = await serveApiMetrics(gw.app.metrics, '127.0.0.1', 0);
      const res = await fetch(`http://127.0.0.1:${(metricsServer.address() as AddressInfo).port}/metrics`).finally(() => metricsServer.close());
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /text\/plain/);
      const text = await res.text();
      assert.match(text, /^mediagen_http_requests_total\{[^}]*status="200"[^}]*\} \d+/m);
      assert.match(text, /^mediagen_http_requests_total\{[^}]*status="429"[^}]*\} 1/m);
      assert.match(text, /^mediagen_http_request_duration_seconds_bucket\{/m);
      assert.match(text, /^mediagen_rate_limit_refusals_total\{class="generate"\} 1$/m);
      assert.match(text, /^mediagen_jobs_created_total\{kind="image",model="nano-banana-2"\} 1$/m);
      assert.match(text, /^mediagen_credits_total\{reason="charged"\} 4$/m);
    } finally {
      await gw.close();
    }
  });

  test('the built worker serves its own series and the Temporal SDK runtime metrics', async () => {
    const config = testConfig(tdb.url, limits);
    const gw = await startGateway(config, tdb.db);
    let proc: WorkerProcess | undefined;
    try {
      // Port 0: the worker binds a free port itself and logs it (no probing for a free port here).
      proc = await spawnWorker(config, { WORKER_METRICS_PORT: '0' });
      const port = await waitFor(
        'the worker to log its metrics port',
        () => /"msg":"metrics on http:\/\/127\.0\.0\.1:(\d+)\/metrics"/.exec(proc!.output())?.[1],
      );
      const t = await createTenant(tdb.db, 100);
      const created = await api(gw.baseUrl, t.apiKey).post('/v1/images/generate', imageBody(t, 'measured'));
      const row = await waitForJob(created.body.data.id, ['completed', 'failed']);
      assert.equal(row.status, 'completed');

      const text = await waitFor(
        'worker metrics with the finished job and SDK series',
        async () => {
          const res = await fetch(`http://127.0.0.1:${port}/metrics`);
          const body = await res.text();
          return res.status === 200 && /^mediagen_jobs_finished_total\{/m.test(body) && /^temporal_\w+/m.test(body) ? body : undefined;
        },
        30_000,
        250,
      );
      assert.match(text, /^mediagen_provider_request_duration_seconds_bucket\{[^}]*provider="local"[^}]*model="nano-banana-2"[^}]*op="submit"/m);
      assert.match(text, /^mediagen_provider_request_duration_seconds_count\{[^}]*op="poll"[^}]*\} [1-9]/m);
      assert.match(text, /^mediagen_jobs_finished_total\{kind="image",model="nano-banana-2",provider="local",outcome="completed"\} 1$/m);
      assert.match(text, /^temporal_\w+/m, 'Temporal SDK runtime series are relayed');
      assert.equal((await fetch(`http://127.0.0.1:${port}/other`)).status, 404);
    } finally {
      await stopProcess(proc);
      await gw.close();
    }
  });
});
