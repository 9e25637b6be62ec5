// Benchmark (not a test): the per-process figures the capacity model (docs/operations/capacity.md)
// is built from, on the real stack in the environment (eval "$(scripts/stack.sh up test)"). Each of
// our processes runs apart from the load generator (this process), as built: the gateway
// (`node dist/api/server.js`) and worker processes (`node dist/worker/main.js --roles …`). CPU time
// comes from /proc/<pid>/stat (user + system, every thread) over each phase's window, memory from
// /proc/<pid>/status, Postgres traffic from a counter preloaded into each child
// (scripts/bench/pg-count.ts: queries and `begin`s sent on its node-postgres clients, connections
// open and their peak). Phases, in order:
//   1. status reads: 20 connections, closed loop, GET /v1/images/{id} round robin over in-flight
//      jobs (rows in `generating` with stored progress), for `seconds`;
//   2. creates: 10 connections, closed loop, POST /v1/images/generate (nano-banana-2 on the local
//      renderer), `jobs` of them; no workflow worker runs yet, so every workflow waits in the queue;
//   3. workflows: a provider:local worker (100 slots, no render latency) and then a worker with only
//      the `workflows` role drain that backlog: workflow tasks/s and CPU per task of that worker;
//      then every job's history: workflow tasks, activities, local activities, timers, signals,
//      child workflows, search-attribute upserts, events, and the Temporal Cloud actions they make;
//   4. memory per in-flight job: a provider:local worker whose renders report ready only after a
//      long latency, so each job, once submitted, waits between polls as a job at a live queue-based
//      provider does; the RSS of the workflow worker and of that provider worker with one job in
//      flight and with `inflight` in flight (the difference, per job). The provider worker's RSS idle
//      and at its peak while 100 slots drained phase 3's backlog is printed too.
// It prints the machine, its load average before and after, the inputs and every figure, and
// asserts nothing.
//
//   npm run build:all && npm run bench:capacity [-- seconds=8 jobs=100 inflight=200]
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { Client } from '@temporalio/client';
import { createTenant, createTestDatabase, insertImageJob, testConfig, waitFor } from '../../test/support/stack.js';
import { api } from '../../test/support/services.js';
import { connectClient } from '../../shared/temporal-connection.js';
import { codecDataConverter } from '../../codec/payload-codec.js';
import type { Database } from '../../db/index.js';
import { spawnGateway } from '../../test/integration/gateway-harness.js';
import { countHistory, type HistoryCounts } from './history-counts.js';
import { cpuMs, loadavg, machine, pgCountEnv, readPgCounts, rssMb, settle, spawnWorker, type BenchProcess, type PgCounts } from './processes.js';

function arg(name: string, fallback: number): number {
  const hit = process.argv.slice(2).find((a) => a.startsWith(`${name}=`));
  return hit ? Number(hit.slice(name.length + 1)) : fallback;
}

const SECONDS = arg('seconds', 8);
const JOBS = arg('jobs', 100);
const IN_FLIGHT = arg('inflight', 200);
const READ_CONNECTIONS = 20;
const CREATE_CONNECTIONS = 10;
const POLLED_JOBS = 200;
const SLOW_RENDER_MS = 600_000;

const f1 = (n: number) => n.toFixed(1);
const f2 = (n: number) => n.toFixed(2);
const diff = (a: PgCounts, b: PgCounts) => ({ queries: b.queries - a.queries, transactions: b.transactions - a.transactions });

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
function get(port: number, p: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: p, headers, agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      })
      .on('error', reject);
  });
}

