// Benchmark (not a test): what fair share per workspace buys a small workspace, and what it costs,
// on the real stack in the environment (eval "$(scripts/stack.sh up test)": a Temporal server with
// matching.enableFairness on and one partition per queue). The gateway and a worker fleet (every
// role) run in-process; the local renderer is the provider, on a route of 4 slots
// (PROVIDER_CONCURRENCY local=4). Three phases, each on task queues of its own (its own prefix):
//   (a) idle:      workspace B submits its burst of jobs on an otherwise empty system;
//   (b) FIFO:      workspace A submits its backlog, then B submits the same burst, FAIR_SHARE=false;
//   (c) fair:      the same as (b) with FAIR_SHARE=true.
// B's wait is measured from B's submit, as its customer sees it: from the moment its create requests
// were sent to the moment a provider slot took each job's provider step (the ActivityTaskStarted
// event of its submitAndCheck, from the workflow history), and to the job done (the row's
// finished_at). Where the wait went is printed stage by stage, as the time each stage took: the
// median over B's jobs, and B's slowest job (its p99): create to workflow started, to its first
// workflow task, to the submit queued on the provider queue (the claim, a local activity, inside the
// worker), to a slot taken, to the submit answered (the local renderer renders within it), to the
// workflow task after it taken (a sticky queue), to done.
// Throughput is every job of the phase (A's and B's) over the time from the first create to the last
// job finished. (a), (b) and (c) run in alternating rounds (2 by default) and each phase's figures
// are pooled, so the idle baseline is measured as often, and at the same moments of the machine's
// load, as the phases it is compared with. Each phase first runs a few jobs of a third workspace, so
// none measures its fleet's cold start. Prints B's wait p50 / p99 per phase, (c)'s p99 over (a)'s,
// and the throughput of (c) over (b). Targets: (c)'s p99 from submit within 2x of (a)'s; throughput
// ratio at least 0.95. Worker settings come from the environment (WORKFLOW_TASK_CONCURRENCY, ...).
// Asserts nothing.
//
//   npm run build:all && npm run bench:fairness [-- <A's jobs, 300> <B's jobs, 5> <rounds, 2>]
import { randomBytes } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { createTestDatabase, createTenant, testConfig, type TestDatabase } from '../../test/support/stack.js';
import { startGateway, startWorkers } from '../../test/support/services.js';
import { createImages, jobTimeline, waitAllFinished, type JobTimeline } from '../../test/support/fair-share.js';

const aJobs = Number(process.argv[2] ?? 300);
const bJobs = Number(process.argv[3] ?? 5);
const rounds = Number(process.argv[4] ?? 2);
const SLOTS = 4;

interface Phase {
  /** B's waits from its submit to a provider slot, ms, sorted. */
  bWaits: number[];
  /** B's waits from its submit to its job done, ms, sorted. */
  bDone: number[];
  /** B's stages, ms from its submit, per job (STAGES). */
  bStages: number[][];
  jobsPerSecond: number;
  jobs: number;
}

const STAGES = ['to workflow started', 'to first task', 'to submit queued', 'to slot taken', 'to submit answered', 'to next task', 'to done'];

/** B's waits and the phase's throughput, on one line. */
function describe(r: Phase): string {
  const ms = (sorted: number[], q: number) => `${quantile(sorted, q).toFixed(0).padStart(6)} ms`;
  return (
    `B submit to slot p50 ${ms(r.bWaits, 0.5)}, p99 ${ms(r.bWaits, 0.99)}; submit to done p50 ${ms(r.bDone, 0.5)}, p99 ${ms(r.bDone, 0.99)}` +
    `; throughput ${r.jobsPerSecond.toFixed(2)} jobs/s (${r.jobs} jobs)`
  );
}

/** How long each of a job's stages took, ms: the increments between its moments from B's submit. */
const increments = (moments: number[]) => moments.map((m, i) => m - (i === 0 ? 0 : moments[i - 1]!));

/**
 * Where B's jobs spent the time from their submit: the median of each stage's duration over B's
 * jobs, and the stages of B's slowest job to its slot (the one its p99 is).
 */
