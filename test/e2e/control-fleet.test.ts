// The control fleet on the real stack: eight built worker processes (`node dist/worker/main.js
// --roles reconciler`) on one database and one set of task queues, each with its own /metrics.
// - One reconciler pass per interval across all of them (mediagen_reconciler_passes_total summed),
//   and one holder per control loop (mediagen_control_lease_held summed).
// - 100 webhook events: exactly 100 StartWorkflowExecution calls for delivery workflows across the
//   eight (mediagen_workflow_start_attempts_total, counted by a client interceptor around every
//   start, whatever its outcome), and the backlog gauges summed over the eight equal the real
//   backlog (the outbox in Postgres, each task queue's backlog on the Temporal server).
// - A pipeline whose parent run the restarter terminated (and whose process died before it started
//   the new run) is restarted exactly once (two runs in the workflow id's list: the terminated one
//   and one new), completes, each step charged once. (An operator's terminate ends the pipeline
//   canceled instead: test/e2e/pipelines-operator-ends.test.ts.)
// - kill -9 of the lease holder: another process holds every loop within the documented bound
//   (CONTROL_LEASE_TTL_MS + a third of it, plus scheduling slack on a loaded machine).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import protos from '@temporalio/proto';
import { createTenant, waitFor, type TestDatabase } from '../support/stack.js';
import { api, creditsOf, startService, type InProcessGateway, type Service } from '../support/services.js';
import { imageStep, videoStep } from '../support/pipeline-steps.js';
import { restartTerminateReason } from '../../worker/pipeline-operator-ends.js';
import type { Config } from '../../shared/config.js';
import { leaseDeployment, leaseHolders } from '../../worker/control-lease.js';
import { RECONCILER_LOOPS } from '../../worker/control-fleet.js';
import { providerNames, taskQueues, webhookDeliveryWorkflowType } from '../../workflows/definitions.js';
import { newId } from '../../shared/ids.js';

const workerMain = fileURLToPath(new URL('../../worker/main.js', import.meta.url));
const PROCESSES = 8;
const INTERVAL_MS = 1000;
const TTL_MS = 3000;
const STALL_MS = 3000;

interface ControlProcess {
  child: ChildProcess;
  pid: number;
  metricsUrl: string;
  output(): string;
  exited: Promise<unknown>;
}

let suite: Service;
let tdb: TestDatabase;
let config: Config;
let gw: InProcessGateway;
const procs: ControlProcess[] = [];

