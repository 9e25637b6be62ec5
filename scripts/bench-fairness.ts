// Benchmark (not a test): what fair share per workspace buys a small workspace, and what it costs,
// on the real stack in the environment (eval "$(scripts/stack.sh up test)": a Temporal server with
// matching.enableFairness on and one partition per queue). The gateway and a worker fleet (every
// role) run in-process; the local renderer is the provider, on a route of 4 slots
// (PROVIDER_CONCURRENCY local=4). Three phases, each on task queues of its own (its own prefix):
//   (a) idle:      workspace B submits its burst of jobs on an otherwise empty system;
//   (b) FIFO:      workspace A submits its backlog, then B submits the same burst, FAIR_SHARE=false;
//   (c) fair:      the same as (b) with FAIR_SHARE=true.
// B's wait is measured two ways, from its workflow history: from the job's creation (the row's
// created_at) to the moment a provider slot took its first provider step (the ActivityTaskStarted
// event of submitAndCheck), and that step's time in the provider's task queue (from its
// ActivityTaskScheduled event), the part Temporal's fair dispatch orders.
// Throughput is every job of the phase (A's and B's) over the time from the first create to the last
// job finished. (b) and (c) run in alternating rounds (2 by default) and their figures are pooled.
// Each phase first runs a few jobs of a third workspace, so none measures its fleet's
// cold start. Prints B's wait p50 / p99 per phase, (c)'s p99 over (a)'s, and the throughput of (c)
// over (b). Targets: (c) p99 within 2x of (a); throughput ratio at least 0.95. Asserts nothing.
//
//   npm run build:all && npm run bench:fairness [-- <A's jobs, 300> <B's jobs, 5> <rounds of (b) and (c), 2>]
import { randomBytes } from 'node:crypto';
import { createTestDatabase, createTenant, testConfig, type TestDatabase } from '../test/support/stack.js';
import { startGateway, startWorkers } from '../test/support/services.js';
import { createImages, providerSteps, waitAllFinished } from '../test/support/fair-share.js';

const aJobs = Number(process.argv[2] ?? 300);
const bJobs = Number(process.argv[3] ?? 5);
const rounds = Number(process.argv[4] ?? 2);
const SLOTS = 4;

interface Phase {
  /** B's waits from create to a provider slot, ms, sorted. */
  bWaits: number[];
  /** B's waits in the provider's task queue (its provider step queued to taken), ms, sorted. */
  bQueueWaits: number[];
  jobsPerSecond: number;
  jobs: number;
}

/** B's waits, both ways, and the phase's throughput, on one line. */
function describe(r: Phase): string {
  const ms = (sorted: number[], q: number) => `${quantile(sorted, q).toFixed(0).padStart(6)} ms`;
  return (
    `B create to slot p50 ${ms(r.bWaits, 0.5)}, p99 ${ms(r.bWaits, 0.99)}; in the provider queue p50 ${ms(r.bQueueWaits, 0.5)}, p99 ${ms(r.bQueueWaits, 0.99)}` +
    `; throughput ${r.jobsPerSecond.toFixed(2)} jobs/s (${r.jobs} jobs)`
  );
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
    const bIds = await createImages(gw.baseUrl, b, bJobs, `burst of B (${name})`, bJobs);
    const all = [...aIds, ...bIds];
    await waitAllFinished(tdb.db, all, 900_000);
    const steps = await providerSteps(gw.client, bIds);
    const rows = await tdb.db.selectFrom('jobs').select(['id', 'created_at', 'finished_at', 'status']).where('id', 'in', all).execute();
    const failed = rows.filter((r) => r.status !== 'completed').length;
    if (failed) console.log(`  (${name}: ${failed} jobs did not complete)`);
    const createdAt = new Map(rows.map((r) => [r.id, r.created_at.getTime()]));
    const bWaits = bIds.map((id) => steps.get(id)!.started - createdAt.get(id)!).sort((x, y) => x - y);
    const bQueueWaits = bIds.map((id) => steps.get(id)!.started - steps.get(id)!.scheduled).sort((x, y) => x - y);
    const end = Math.max(...rows.map((r) => r.finished_at?.getTime() ?? 0));
    return { bWaits, bQueueWaits, jobs: all.length, jobsPerSecond: all.length / ((end - t0) / 1000) };
  } finally {
    await workers.stop();
    await gw.close();
  }
}

async function main(): Promise<void> {
  const tdb = await createTestDatabase();
  try {
    console.log(`fair share: ${SLOTS} provider slots (local renderer); A's backlog ${aJobs} jobs, B's burst ${bJobs} jobs`);
    // (b) and (c) alternate, `rounds` times each, so a busy moment of the machine weighs on both.
    const phases: Array<[string, string, { fairShare: boolean; backlog: number }]> = [
      ['a', '(a) idle, B alone', { fairShare: true, backlog: 0 }],
      ...Array.from({ length: rounds }, () => [
        ['b', '(b) behind A, FAIR_SHARE=false', { fairShare: false, backlog: aJobs }] as [string, string, { fairShare: boolean; backlog: number }],
        ['c', '(c) behind A, FAIR_SHARE=true', { fairShare: true, backlog: aJobs }] as [string, string, { fairShare: boolean; backlog: number }],
      ]).flat(),
    ];
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
        bQueueWaits: runs.flatMap((r) => r.bQueueWaits).sort((x, y) => x - y),
        jobs,
        jobsPerSecond: jobs / runs.reduce((t, r) => t + r.jobs / r.jobsPerSecond, 0),
      };
    };
    const [a, b, c] = [pooled('a'), pooled('b'), pooled('c')];
    console.log(`  over ${rounds} round(s) of (b) and (c):`);
    for (const [label, r] of [
      ['(a) idle', a],
      ['(b) FIFO', b],
      ['(c) fair', c],
    ] as const) {
      console.log(`    ${label.padEnd(10)} ${describe(r)}`);
    }
    const p99 = (r: Phase, which: 'bWaits' | 'bQueueWaits') => quantile(r[which], 0.99);
    console.log(
      `  B's p99, fair over idle: create to slot ${(p99(c, 'bWaits') / p99(a, 'bWaits')).toFixed(2)}x, in the provider queue ${(p99(c, 'bQueueWaits') / p99(a, 'bQueueWaits')).toFixed(2)}x (target at most 2x)`,
    );
    console.log(
      `  B's p99, FIFO over fair: create to slot ${(p99(b, 'bWaits') / p99(c, 'bWaits')).toFixed(1)}x, in the provider queue ${(p99(b, 'bQueueWaits') / p99(c, 'bQueueWaits')).toFixed(1)}x`,
    );
    console.log(`  throughput, fair over FIFO: ${(c.jobsPerSecond / b.jobsPerSecond).toFixed(3)} (target at least 0.95)`);
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
