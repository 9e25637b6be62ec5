// Benchmark (not a test): the capacity model v2 (docs/operations/capacity.md), measured on the cluster
// profile (scripts/stack.sh up cluster: Temporal as separate services, Postgres under Patroni, two
// gateways, two processes per worker fleet). Its processes run under the benchmark's overrides (fal's
// models routed to the fake fal queue this process serves, as the chaos suite does; rate limits that
// do not refuse); then, after an idle window that measures what the cluster costs doing nothing
// (Temporal's shard and queue upkeep, Patroni's health checks), one phase per kind: `jobs` image jobs
// (nano-banana-2), `jobs` video jobs (kling-3.0-turbo) and `jobs` two-step image pipelines, created
// over both gateways, each polled with GET every 2 s until it ends. Per completed job of each kind:
//   - Temporal: the histories of every workflow started in the phase (actions, events, by type);
//     heartbeats and queries reach the server but leave no event, so they are not in the count;
//   - Postgres: statements, round trips, transactions, NOTIFYs and rows written per job, split
//     between the application's database (mediagen) and Temporal's (temporal, temporal_visibility),
//     from pg_stat_statements (the profile's Patroni preloads it) and pg_stat_database, and WAL bytes;
//   - CPU ms per job of every process group (/proc/<pid>/stat utime + stime of the pids in the
//     profile's state directory; a postmaster with its backends);
// the idle window's rates subtracted. Then the model (scripts/bench/capacity-model.ts): the first
// resource to saturate at 10× and 100× the measured rate, and the chart's replica counts at those rates.
//
//   npm run bench:capacity-cluster [-- jobs=20 idle=30]
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Client } from '@temporalio/client';
import { createDb } from '../../db/index.js';
import { openProfileSuite } from '../../test/support/profile-stack.js';
import { clusterFaults } from '../../test/support/cluster-faults.js';
import { chaosOverrides } from '../../test/support/cluster-chaos.js';
import { startLiveFal } from '../../test/support/fake-providers/live-fal.js';
import { api } from '../../test/support/services.js';
import { createTenant } from '../../test/support/stack.js';
import { atMultiple, fig, replicasFor, saturations, type Resource } from './capacity-model.js';
import {
  backendCpu,
  backendCpuDiff,
  clusterProcesses,
  cpuByGroup,
  enableStatements,
  pgDiff,
  pgSnapshot,
  type DbCounts,
  type PgSnapshot,
} from './cluster-measure.js';
import { countHistory, type HistoryCounts } from './history-counts.js';
import { loadavg, machine } from './processes.js';

const arg = (name: string, dflt: number) => Number(process.argv.find((a) => a.startsWith(`${name}=`))?.split('=')[1] ?? dflt);
const JOBS = arg('jobs', 20);
const IDLE_S = arg('idle', 30);
const POLL_MS = 2000;
const LANES = 8;
// pg_stat_database is flushed by a backend when it goes idle, at the latest 10 s later.
const STATS_FLUSH_MS = 11_000;
const processesFile = fileURLToPath(new URL('../../../scripts/cluster/processes', import.meta.url));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Kind {
  name: string;
  create: string;
  read: string;
  body: (i: number) => Record<string, unknown>;
}
const image = (p: string) => ({ prompt: p, model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });
const kinds: Kind[] = [
  { name: 'image', create: '/v1/images/generate', read: '/v1/images/', body: (i) => image(`capacity image ${i}`) },
  {
    name: 'video',
    create: '/v1/videos/generate',
    read: '/v1/videos/',
    body: (i) => ({ prompt: `capacity video ${i}`, model: 'kling-3.0-turbo', aspect_ratio: '1:1', duration: 5 }),
  },
  {
    name: 'pipeline',
    create: '/v1/pipelines',
    read: '/v1/pipelines/',
    body: (i) => ({ steps: ['a', 'b'].map((s) => ({ id: s, kind: 'image', body: image(`capacity pipeline ${i} ${s}`) })) }),
  },
];

interface Window {
  seconds: number;
  cpu: Map<string, number>;
  /** The primary's client backends' CPU ms by database. */
  dbCpu: Map<string, number>;
  pg: PgSnapshot;
}

interface Phase extends Window {
  kind: string;
  jobs: number;
  failed: number;
  reads: number;
  /** From the first create to the last job seen ended. */
  activeSeconds: number;
  histories: { type: string; counts: HistoryCounts }[];
}

const APP_DBS = ['mediagen'];
const TEMPORAL_DBS = ['temporal', 'temporal_visibility'];