async function spawnControl(): Promise<ControlProcess> {
  const child = spawn(process.execPath, [workerMain, '--roles', 'reconciler'], {
    env: {
      ...process.env,
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      DATABASE_URL: config.DATABASE_URL,
      TASK_QUEUE_PREFIX: config.TASK_QUEUE_PREFIX,
      RECONCILE_INTERVAL_MS: String(INTERVAL_MS),
      CONTROL_LEASE_TTL_MS: String(TTL_MS),
      PIPELINE_STALL_MS: String(STALL_MS),
      WEBHOOK_WORKSPACE_CONCURRENCY: '1000',
      ROUTE_PROBE_INTERVAL_MS: '0',
      WORKER_METRICS_PORT: '0',
      WORKER_SHUTDOWN_GRACE_MS: '2000',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const metricsUrl = await Promise.race([
    waitFor(`worker process ${child.pid} to serve its metrics`, () => /metrics on (http:\/\/[^"\s]+\/metrics)/.exec(out)?.[1], 90_000, 50),
    exited.then(() => {
      throw new Error(`worker process exited before starting:\n${out}`);
    }),
  ]);
  return { child, pid: child.pid!, metricsUrl, output: () => out, exited };
}

/** Every sample of `name` on one process's /metrics, as label string → value. */
async function samples(p: ControlProcess, name: string): Promise<Map<string, number>> {
  const text = await (await fetch(p.metricsUrl)).text();
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)(\{[^}]*\})? (\S+)$/.exec(line);
    if (m && m[1] === name) out.set(m[2] ?? '', Number(m[3]));
  }
  return out;
}

const live = () => procs.filter((p) => p.child.exitCode === null && p.child.signalCode === null);

/** The sum over the live processes of `name`'s samples whose labels include `labels`. */
async function fleetSum(name: string, labels = ''): Promise<number> {
  let total = 0;
  for (const p of live()) for (const [l, v] of await samples(p, name)) if (l.includes(labels)) total += v;
  return total;
}

const pidOfHolder = (holder: string) => Number(holder.split('/')[1]);

before(async () => {
  // The pipelines' workers, without the reconciler role: only the spawned processes compete for the leases.
  suite = await startService(
    { RECONCILE_INTERVAL_MS: '3600000', RATE_LIMIT_GENERATE_PER_MIN: '1000', RATE_LIMIT_POLL_PER_MIN: '100000' },
    { roles: 'workflows,io,fetch,provider:local' },
  );
  ({ tdb, config, gw } = suite);
  // Started one after another: eight at once would starve a two-core machine.
  for (let i = 0; i < PROCESSES; i++) procs.push(await spawnControl());
});

after(async () => {
  for (const p of live()) p.child.kill('SIGTERM');
  await Promise.all(procs.map((p) => p.exited));
  await suite?.close();
});

describe('eight processes with the control role', () => {
  test('one holder per loop, and one reconciler pass per interval across all of them', { timeout: 120_000 }, async (ctx) => {
    const deployment = leaseDeployment(config);
    await waitFor('every control loop to have a holder', async () =>
      (await leaseHolders(tdb.db, deployment)).size === RECONCILER_LOOPS.length ? true : undefined,
    );
    for (const loop of RECONCILER_LOOPS) assert.equal(await fleetSum('mediagen_control_lease_held', `loop="${loop}"`), 1, `one process holds ${loop}`);
    const before = await fleetSum('mediagen_reconciler_passes_total');
    const started = Date.now();
    const PASSES = 6;
    await waitFor(
      `${PASSES} more reconciler passes`,
      async () => ((await fleetSum('mediagen_reconciler_passes_total')) >= before + PASSES ? true : undefined),
      60_000,
      100,
    );
    const elapsed = Date.now() - started;
    ctx.diagnostic(`${PASSES} passes across ${PROCESSES} processes took ${elapsed} ms (interval ${INTERVAL_MS} ms)`);
    // Passes start at least one interval apart in the holder; eight processes each passing would
    // reach six passes within about one interval.
    assert.ok(elapsed >= (PASSES - 1) * INTERVAL_MS, `${PASSES} passes took ${elapsed} ms: more than one pass per interval`);
    const passing: number[] = [];
    for (const p of live()) if (((await samples(p, 'mediagen_reconciler_passes_total')).get('') ?? 0) > 0) passing.push(p.pid);
    assert.equal(passing.length, 1, `one process runs the passes (${passing.join(', ')})`);
  });

  test('100 webhook events: 100 delivery starts across the fleet, and the backlog gauges sum to the real backlog', { timeout: 180_000 }, async () => {
    const t = await createTenant(tdb.db, 100);
    const startsBefore = await fleetSum('mediagen_workflow_start_attempts_total', `workflow_type="${webhookDeliveryWorkflowType}"`);
    const ids = Array.from({ length: 100 }, () => `whk_${newId('job')}_1`);
    await tdb.db
      .insertInto('webhook_deliveries')
      .values(
        ids.map((id) => ({
          id,
          job_id: null,
          workspace_id: t.workspaceId,
          type: 'job.completed',
          url: 'https://127.0.0.1:9/hook',
          job: JSON.stringify({ id }),
        })),
      )
      .execute();
    await sql`select pg_notify('webhook_deliveries', '')`.execute(tdb.db);
    await waitFor(
      'every event to be dispatched',
      async () => {
        const r = await tdb.db
          .selectFrom('webhook_deliveries')
          .select(sql<number>`count(*)::int`.as('n'))
          .where('id', 'in', ids)
          .where('dispatched_at', 'is not', null)
          .executeTakeFirstOrThrow();
        return r.n === ids.length ? true : undefined;
      },
      120_000,
      200,
    );
    // Two more sweeps of the outbox (each reconciler interval) find nothing left to start.
    const passes = await fleetSum('mediagen_reconciler_passes_total');
    await waitFor('two more passes', async () => ((await fleetSum('mediagen_reconciler_passes_total')) >= passes + 2 ? true : undefined), 60_000, 100);
    const label = `workflow_type="${webhookDeliveryWorkflowType}"`;
    assert.equal((await fleetSum('mediagen_workflow_start_attempts_total', label)) - startsBefore, 100, 'StartWorkflowExecution calls for the 100 deliveries');
    assert.equal(await fleetSum('mediagen_workflow_start_attempts_total', `${label},outcome="already_started"`), 0, 'no start found its delivery running');

    // Nobody delivers them (no webhooks worker): the 100 stay in the outbox, their attempts in the webhooks queue.
    const pending = await sql<{ n: number }>`
      select count(*)::int as n from webhook_deliveries where delivered_at is null and failed_at is null and superseded_at is null`.execute(tdb.db);
    assert.equal(await fleetSum('mediagen_webhook_backlog'), pending.rows[0]!.n);
    assert.ok(pending.rows[0]!.n >= 100);
    const queues = taskQueues(config.TASK_QUEUE_PREFIX);
    const described = async () => {
      const names = [
        { name: queues.workflows, type: protos.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW },
        ...[queues.io, queues.fetch, queues.webhooks, ...providerNames.map((p) => queues.provider(p))].map((name) => ({
          name,
          type: protos.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
        })),
      ];
      const out = new Map<string, number>();
      for (const { name, type } of names) {
        const res = await gw.client.workflowService.describeTaskQueue({
          namespace: config.TEMPORAL_NAMESPACE,
          taskQueue: { name },
          taskQueueType: type,
          reportStats: true,
        });
        out.set(name, Number(res.stats?.approximateBacklogCount ?? 0));
      }
      return out;
    };
    // The server's figure is approximate and settles: compare once both sides agree on a backlog.
    await waitFor(
      "the summed task queue gauges to equal the server's backlog",
      async () => {
        const server = await described();
        // The deliveries' activity tasks wait on the webhooks queue (no webhooks worker here).
        if ((server.get(queues.webhooks) ?? 0) === 0) return undefined;
        for (const [name, backlog] of server) if ((await fleetSum('mediagen_task_queue_backlog', `task_queue="${name}"`)) !== backlog) return undefined;
        return true;
      },
      60_000,
      500,
    );
    let exporting = 0;
    for (const p of live()) if ((await samples(p, 'mediagen_task_queue_backlog')).size > 0) exporting++;
    assert.equal(exporting, 1, 'one process exports the task queue backlog');
  });

  test('a pipeline whose run the restarter terminated is restarted once, completes, each step charged once', { timeout: 240_000 }, async () => {
    const t = await createTenant(tdb.db, 1000);
    const client = api(gw.baseUrl, t.apiKey);
    const credits = await creditsOf(tdb.db, t);
    const created = await client.post('/v1/pipelines', { project_id: t.projectId, steps: [imageStep('a control fleet'), videoStep('a control pan')] });
    assert.equal(created.status, 200, created.text);
    const id = created.body.data.id as string;
    const clipJob = await waitFor(
      'step 2 to have its job',
      async () => (await client.get(`/v1/pipelines/${id}`)).body.data.steps[1].job_id ?? undefined,
      120_000,
    );
    await waitFor("step 2's job workflow to start", () =>
      gw.client.workflow
        .getHandle(clipJob)
        .describe()
        .then(
          () => true,
          () => undefined,
        ),
    );
    const first = await gw.client.workflow.getHandle(id).describe();
    // The restarter's own terminate, as a restarter that died before its start leaves it.
    await gw.client.workflow.getHandle(id, first.runId).terminate(restartTerminateReason(600_000));
    const done = await waitFor(
      'the pipeline to be restarted and complete',
      async () => {
        const p = (await client.get(`/v1/pipelines/${id}`)).body.data;
        return p.status === 'completed' || p.status === 'failed' ? p : undefined;
      },
      180_000,
      250,
    );
    assert.equal(done.status, 'completed', JSON.stringify(done.error));
    // Passes go on over the completed pipeline; then the workflow id's runs: the terminated one and one new.
    const passes = await fleetSum('mediagen_reconciler_passes_total');
    await waitFor('two more passes', async () => ((await fleetSum('mediagen_reconciler_passes_total')) >= passes + 2 ? true : undefined), 60_000, 100);
    const runs = await waitFor(
      'both runs to be visible',
      async () => {
        const found: { runId: string; status: string }[] = [];
        for await (const w of gw.client.workflow.list({ query: `WorkflowId = '${id}'` })) found.push({ runId: w.runId, status: w.status.name });
        return found.length >= 2 && found.every((r) => r.status !== 'RUNNING') ? found : undefined;
      },
      60_000,
      500,
    );
    assert.equal(runs.length, 2, `one new run: ${JSON.stringify(runs)}`);
    const row = await tdb.db.selectFrom('pipelines').select(['restarted_run_id', 'restarted_at']).where('id', '=', id).executeTakeFirstOrThrow();
    const restarted = runs.find((r) => r.runId !== first.runId)!;
    assert.equal(restarted.status, 'COMPLETED');
    assert.equal(row.restarted_run_id, restarted.runId, 'the restart is recorded on the row');
    for (const s of done.steps) {
      assert.deepEqual(s.jobs, [s.job_id], `step ${s.id} ran as one job`);
      assert.equal(s.charged, s.price, `step ${s.id} charged once`);
    }
    assert.equal(credits - (await creditsOf(tdb.db, t)), done.price, 'charged the sum of the steps, once');
  });

  test('kill -9 of the lease holder: another process holds every loop within the bound', { timeout: 120_000 }, async (ctx) => {
    const deployment = leaseDeployment(config);
    const holders = await leaseHolders(tdb.db, deployment);
    const holderPids = new Set([...holders.values()].map((h) => pidOfHolder(h.holder)));
    assert.equal(holderPids.size, 1, 'one process holds every loop');
    const [pid] = [...holderPids];
    const victim = procs.find((p) => p.pid === pid)!;
    assert.ok(victim, 'the holder is one of the spawned processes');
    const passes = (await fleetSum('mediagen_reconciler_passes_total')) - ((await samples(victim, 'mediagen_reconciler_passes_total')).get('') ?? 0);
    const killedAt = Date.now();
    victim.child.kill('SIGKILL');
    await victim.exited;
    const taken = await waitFor(
      'another process to hold every loop',
      async () => {
        const now = await leaseHolders(tdb.db, deployment);
        const all = RECONCILER_LOOPS.every((l) => now.has(l) && pidOfHolder(now.get(l)!.holder) !== pid);
        return all ? Date.now() - killedAt : undefined;
      },
      30_000,
      50,
    );
    // Documented bound: TTL + TTL/3 from the holder's last renewal (at most the kill); 1.5 s for
    // timers and statements on a loaded two-core machine.
    const bound = TTL_MS + TTL_MS / 3;
    ctx.diagnostic(`every loop taken over ${taken} ms after the kill (bound ${bound} ms)`);
    assert.ok(taken <= bound + 1500, `taken over after ${taken} ms (bound ${bound} ms)`);
    for (const loop of RECONCILER_LOOPS) assert.equal(await fleetSum('mediagen_control_lease_held', `loop="${loop}"`), 1, `one live process holds ${loop}`);
    await waitFor(
      'the new holder to run reconciler passes',
      async () => ((await fleetSum('mediagen_reconciler_passes_total')) > passes ? true : undefined),
      30_000,
      100,
    );
  });
});
