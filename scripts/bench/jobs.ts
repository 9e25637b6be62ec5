// Benchmark (not a test): our job pipeline against a raw Temporal pipeline of six no-op activities
// (scripts/bench/raw-workflow.ts) on the same server, at concurrency 1 and 10. The stack is whatever
// the environment points at (TEMPORAL_ADDRESS, DATABASE_URL, S3_*); `npm run bench:jobs`
// (scripts/bench/jobs.sh) runs it on the dev profile and then the prod profile. It prints the server
// it measured. The gateway and a worker fleet (every role) run in-process; the local renderer is the
// provider, with no added latency. Each of C clients creates an image job over HTTP and waits for its
// workflow to close, then creates the next; the raw side starts a workflow and waits for its result.
// The two sides run in alternating halves.
// Prints, per concurrency: jobs/s, create→completed p50 / p99, and the ratios ours / raw; and where
// the CPU goes per job: the whole machine's (Temporal, Postgres, MinIO and this process), this
// process's over all its threads, and its main thread's busy time (the event loop that serves the
// gateway, the workers and the activities alike).
//
//   npm run bench:jobs [-- 60 20]     (jobs at concurrency 10, jobs at concurrency 1; both profiles)
//   node dist/scripts/bench/jobs.js 60 20          (after npm run build:all, on the stack in the environment)
import { readdirSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Worker } from '@temporalio/worker';
import { connectNative } from '../../shared/temporal-connection.js';
import { createTestDatabase, createTenant, testConfig } from '../../test/support/stack.js';
import { api, creditsOf, startGateway, startWorkers } from '../../test/support/services.js';
import { startTracing } from '../../shared/tracing.js';
import type { RawActivities } from './raw-workflow.js';
import { codecDataConverter } from '../../codec/payload-codec.js';

const jobsAt10 = Number(process.argv[2] ?? 60);
const jobsAt1 = Number(process.argv[3] ?? 20);
const rawWorkflowPath = fileURLToPath(new URL('./raw-workflow.js', import.meta.url));
const rawActivities: RawActivities = { noop: async (step) => step };

interface Run {
  jobsPerSecond: number;
  ms: number[];
  seconds: number;
  /** This process's CPU time (every thread: gateway, workers, the SDK's core) and its main thread's busy time, ms. */
  cpuMs: number;
  loopBusyMs: number;
  /** The whole machine's busy CPU time (every process: Temporal, Postgres, MinIO, this one), ms; null off Linux. */
  machineMs: number | null;
  /** CPU ms per part of the machine (cpuByPart) over the run. */
  parts: Map<string, number>;
}

/** Busy CPU ms of the whole machine so far, from /proc/stat (user+nice+system+irq+softirq+steal). */
function machineBusyMs(): number | null {
  try {
    const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const [user, nice, system, , , irq, softirq, steal] = cpu as [number, number, number, number, number, number, number, number];
    return ((user + nice + system + irq + softirq + (steal ?? 0)) * 1000) / 100; // USER_HZ is 100 on Linux
  } catch {
    return null;
  }
}

/**
 * CPU ms so far of every process on the machine, summed by part: the Temporal server (the dev
 * server, or Temporal's own `server` binary), the Postgres backends serving Temporal's databases (the
 * prod profile's persistence), the other Postgres backends (ours), MinIO, this process, the rest.
 */
function cpuByPart(): Map<string, number> {
  const parts = new Map<string, number>();
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return parts;
  }
  for (const pid of pids) {
    let stat: string;
    let cmdline: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
    } catch {
      continue; // exited meanwhile
    }
    const close = stat.lastIndexOf(')');
    const comm = stat.slice(stat.indexOf('(') + 1, close);
    const fields = stat.slice(close + 2).split(' ');
    const ms = ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, USER_HZ 100
    const part =
      Number(pid) === process.pid
        ? 'this process'
        : comm === 'temporal' || cmdline.includes('temporal-server')
          ? 'Temporal'
          : comm.startsWith('postgres')
            ? /^postgres: \S+ temporal/.test(cmdline)
              ? "Temporal's Postgres"
              : 'Postgres'
            : comm === 'minio'
              ? 'MinIO'
              : 'rest';
    parts.set(part, (parts.get(part) ?? 0) + ms);
  }
  return parts;
}