const sumOf = (m: Map<string, number>, keys: string[]) => keys.reduce((s, k) => s + (m.get(k) ?? 0), 0);

function sumDbs(pg: PgSnapshot, dbs: string[]): Omit<DbCounts, 'byStatement'> {
  const z = { statements: 0, roundTrips: 0, nested: 0, notifies: 0, transactions: 0, rowsWritten: 0 };
  for (const db of dbs) {
    const c = pg.byDb.get(db);
    if (!c) continue;
    for (const k of Object.keys(z) as (keyof typeof z)[]) z[k] += c[k];
  }
  return z;
}

async function main() {
  const load0 = loadavg();
  const started = performance.now();
  const live = await startLiveFal();
  live.fal.flow = ['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED'];
  // A workspace's cap on pipelines at once would refuse the pipeline phase's creates.
  const suite = await openProfileSuite('cluster', { overrides: { ...chaosOverrides(live.env), PIPELINE_MAX_ACTIVE: '100000' } });
  const { stack, db } = suite;
  const admin = createDb(`postgres://postgres@127.0.0.1:${stack.vars.CLUSTER_PG_LB_PORT}/postgres`, 2);
  try {
    const client = new Client({ connection: suite.connection, namespace: stack.config.TEMPORAL_NAMESPACE });
    const withStatements = await enableStatements(admin);
    const leader = await clusterFaults(stack).leader();
    const procs = clusterProcesses(stack.stateDir, processesFile, leader);
    const snap = async () => ({
      at: performance.now(),
      cpu: cpuByGroup(procs),
      backends: await backendCpu(admin),
      pg: await pgSnapshot(admin, withStatements),
    });
    const between = (a: Awaited<ReturnType<typeof snap>>, b: Awaited<ReturnType<typeof snap>>): Window => ({
      seconds: (b.at - a.at) / 1000,
      cpu: new Map([...b.cpu].map(([g, ms]) => [g, ms - (a.cpu.get(g) ?? 0)])),
      dbCpu: backendCpuDiff(a.backends, b.backends),
      pg: pgDiff(a.pg, b.pg),
    });

    /** Runs `n` of a kind over both gateways, each polled until it ends; answers what ran. */
    const run = async (kind: Kind, n: number) => {
      const t = await createTenant(db, 1_000_000_000);
      const ids: string[] = [];
      let reads = 0;
      let failed = 0;
      let lastEnd = performance.now();
      const t0 = performance.now();
      // The client polls its own job every 2 s, through the gateway it created it on, from its
      // create on: every job is in flight at once, created `LANES` at a time.
      const poll = async (c: ReturnType<typeof api>, kindRead: string, id: string) => {
        const deadline = performance.now() + 600_000;
        for (;;) {
          if (performance.now() > deadline) throw new Error(`${kind.name} ${id} did not end within 10 minutes`);
          await sleep(POLL_MS);
          const s = await c.get(`${kindRead}${id}`);
          reads++;
          const status = s.status === 200 ? (s.body.data.status as string) : '';
          if (['completed', 'failed', 'canceled'].includes(status)) {
            if (status !== 'completed') failed++;
            lastEnd = performance.now();
            return;
          }
        }
      };
      const polls: Promise<void>[] = [];
      const todo = Array.from({ length: n }, (_, i) => i);
      await Promise.all(
        Array.from({ length: LANES }, async () => {
          for (let i = todo.shift(); i !== undefined; i = todo.shift()) {
            const c = api(stack.gateways[i % stack.gateways.length]!, t.apiKey);
            const r = await c.post(kind.create, { project_id: t.projectId, ...kind.body(i) });
            if (r.status !== 200) throw new Error(`${kind.name} create: ${r.status} ${r.text}`);
            ids.push(r.body.data.id as string);
            polls.push(poll(c, kind.read, r.body.data.id as string));
          }
        }),
      );
      await Promise.all(polls);
      return { ids, reads, failed, activeSeconds: (lastEnd - t0) / 1000 };
    };

    /** Every workflow started between two instants, its type and what its history holds. */
    const historiesSince = async (from: Date, to: Date) => {
      const out: { type: string; counts: HistoryCounts }[] = [];
      const q = `StartTime >= "${from.toISOString()}" AND StartTime <= "${to.toISOString()}"`;
      for await (const wf of client.workflow.list({ query: q })) {
        const h = await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
        out.push({ type: wf.type, counts: countHistory(h.events ?? []) });
      }
      return out;
    };

    console.log(`[bench] warm-up: 2 of each kind, not measured`);
    for (const kind of kinds) await run(kind, 2);
    // Past the warm-up's last workflow tasks, stats flushes and the gateways' batched writes.
    await sleep(STATS_FLUSH_MS + 5000);

    console.log(`[bench] idle window: ${IDLE_S} s with nothing submitted`);
    const i0 = await snap();
    await sleep(IDLE_S * 1000);
    const idle = between(i0, await snap());

    const phases: Phase[] = [];
    for (const kind of kinds) {
      console.log(
        `[bench] ${kind.name}: ${JOBS} over ${stack.gateways.length} gateways, created ${LANES} at a time, all in flight, each polled every ${POLL_MS / 1000} s`,
      );
      const from = new Date();
      const a = await snap();
      const r = await run(kind, JOBS);
      await sleep(STATS_FLUSH_MS);
      const w = between(a, await snap());
      const histories = await historiesSince(from, new Date());
      phases.push({ ...w, kind: kind.name, jobs: r.ids.length, failed: r.failed, reads: r.reads, activeSeconds: r.activeSeconds, histories });
    }
    const load1 = loadavg();

    // ---- figures per job, the idle window's rates subtracted
    const net = (p: Phase, raw: number, idleRaw: number) => (raw - (idleRaw * p.seconds) / idle.seconds) / p.jobs;
    const groups = [...idle.cpu.keys()].sort();
    const cpuPerJob = (p: Phase, g: string) => net(p, p.cpu.get(g) ?? 0, idle.cpu.get(g) ?? 0);
    const pgPerJob = (p: Phase, dbs: string[], k: keyof ReturnType<typeof sumDbs>) => net(p, sumDbs(p.pg, dbs)[k], sumDbs(idle.pg, dbs)[k]);

    console.log(`\nbench:capacity-cluster on ${machine()}`);
    console.log(`load average (1, 5, 15 min): ${load0} at the start, ${load1} at the end`);
    console.log(
      `Postgres counts from ${withStatements ? 'pg_stat_statements (track = all: statements inside triggers counted apart) and pg_stat_database' : 'pg_stat_database only (pg_stat_statements not preloaded: statements, round trips and NOTIFYs not counted)'}; primary ${leader}`,
    );
    console.log(`idle window: ${fig(idle.seconds)} s; per second of it (subtracted from every phase in proportion to its length):`);
    console.log(`  CPU ms/s: ${groups.map((g) => `${g} ${fig((idle.cpu.get(g) ?? 0) / idle.seconds)}`).join(', ')}`);
    for (const [label, dbs] of [
      ['app', APP_DBS],
      ['Temporal', TEMPORAL_DBS],
    ] as const) {
      const s = sumDbs(idle.pg, dbs);
      console.log(`  Postgres ${label}: ${fig(s.statements / idle.seconds)} statements/s, ${fig(s.transactions / idle.seconds)} transactions/s`);
    }

    for (const p of phases) {
      console.log(
        `\n== ${p.kind}: ${p.jobs} completed${p.failed ? ` (${p.failed} failed)` : ''} in ${fig(p.activeSeconds)} s (window ${fig(p.seconds)} s with the stats flush) = ${fig(p.jobs / p.activeSeconds)} /s observed; ${fig(p.reads / p.jobs)} status reads per job`,
      );
      const byType = new Map<string, HistoryCounts[]>();
      for (const h of p.histories) byType.set(h.type, [...(byType.get(h.type) ?? []), h.counts]);
      console.log(`  Temporal, per ${p.kind} (histories of every workflow started in the phase; heartbeats and queries leave no event and are not counted):`);
      let actions = 0;
      let events = 0;
      for (const [type, hs] of byType) {
        const sum = (k: keyof HistoryCounts) => hs.reduce((s, h) => s + h[k], 0);
        actions += sum('actions');
        events += sum('events');
        console.log(
          `    ${type} ×${hs.length}: ${fig(sum('actions') / p.jobs)} actions, ${fig(sum('events') / p.jobs)} events, ${fig(sum('workflowTasks') / p.jobs)} workflow tasks, ${fig(sum('activityAttempts') / p.jobs)} activity attempts, ${fig(sum('localActivities') / p.jobs)} local activities, ${fig(sum('timers') / p.jobs)} timers, ${fig(sum('signals') / p.jobs)} signals, ${fig(sum('children') / p.jobs)} child starts, ${fig(sum('upserts') / p.jobs)} upserts`,
        );
      }
      console.log(`    total ${fig(actions / p.jobs)} actions and ${fig(events / p.jobs)} history events per ${p.kind}`);
      const historyWrites = [...(p.pg.byDb.get('temporal')?.byStatement ?? [])]
        .filter(([q]) => /^insert into history_node/i.test(q))
        .reduce((s, [, n]) => s + n, 0);
      console.log(`  Postgres per ${p.kind}, net of idle:`);
      for (const [label, dbs] of [
        ['app (mediagen)', APP_DBS],
        ['Temporal (temporal + temporal_visibility)', TEMPORAL_DBS],
      ] as const) {
        console.log(
          `    ${label}: ${fig(pgPerJob(p, dbs, 'statements'))} statements, ${fig(pgPerJob(p, dbs, 'roundTrips'))} round trips, ${fig(pgPerJob(p, dbs, 'transactions'))} transactions, ${fig(pgPerJob(p, dbs, 'notifies'))} NOTIFYs, ${fig(pgPerJob(p, dbs, 'nested'))} statements in triggers, ${fig(pgPerJob(p, dbs, 'rowsWritten'))} rows written`,
        );
      }
      console.log(
        `    Temporal history writes (insert into history_node, raw): ${fig(historyWrites / p.jobs)}; WAL ${fig((p.pg.walBytes - (idle.pg.walBytes * p.seconds) / idle.seconds) / p.jobs / 1024)} KiB per ${p.kind}`,
      );
      for (const dbName of ['mediagen', 'temporal']) {
        const top = [...(p.pg.byDb.get(dbName)?.byStatement ?? [])].sort((x, y) => y[1] - x[1]).slice(0, 6);
        console.log(`    top ${dbName} statements (raw calls per ${p.kind}): ${top.map(([q, n]) => `${fig(n / p.jobs)} × ${q}`).join(' | ')}`);
      }
      const dbCpu = (dbs: string[]) => net(p, sumOf(p.dbCpu, dbs), sumOf(idle.dbCpu, dbs));
      console.log(
        `  Postgres primary's CPU ms per ${p.kind} by database (its client backends, net of idle): app ${fig(dbCpu(APP_DBS))}, Temporal ${fig(dbCpu(TEMPORAL_DBS))}, the rest (WAL writer, walsender, checkpointer, autovacuum, Patroni's checks, ended backends) ${fig(cpuPerJob(p, 'postgres primary') - dbCpu(APP_DBS) - dbCpu(TEMPORAL_DBS))}`,
      );
      console.log(
        `  CPU ms per ${p.kind}, net of idle (gross): ${groups.map((g) => `${g} ${fig(cpuPerJob(p, g))} (${fig((p.cpu.get(g) ?? 0) / p.jobs)})`).join(', ')}`,
      );
    }

    // ---- the model: the kinds in equal parts, at the rate they ran together
    const mix = (f: (p: Phase) => number) => phases.reduce((s, p) => s + f(p), 0) / phases.length;
    const rate = phases.reduce((s, p) => s + p.jobs, 0) / phases.reduce((s, p) => s + p.activeSeconds, 0);
    const cores = os.cpus().length;
    const cpu = (g: string) =>
      Math.max(
        0,
        mix((p) => cpuPerJob(p, g)),
      );
    const count = (re: RegExp) => procs.filter((p) => re.test(p.name)).length;
    const allCpu = groups.reduce((s, g) => s + cpu(g), 0);
    const resources: Resource[] = [
      { name: 'machine CPU (every process)', unit: 'CPU ms', perJob: allCpu, capacity: cores * 1000, basis: `${cores} cores`, scalesOut: false },
      {
        name: 'gateways',
        unit: 'CPU ms',
        perJob: cpu('gateway'),
        capacity: count(/^gateway/) * 1000,
        basis: `${count(/^gateway/)} processes × 1 core (one JS thread)`,
        scalesOut: true,
      },
      ...['worker-core', 'worker-edge', 'worker-live'].map((g) => ({
        name: g,
        unit: 'CPU ms',
        perJob: cpu(g),
        capacity: count(new RegExp(`^${g}-`)) * 1000,
        basis: `${count(new RegExp(`^${g}-`))} processes × 1 core`,
        scalesOut: true,
      })),
      ...['frontend', 'history', 'matching'].map((s) => ({
        name: `temporal-${s}`,
        unit: 'CPU ms',
        perJob: cpu(`temporal-${s}`),
        capacity: count(new RegExp(`^temporal-${s}`)) * Math.min(2, cores) * 1000,
        basis: `${count(new RegExp(`^temporal-${s}`))} processes × GOMAXPROCS ${Math.min(2, cores)}`,
        scalesOut: true,
      })),
      {
        name: 'postgres primary (app + Temporal)',
        unit: 'CPU ms',
        perJob: cpu('postgres primary'),
        capacity: cores * 1000,
        basis: `one node, ${cores} cores`,
        scalesOut: false,
      },
    ];
    const dbShare = (dbs: string[]) =>
      Math.max(
        0,
        mix((p) => net(p, sumOf(p.dbCpu, dbs), sumOf(idle.dbCpu, dbs))),
      ) /
      Math.max(
        1e-9,
        mix((p) => net(p, sumOf(p.dbCpu, [...APP_DBS, ...TEMPORAL_DBS]), sumOf(idle.dbCpu, [...APP_DBS, ...TEMPORAL_DBS]))),
      );
    console.log(`\n== model: image, video and pipeline in equal parts; measured rate ${fig(rate)} jobs/s (all phases' jobs over their active seconds)`);
    console.log('  resource                               per job      capacity (as deployed on the profile)         saturates at');
    for (const s of saturations(resources)) {
      const r = s.resource;
      console.log(
        `  ${r.name.padEnd(38)} ${`${fig(r.perJob)} ${r.unit}`.padEnd(12)} ${`${fig(r.capacity)} ${r.unit}/s: ${r.basis}`.padEnd(45)} ${fig(s.saturatesAt)} jobs/s (${fig(s.saturatesAt / rate)}× measured)`,
      );
    }
    for (const m of [10, 100]) {
      for (const [label, rs] of [
        ['on this machine', resources],
        ['each component on cores of its own', resources.filter((r) => r.name !== resources[0]!.name)],
      ] as const) {
        const a = atMultiple(rs, rate, m);
        console.log(
          `  ${m}× (${fig(a.rate)} jobs/s), ${label}: first bottleneck ${a.first.resource.name} at ${fig(a.first.use * 100)} % (${fig(a.first.demand)} ${a.first.resource.unit}/s of ${fig(a.first.resource.capacity)}); next ${a.uses
            .slice(1, 4)
            .map((u) => `${u.resource.name} ${fig(u.use * 100)} %`)
            .join(', ')}`,
        );
      }
    }
    const appPrimary = cpu('postgres primary') * dbShare(APP_DBS);
    console.log(
      `  of the primary's CPU, client backends of Temporal's databases take ${fig(dbShare(TEMPORAL_DBS) * 100)} %, the app's ${fig(dbShare(APP_DBS) * 100)} %: with Temporal's persistence on a server of its own (or Temporal Cloud) the app's primary needs ≈ ${fig(appPrimary)} CPU ms per job and saturates at ${fig((cores * 1000) / appPrimary)} jobs/s (${fig((cores * 1000) / appPrimary / rate)}× measured)`,
    );
    const perJob = (dbs: string[], k: keyof ReturnType<typeof sumDbs>) => mix((p) => pgPerJob(p, dbs, k));
    const actions = mix((p) => p.histories.reduce((s, h) => s + h.counts.actions, 0) / p.jobs);
    const events = mix((p) => p.histories.reduce((s, h) => s + h.counts.events, 0) / p.jobs);
    for (const m of [10, 100]) {
      const r = rate * m;
      console.log(
        `  ${m}×: ${fig(r * actions)} Temporal actions/s, ${fig(r * events)} history events/s (${fig((r * events) / 64)} per shard of 64); Postgres ${fig(r * perJob(APP_DBS, 'transactions'))} app + ${fig(r * perJob(TEMPORAL_DBS, 'transactions'))} Temporal transactions/s, ${fig(r * (perJob(APP_DBS, 'statements') + perJob(TEMPORAL_DBS, 'statements')))} statements/s`,
      );
    }
    console.log('  chart values (ops/helm/mediagen, 1 CPU per replica at 60 %, N+1, floor a quarter of the ceiling):');
    for (const m of [10, 100]) {
      const r = rate * m;
      const plan = (g: string) => replicasFor(r, cpu(g));
      const fmt = (g: string) => `${plan(g).min}–${plan(g).max} (${fig(plan(g).cores)} cores)`;
      console.log(
        `    ${m}× (${fig(r)} jobs/s): gateway.autoscaling min–max ${fmt('gateway')}; workers.fleets.core.scaling ${fmt('worker-core')}; fetch + webhooks ${fmt('worker-edge')}; fal ${fmt('worker-live')}`,
      );
    }
    console.log(`\nrun took ${fig((performance.now() - started) / 1000)} s`);
  } finally {
    await admin.destroy();
    await suite.close();
    await live.close();
  }
}

await main();