/** Peak connections to the run's database in pg_stat_activity, sampled every 200 ms while `during` runs. */
async function peakConnections<T>(tdb: { db: Database }, during: () => Promise<T>): Promise<[T, number]> {
  let peak = 0;
  let stop = false;
  const sampler = (async () => {
    while (!stop) {
      const r = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where datname = current_database()`.execute(tdb.db);
      peak = Math.max(peak, r.rows[0]!.n);
      await settle(200);
    }
  })();
  try {
    return [await during(), peak];
  } finally {
    stop = true;
    await sampler;
  }
}

async function main(): Promise<void> {
  const load0 = loadavg();
  const started = performance.now();
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'bench-capacity-'));
  const tdb = await createTestDatabase();
  const config = testConfig(tdb.url);
  const prefix = { TASK_QUEUE_PREFIX: config.TASK_QUEUE_PREFIX, DATABASE_URL: tdb.url };
  const connection = await connectClient(config);
  const client = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE, ...codecDataConverter(config) });
  const procs: BenchProcess[] = [];
  const jobIds: string[] = [];
  let gw: Awaited<ReturnType<typeof spawnGateway>> | undefined;
  try {
    const t = await createTenant(tdb.db, 100_000_000);
    const polled: string[] = [];
    for (let i = 0; i < POLLED_JOBS; i++) polled.push((await insertImageJob(tdb.db, t)).id);
    await tdb.db
      .updateTable('jobs')
      .set({ status: 'generating', phase: 'generating', percent: sql`(random() * 99)::int`, workflow_started: true, progress_updated_at: sql`now()` })
      .where('id', 'in', polled)
      .execute();
    await sql`analyze jobs`.execute(tdb.db);

    const gwCounts = path.join(tmp, 'gateway.json');
    // Rate limits on (as deployed), high enough never to refuse the benchmark's one key.
    gw = await spawnGateway(tdb.url, { ...prefix, ...pgCountEnv(gwCounts), RATE_LIMIT_POLL_PER_MIN: '100000000', RATE_LIMIT_GENERATE_PER_MIN: '100000000' });
    const gwPid = gw.child.pid!;
    const port = Number(new URL(gw.baseUrl).port);
    const auth = { authorization: `Bearer ${t.apiKey}` };
    const c = api(gw.baseUrl, t.apiKey);
    await waitFor('the key to be accepted', async () => (await c.get('/v1/projects')).status === 200);

    // ---- 1. status reads
    let i = 0;
    const readFor = async (seconds: number) => {
      const end = performance.now() + seconds * 1000;
      let count = 0;
      let errors = 0;
      await Promise.all(
        Array.from({ length: READ_CONNECTIONS }, async () => {
          while (performance.now() < end) {
            if ((await get(port, `/v1/images/${polled[i++ % POLLED_JOBS]}`, auth)) !== 200) errors++;
            count++;
          }
        }),
      );
      return { count, errors };
    };
    await readFor(1); // JIT, pools, key cache
    await settle();
    const r0 = { cpu: cpuMs(gwPid), pg: readPgCounts(gwCounts), at: performance.now() };
    const [reads, readPeak] = await peakConnections(tdb, () => readFor(SECONDS));
    await settle();
    const r1 = { cpu: cpuMs(gwPid) - r0.cpu, pg: diff(r0.pg, readPgCounts(gwCounts)), s: (performance.now() - r0.at) / 1000 };

    // ---- 2. creates (their workflows wait: no workflow worker polls yet)
    const c0 = { cpu: cpuMs(gwPid), pg: readPgCounts(gwCounts), at: performance.now() };
    let next = 0;
    let createErrors = 0;
    const [, createPeak] = await peakConnections(tdb, () =>
      Promise.all(
        Array.from({ length: CREATE_CONNECTIONS }, async () => {
          while (next < JOBS) {
            const k = next++;
            const r = await c.post('/v1/images/generate', {
              project_id: t.projectId,
              prompt: `capacity ${k}`,
              model: 'nano-banana-2',
              aspect_ratio: '1:1',
              count: 1,
            });
            if (r.status === 200) jobIds.push(r.body.data.id as string);
            else createErrors++;
          }
        }),
      ),
    );
    const createSeconds = (performance.now() - c0.at) / 1000;
    await settle();
    const c1 = { cpu: cpuMs(gwPid) - c0.cpu, pg: diff(c0.pg, readPgCounts(gwCounts)) };
    const gwPeakOpen = readPgCounts(gwCounts).peakOpen;

    // ---- 3. workflows: a provider fleet with room for all, then the workflow worker drains the backlog
    const provCounts = path.join(tmp, 'provider.json');
    const wfCounts = path.join(tmp, 'workflows.json');
    const provider = await spawnWorker('provider:local', {
      ...prefix,
      ...pgCountEnv(provCounts),
      PROVIDER_CONCURRENCY: 'local=100',
      LOCAL_RENDER_LATENCY_MS: '0',
    });
    procs.push(provider);
    const p0 = cpuMs(provider.pid);
    const provRssIdle = rssMb(provider.pid);
    let provRssPeak = provRssIdle;
    const wf = await spawnWorker('workflows', { ...prefix, ...pgCountEnv(wfCounts) });
    procs.push(wf);
    const w0 = { cpu: cpuMs(wf.pid), pg: readPgCounts(wfCounts), at: performance.now(), rss: rssMb(wf.pid) };
    let wfRssPeak = w0.rss;
    const [, runPeak] = await peakConnections(tdb, async () =>
      waitFor(
        `${jobIds.length} jobs to finish`,
        async () => {
          wfRssPeak = Math.max(wfRssPeak, rssMb(wf.pid));
          provRssPeak = Math.max(provRssPeak, rssMb(provider.pid));
          const r = await tdb.db
            .selectFrom('jobs')
            .select((eb) => eb.fn.countAll<string>().as('n'))
            .where('id', 'in', jobIds)
            .where('status', 'in', ['completed', 'failed'])
            .executeTakeFirstOrThrow();
          return Number(r.n) === jobIds.length;
        },
        120_000 + JOBS * 1_000,
        100,
      ).catch(async (err: unknown) => {
        const statuses = await tdb.db
          .selectFrom('jobs')
          .select(['status'])
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .where('id', 'in', jobIds)
          .groupBy('status')
          .execute();
        throw new Error(
          `${(err as Error).message}; jobs by status ${JSON.stringify(statuses)}\nworkflow worker:\n${wf.output().slice(-3000)}\nprovider worker:\n${provider.output().slice(-3000)}`,
        );
      }),
    );
    const runSeconds = (performance.now() - w0.at) / 1000;
    await settle();
    const w1 = { cpu: cpuMs(wf.pid) - w0.cpu, pg: diff(w0.pg, readPgCounts(wfCounts)), peakOpen: readPgCounts(wfCounts).peakOpen };
    const p1 = { cpu: cpuMs(provider.pid) - p0, pg: readPgCounts(provCounts) };
    const failed = await tdb.db.selectFrom('jobs').select('id').where('id', 'in', jobIds).where('status', '=', 'failed').execute();
    await provider.stop();

    const histories: HistoryCounts[] = [];
    for (const id of jobIds) histories.push(countHistory((await client.workflow.getHandle(id).fetchHistory()).events ?? []));
    const mean = (k: keyof HistoryCounts) => histories.reduce((s, h) => s + h[k], 0) / histories.length;
    const workflowTasks = histories.reduce((s, h) => s + h.workflowTasks, 0);

    // ---- 4. memory per in-flight job: idle, one job in flight, IN_FLIGHT jobs in flight
    const slow = await spawnWorker('provider:local', { ...prefix, LOCAL_RENDER_LATENCY_MS: String(SLOW_RENDER_MS) });
    procs.push(slow);
    const slowJobs: string[] = [];
    // Submitted: the render is done and the workflow polls it until its latency has passed, as a
    // live provider's queued request is polled.
    const inFlightNow = async () =>
      slowJobs.length === 0
        ? 0
        : Number(
            (
              await tdb.db
                .selectFrom('jobs')
                .select((eb) => eb.fn.countAll<string>().as('n'))
                .where('id', 'in', slowJobs)
                .where('submitted_at', 'is not', null)
                .executeTakeFirstOrThrow()
            ).n,
          );
    const createSlow = async (n: number) => {
      for (let k = 0; k < n; k++) {
        const r = await c.post('/v1/images/generate', {
          project_id: t.projectId,
          prompt: `capacity slow ${k}`,
          model: 'nano-banana-2',
          aspect_ratio: '1:1',
          count: 1,
        });
        if (r.status !== 200) throw new Error(`create: ${r.status} ${r.text}`);
        slowJobs.push(r.body.data.id as string);
        jobIds.push(r.body.data.id as string);
      }
    };
    /** Median RSS over a second, once the count in flight is reached. */
    const steadyRss = async () => {
      const xs: [number, number][] = [];
      for (let k = 0; k < 5; k++) {
        xs.push([rssMb(wf.pid), rssMb(slow.pid)]);
        await settle(200);
      }
      const median = (k: 0 | 1) => xs.map((x) => x[k]).sort((a, b) => a - b)[2]!;
      return { workflows: median(0), provider: median(1) };
    };
    await settle(1000);
    const rssIdle = await steadyRss();
    await createSlow(1);
    await waitFor('one provider call in flight', async () => (await inFlightNow()) === 1, 60_000, 200);
    const rssOne = await steadyRss();
    await createSlow(IN_FLIGHT - 1);
    await waitFor(`${IN_FLIGHT} provider calls in flight`, async () => (await inFlightNow()) === IN_FLIGHT, 120_000, 500);
    const rssMany = await steadyRss();

    // ---- report
    const load1 = loadavg();
    const perJob = (q: number) => f1(q / JOBS);
    const jobsDone = histories.length;
    console.log(`bench:capacity on ${machine()}`);
    console.log(
      `load average (1, 5, 15 min): ${load0} at the start, ${load1} at the end; the figures are per CPU-second of each process, so they hold on a shared machine`,
    );
    console.log(
      `inputs: status reads ${SECONDS} s × ${READ_CONNECTIONS} connections over ${POLLED_JOBS} in-flight jobs; ${JOBS} creates × ${CREATE_CONNECTIONS} connections (nano-banana-2, local renderer); ${IN_FLIGHT} slow provider calls`,
    );
    console.log('\ngateway (node dist/api/server.js, one process)');
    console.log(
      `  status reads   ${reads.count} in ${f1(r1.s)} s = ${f1(reads.count / r1.s)} req/s observed${reads.errors ? ` (${reads.errors} not 200)` : ''}; CPU ${f1(r1.cpu / reads.count)} ms/req → ${Math.round((reads.count * 1000) / r1.cpu)} req per CPU-second`,
    );
    console.log(`                 Postgres: ${f2(r1.pg.queries / reads.count)} statements/req, ${f2(r1.pg.transactions / reads.count)} transactions/req`);
    console.log(
      `  creates        ${jobIds.length - slowJobs.length} in ${f1(createSeconds)} s = ${f1((jobIds.length - slowJobs.length) / createSeconds)} req/s observed${createErrors ? ` (${createErrors} refused)` : ''}; CPU ${f1(c1.cpu / JOBS)} ms/req → ${Math.round((JOBS * 1000) / c1.cpu)} req per CPU-second`,
    );
    console.log(`                 Postgres: ${f2(c1.pg.queries / JOBS)} statements/create, ${f2(c1.pg.transactions / JOBS)} transactions/create`);
    console.log(
      `  Postgres connections: peak ${gwPeakOpen} open in the process (pool DATABASE_POOL_SIZE=${config.DATABASE_POOL_SIZE} + its LISTEN connections)`,
    );
    console.log(`  RSS ${f1(rssMb(gwPid))} MB after the phases`);

    console.log(`\nworkflow worker (--roles workflows, WORKFLOW_TASK_CONCURRENCY ${config.WORKFLOW_TASK_CONCURRENCY}), draining a backlog of ${jobsDone} jobs`);
    console.log(
      `  ${workflowTasks} workflow tasks in ${f1(runSeconds)} s = ${f1(workflowTasks / runSeconds)} tasks/s, ${f1(jobsDone / runSeconds)} jobs/s observed; CPU ${f2(w1.cpu / workflowTasks)} ms/task, ${f1(w1.cpu / jobsDone)} ms/job → ${Math.round((workflowTasks * 1000) / w1.cpu)} tasks (${f1((jobsDone * 1000) / w1.cpu)} jobs) per CPU-second`,
    );
    console.log(
      `  Postgres (its local activities): ${f2(w1.pg.queries / jobsDone)} statements/job, ${f2(w1.pg.transactions / jobsDone)} transactions/job; peak ${w1.peakOpen} connections open (pool: at least IO_ACTIVITY_CONCURRENCY ${config.IO_ACTIVITY_CONCURRENCY} + 4); RSS peak ${f1(wfRssPeak)} MB`,
    );
    console.log(`  jobs failed: ${failed.length} of ${jobsDone}`);
    console.log(`\nprovider worker (--roles provider:local, 100 slots, no render latency) over the same jobs`);
    console.log(
      `  CPU ${f1(p1.cpu / jobsDone)} ms/job; Postgres ${f2(p1.pg.queries / jobsDone)} statements/job, ${f2(p1.pg.transactions / jobsDone)} transactions/job; peak ${p1.pg.peakOpen} connections`,
    );
    console.log(
      `  RSS ${f1(provRssIdle)} MB idle, peak ${f1(provRssPeak)} MB with 100 slots draining the backlog (${f1(((provRssPeak - provRssIdle) * 1024) / 100)} KB per slot if all were busy)`,
    );
    const perInFlight = (k: 'workflows' | 'provider') => f1(((rssMany[k] - rssOne[k]) * 1024) / (IN_FLIGHT - 1));
    console.log(`\nmemory per in-flight job (submitted, polled until ready ${SLOW_RENDER_MS / 1000} s later, as at a queue-based provider)`);
    console.log(
      `  workflow worker RSS: ${f1(rssIdle.workflows)} MB idle, ${f1(rssOne.workflows)} MB with 1 in flight, ${f1(rssMany.workflows)} MB with ${IN_FLIGHT} → ${perInFlight('workflows')} KB per in-flight job (its sticky cache holds each running workflow)`,
    );
    console.log(
      `  provider worker RSS: ${f1(rssIdle.provider)} MB idle, ${f1(rssOne.provider)} MB with 1 in flight, ${f1(rssMany.provider)} MB with ${IN_FLIGHT} → ${perInFlight('provider')} KB per in-flight job (a slot is held only during a submit or a poll)`,
    );
    console.log(`  slots per provider worker: PROVIDER_CONCURRENCY (default 8 per live provider, 2 for local)`);

    console.log(`\nper job, from its history (mean of ${jobsDone} completed image jobs)`);
    console.log(
      `  ${f1(mean('events'))} events; ${f1(mean('workflowTasks'))} workflow tasks; ${f1(mean('activities'))} activities (${f1(mean('activityAttempts'))} attempts); ${f1(mean('localActivities'))} local activities in ${f1(mean('localActivityTasks'))} workflow tasks; ${f1(mean('timers'))} timers; ${f1(mean('signals'))} signals; ${f1(mean('children'))} child workflows; ${f1(mean('upserts'))} search-attribute upserts`,
    );
    console.log(
      `  Temporal Cloud actions: ${f1(mean('actions'))} per job = 1 start + activity attempts + one per workflow task with local activities + timers + signals + child starts + upserts (docs.temporal.io/cloud/actions); add heartbeats that reach the server (≤ 1 per 24 s of a provider call: 80% of its 30 s heartbeat timeout) and ?live=true status reads (queries)`,
    );
    console.log(
      `\nPostgres per job (all processes): create ${perJob(c1.pg.queries)} + workflow ${f1(w1.pg.queries / jobsDone)} + provider ${f1(p1.pg.queries / jobsDone)} statements, plus ${f2(r1.pg.queries / reads.count)} per status read`,
    );
    console.log(
      `  peak connections to the run's database (pg_stat_activity, this benchmark's own pool included): reads ${readPeak}, creates ${createPeak}, workflows ${runPeak}`,
    );
    console.log(`\nrun took ${f1((performance.now() - started) / 1000)} s`);
  } finally {
    agent.destroy();
    // The slow calls never finish by themselves: no drain, and their workflows are ended.
    for (const p of procs.reverse()) await p.stop('SIGKILL');
    await gw?.close();
    for (const id of jobIds)
      await client.workflow
        .getHandle(id)
        .terminate('benchmark over')
        .catch(() => undefined);
    await connection.close();
    await tdb.drop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