const PARTS = ['Temporal', "Temporal's Postgres", 'Postgres', 'MinIO', 'this process', 'rest'];

/** Two runs of the same workload as one: their jobs over their summed wall time. */
const combine = (a: Run, b: Run): Run => ({
  ms: [...a.ms, ...b.ms],
  seconds: a.seconds + b.seconds,
  jobsPerSecond: (a.ms.length + b.ms.length) / (a.seconds + b.seconds),
  cpuMs: a.cpuMs + b.cpuMs,
  loopBusyMs: a.loopBusyMs + b.loopBusyMs,
  machineMs: a.machineMs === null || b.machineMs === null ? null : a.machineMs + b.machineMs,
  parts: new Map(PARTS.map((p) => [p, (a.parts.get(p) ?? 0) + (b.parts.get(p) ?? 0)])),
});

const quantile = (ms: number[], q: number) => {
  const s = [...ms].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

/** `count` runs of `one`, `width` at a time, each client starting its next when the last closed. */
async function closedLoop(count: number, width: number, one: (i: number) => Promise<void>): Promise<Run> {
  const ms: number[] = [];
  let next = 0;
  const cpu0 = process.cpuUsage();
  const loop0 = performance.eventLoopUtilization();
  const machine0 = machineBusyMs();
  const parts0 = cpuByPart();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < count) {
        const i = next++;
        const t0 = performance.now();
        await one(i);
        ms.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const loop = performance.eventLoopUtilization(loop0);
  const machine1 = machineBusyMs();
  const parts1 = cpuByPart();
  const parts = new Map(PARTS.map((p) => [p, (parts1.get(p) ?? 0) - (parts0.get(p) ?? 0)]));
  const machineMs = machine0 === null || machine1 === null ? null : machine1 - machine0;
  return { jobsPerSecond: count / seconds, ms, seconds, cpuMs: (cpu.user + cpu.system) / 1000, loopBusyMs: loop.active, machineMs, parts };
}

const line = (name: string, r: Run) =>
  `  ${name.padEnd(24)} ${r.jobsPerSecond.toFixed(2).padStart(6)} jobs/s   create→completed p50 ${quantile(r.ms, 0.5).toFixed(0).padStart(5)} ms, p99 ${quantile(r.ms, 0.99).toFixed(0).padStart(5)} ms` +
  `\n  ${''.padEnd(24)} per job: ${r.machineMs === null ? '' : `${(r.machineMs / r.ms.length).toFixed(1)} ms CPU on the machine, `}` +
  `${(r.cpuMs / r.ms.length).toFixed(1)} ms in this process, its main thread busy ${(r.loopBusyMs / r.ms.length).toFixed(1)} ms (${((100 * r.loopBusyMs) / (r.seconds * 1000)).toFixed(0)}% of the run)` +
  (r.parts.size ? `\n  ${''.padEnd(24)} by part: ${PARTS.map((p) => `${p} ${((r.parts.get(p) ?? 0) / r.ms.length).toFixed(1)}`).join(', ')} ms` : '');

/** Workflow tasks, activity tasks, local activities and timers in a workflow's history. */
async function taskCounts(gw: Awaited<ReturnType<typeof startGateway>>, workflowId: string): Promise<string> {
  const events = (await gw.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const count = (has: (e: (typeof events)[number]) => unknown) => events.filter(has).length;
  const workflowTasks = count((e) => e.workflowTaskCompletedEventAttributes);
  const activityTasks = count((e) => e.activityTaskScheduledEventAttributes);
  const local = count((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity');
  const timers = count((e) => e.timerStartedEventAttributes);
  return `${workflowTasks} workflow tasks, ${activityTasks} activity tasks, ${local} local activities, ${timers} timers, ${events.length} events`;
}

async function main() {
  // With OTEL_EXPORTER_OTLP_ENDPOINT set, the run is traced as a process would be (before the pools
  // are made, so Postgres statements are spans too): the README's tracing cost comes from here.
  await startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: process.env.OTEL_EXPORTER_OTLP_ENDPOINT || undefined, OTEL_SERVICE_NAME: undefined }, 'mediagen-bench');
  const tdb = await createTestDatabase();
  const config = testConfig(tdb.url, {
    RATE_LIMIT_GENERATE_PER_MIN: '1000000',
    RATE_LIMIT_POLL_PER_MIN: '1000000',
    LOG_LEVEL: 'silent',
    LOCAL_RENDER_LATENCY_MS: '0',
  });
  const gw = await startGateway(config, tdb.db);
  const workers = await startWorkers(config, tdb.db);
  const rawQueue = `${config.TASK_QUEUE_PREFIX}-raw`;
  const connection = await connectNative(config);
  const rawWorker = await Worker.create({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    ...codecDataConverter(config),
    taskQueue: rawQueue,
    workflowsPath: rawWorkflowPath,
    activities: rawActivities,
  });
  const rawRunning = rawWorker.run();
  const t = await createTenant(tdb.db, (jobsAt10 + jobsAt1 + 2) * 10);
  const c = api(gw.baseUrl, t.apiKey);
  const credits0 = await creditsOf(tdb.db, t);
  try {
    const info = await gw.client.workflowService.getSystemInfo({});
    console.log(`server: Temporal ${info.serverVersion || '(version not reported)'} at ${config.TEMPORAL_ADDRESS}, namespace ${config.TEMPORAL_NAMESPACE}`);
    console.log(`ours: image jobs (nano-banana-2, 1:1, one image) over HTTP, local renderer; raw: 6 no-op activities`);
    console.log(`tracing: ${process.env.OTEL_EXPORTER_OTLP_ENDPOINT ? 'on (ours only: the raw side is never traced)' : 'off'}`);

    const ours = async (i: number) => {
      const r = await c.post('/v1/images/generate', { project_id: t.projectId, prompt: `bench ${i}`, model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });
      if (r.status !== 200) throw new Error(`create ${i}: ${r.status} ${r.text}`);
      lastJob = r.body.data.id;
      await gw.client.workflow.getHandle(lastJob).result();
    };
    let lastJob = '';
    let rawRuns = 0;
    const raw = async () => {
      await gw.client.workflow.execute('rawSixStepPipeline', { taskQueue: rawQueue, workflowId: `${rawQueue}-${rawRuns++}` });
    };
    // Warm both paths (bundles, connections, sticky caches) before measuring.
    await ours(-1);
    await raw();

    let jobsRun = 1;
    for (const [width, count] of [
      [1, jobsAt1],
      [10, jobsAt10],
    ] as const) {
      // Alternating halves, so load from elsewhere on the machine drifts into both sides alike.
      const half = Math.ceil(count / 2);
      const o1 = await closedLoop(half, width, (i) => ours(jobsRun + i));
      const r1 = await closedLoop(half, width, raw);
      const o2 = await closedLoop(count - half, width, (i) => ours(jobsRun + half + i));
      const r2 = await closedLoop(count - half, width, raw);
      jobsRun += count;
      const o = combine(o1, o2);
      const r = combine(r1, r2);
      console.log(`concurrency ${width}, ${count} each:`);
      console.log(line('ours (job pipeline)', o));
      console.log(line('raw (6 no-op activities)', r));
      console.log(
        `  ratio ours/raw: throughput ${(o.jobsPerSecond / r.jobsPerSecond).toFixed(2)}×, p50 ${(quantile(o.ms, 0.5) / quantile(r.ms, 0.5)).toFixed(2)}×, p99 ${(quantile(o.ms, 0.99) / quantile(r.ms, 0.99)).toFixed(2)}×`,
      );
    }
    // Where the time goes: the server round trips one job and one raw workflow cost.
    console.log(`per workflow, from its history: ours ${await taskCounts(gw, lastJob)}; raw ${await taskCounts(gw, `${rawQueue}-0`)}`);
    const done = await tdb.db
      .selectFrom('jobs')
      .select((eb) => [eb.fn.countAll<string>().as('n'), eb.fn.sum<string>('price').as('price')])
      .where('status', '=', 'completed')
      .executeTakeFirstOrThrow();
    console.log(`jobs completed: ${done.n} of ${jobsRun}; credits spent ${credits0 - (await creditsOf(tdb.db, t))} (their prices add up to ${done.price})`);
  } finally {
    rawWorker.shutdown();
    await rawRunning;
    await workers.stop();
    await connection.close();
    await gw.close();
    await tdb.drop();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