function stages(r: Phase): string[] {
  const durations = r.bStages.map(increments);
  const median = STAGES.map(
    (name, i) =>
      `${name} ${quantile(
        durations.map((d) => d[i]!).sort((x, y) => x - y),
        0.5,
      ).toFixed(0)}`,
  ).join(', ');
  const slowest = durations[r.bStages.reduce((best, st, i) => (st[3]! > r.bStages[best]![3]! ? i : best), 0)]!;
  return [`median ms: ${median}`, `slowest  : ${STAGES.map((name, i) => `${name} ${slowest[i]!.toFixed(0)}`).join(', ')}`];
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? NaN;

async function runPhase(tdb: TestDatabase, name: string, opts: { fairShare: boolean; backlog: number }): Promise<Phase> {
  const config = testConfig(tdb.url, {
    TASK_QUEUE_PREFIX: `bench-fair-${name}-${randomBytes(4).toString('hex')}`,
    PROVIDER_CONCURRENCY: `local=${SLOTS}`,
    FAIR_SHARE: String(opts.fairShare),
    RATE_LIMIT_GENERATE_PER_MIN: '1000000',
    // The reconciler starts a job whose workflow start failed (a start timing out on a loaded machine).
    RECONCILE_INTERVAL_MS: '2000',
  });
  const gw = await startGateway(config, tdb.db);
  const workers = await startWorkers(config, tdb.db);
  try {
    // A few jobs first, so no phase measures the fleet's cold start (workflow sandboxes, pools).
    const warm = await createTenant(tdb.db, 1_000_000);
    await waitAllFinished(tdb.db, await createImages(gw.baseUrl, warm, 2 * SLOTS, `warm-up (${name})`), 300_000);
    const a = await createTenant(tdb.db, 1_000_000);
    const b = await createTenant(tdb.db, 1_000_000);
    const t0 = Date.now();
    const aIds = opts.backlog > 0 ? await createImages(gw.baseUrl, a, opts.backlog, `backlog of A (${name})`) : [];
    const bSubmit = Date.now();
    const bIds = await createImages(gw.baseUrl, b, bJobs, `burst of B (${name})`, bJobs);
    const all = [...aIds, ...bIds];
    await waitAllFinished(tdb.db, all, 900_000);
    const timelines: JobTimeline[] = [];
    for (const id of bIds) timelines.push(await jobTimeline(gw.client, tdb.db, id));
    const rows = await tdb.db.selectFrom('jobs').select(['id', 'finished_at', 'status']).where('id', 'in', all).execute();
    const failed = rows.filter((r) => r.status !== 'completed').length;
    if (failed) console.log(`  (${name}: ${failed} jobs did not complete)`);
    const sorted = (xs: number[]) => xs.sort((x, y) => x - y);
    const end = Math.max(...rows.map((r) => r.finished_at?.getTime() ?? 0));
    return {
      bWaits: sorted(timelines.map((t) => t.submitStarted - bSubmit)),
      bDone: sorted(timelines.map((t) => t.finished - bSubmit)),
      bStages: timelines.map((t) =>
        [t.workflowStarted, t.firstTaskStarted, t.submitScheduled, t.submitStarted, t.submitCompleted, t.nextTaskStarted, t.finished].map((v) => v - bSubmit),
      ),
      jobs: all.length,
      jobsPerSecond: all.length / ((end - t0) / 1000),
    };
  } finally {
    await workers.stop();
    await gw.close();
  }
}

async function main(): Promise<void> {
  const tdb = await createTestDatabase();
  try {
    console.log(`fair share: ${SLOTS} provider slots (local renderer); A's backlog ${aJobs} jobs, B's burst ${bJobs} jobs`);
    const probe = testConfig(tdb.url);
    console.log(`  worker: WORKFLOW_TASK_CONCURRENCY ${probe.WORKFLOW_TASK_CONCURRENCY}, IO_ACTIVITY_CONCURRENCY ${probe.IO_ACTIVITY_CONCURRENCY}`);
    console.log(
      `  load average at the start: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(', ')} (${cpus().length} cores)`,
    );
    // (a), (b) and (c) alternate, `rounds` times each: the idle baseline is sampled as often as the
    // phases compared with it, and a busy moment of the machine weighs on all three.
    type PhaseSpec = [string, string, { fairShare: boolean; backlog: number }];
    const phases: PhaseSpec[] = Array.from({ length: rounds }, (): PhaseSpec[] => [
      ['a', '(a) idle, B alone', { fairShare: true, backlog: 0 }],
      ['b', '(b) behind A, FAIR_SHARE=false', { fairShare: false, backlog: aJobs }],
      ['c', '(c) behind A, FAIR_SHARE=true', { fairShare: true, backlog: aJobs }],
    ]).flat();
    const results = new Map<string, Phase[]>();
    for (const [key, label, opts] of phases) {
      const r = await runPhase(tdb, key, opts);
      results.set(key, [...(results.get(key) ?? []), r]);
      console.log(`  ${label.padEnd(32)} ${describe(r)}`);
    }
    /** A phase's runs together: every wait, and all their jobs over all their time. */
    const pooled = (key: string): Phase => {
      const runs = results.get(key)!;
      const jobs = runs.reduce((n, r) => n + r.jobs, 0);
      return {
        bWaits: runs.flatMap((r) => r.bWaits).sort((x, y) => x - y),
        bDone: runs.flatMap((r) => r.bDone).sort((x, y) => x - y),
        bStages: runs.flatMap((r) => r.bStages),
        jobs,
        jobsPerSecond: jobs / runs.reduce((t, r) => t + r.jobs / r.jobsPerSecond, 0),
      };
    };
    const [a, b, c] = [pooled('a'), pooled('b'), pooled('c')];
    console.log(`  over ${rounds} round(s) of (a), (b) and (c):`);
    for (const [label, r] of [
      ['(a) idle', a],
      ['(b) FIFO', b],
      ['(c) fair', c],
    ] as const) {
      console.log(`    ${label.padEnd(10)} ${describe(r)}`);
      for (const line of stages(r)) console.log(`    ${''.padEnd(10)} B's stages, ${line}`);
    }
    const p99 = (r: Phase, which: 'bWaits' | 'bDone') => quantile(r[which], 0.99);
    console.log(
      `  B's p99 from submit, fair over idle: to slot ${(p99(c, 'bWaits') / p99(a, 'bWaits')).toFixed(2)}x, to done ${(p99(c, 'bDone') / p99(a, 'bDone')).toFixed(2)}x (target at most 2x)`,
    );
    console.log(
      `  B's p99 from submit, FIFO over fair: to slot ${(p99(b, 'bWaits') / p99(c, 'bWaits')).toFixed(1)}x, to done ${(p99(b, 'bDone') / p99(c, 'bDone')).toFixed(1)}x`,
    );
    console.log(`  throughput, fair over FIFO: ${(c.jobsPerSecond / b.jobsPerSecond).toFixed(3)} (target at least 0.95)`);
    console.log(
      `  load average at the end: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(', ')} (${cpus().length} cores)`,
    );
  } finally {
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
