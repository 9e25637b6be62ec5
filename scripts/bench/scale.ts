// Benchmark (not a test): flat at a million jobs. On the test stack in the environment
// (eval "$(scripts/stack.sh up test)"), in one run, two databases of their own on its Postgres
// cluster, each served by its own gateway and worker fleet in this process:
//   - `bench_scale_empty`: the measured workspace with a few hundred jobs, nothing else;
//   - `bench_scale_full`: 1,000,000 finished jobs over 1,000 workspaces (the measured workspace
//     holds 100,000 of them), with the ledger, webhook outbox and idempotency rows they imply, all
//     written by Postgres itself (INSERT … SELECT generate_series); and jobs in flight: `held` real
//     workflows parked on a slow provider (the local renderer with a long latency, its poll hint
//     stretched to the whole latency, so a parked job costs no task until the bench ends), plus
//     in-flight rows without a workflow up to `inFlight` in all.
// Requests alternate between the two gateways, so the machine's noise hits both alike, and each
// figure is printed for both with their ratio: status read p50/p99, each list filter's p99 (one
// matches nothing), create p99, GET /v1/usage for a month of a workspace whose history is the same
// in both (`usageJobs` jobs), the label filters' and the event log's p50 and p99 (each label
// filter fills a page of 50 on both sides: the empty side's labels are denser); then, in a third
// database (`bench_scale_skew`), one workspace holding `failed` failed jobs against one holding 10:
// every status filter of GET /v1/jobs (completed matches nothing); then the reconciler's pass time
// and Temporal calls per pass and per minute, the time to settle 100 terminated jobs against the
// reconcile interval, and the table and index sizes. The databases are dropped at the end (BENCH_KEEP=1 keeps them).
//
// With `reads-only`, the loads and the timed reads alone (no held workflows, creates, usage, skewed
// workspace or reconciler).
//
//   npm run build:all && npm run bench:scale [-- jobs=1000000 held=2000 inFlight=5000 usageJobs=2000 failed=300000 reads-only]
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import type { Database } from '../../db/index.js';
import { createTenant, requireStackEnv, testConfig } from '../../test/support/stack.js';
import { startGateway, startWorkers, type InProcessGateway, type Workers } from '../../test/support/services.js';
import { createProject } from '../../db/repos/workspaces.js';
import { insertJobWithCharge } from '../../db/repos/jobs.js';
import { newId } from '../../shared/ids.js';
import { jobToStart, startJobWorkflow } from '../../workflows/client.js';
import { pino } from 'pino';
import { reconcilerOf } from '../../test/support/reconciler.js';
import { inFlightStatuses } from '../../jobs/index.js';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { explainJobListPage } from '../../test/support/job-rows.js';
import type { JobListFilters } from '../../db/repos/job-lists.js';
import { admin, dbUrl, freshDatabase, HOLD_LATENCY_MS, loadFailedHistory, loadHistory, loadInFlightRows, loadUsageMonth, WORKSPACES } from './scale-data.js';
import { jobStatuses } from '../../shared/job-model.js';
import { alternate, call, pct, printTable, report, rows, type Side } from './scale-measure.js';
import { eventsPath, explainEventsPage, logEnds, midLog, planFigures, type EventPage } from './scale-events.js';
import { foldUsageDeltas } from '../../db/repos/usage.js';

const arg = (name: string, fallback: number) =>
  Number(
    process.argv
      .slice(2)
      .find((a) => a.startsWith(`${name}=`))
      ?.split('=')[1] ?? fallback,
  );
const TOTAL_JOBS = arg('jobs', 1_000_000);
/** `reads-only`: the loads and the timed reads (status, lists, labels, event log) alone: no held
 * workflows, creates, usage, skewed workspace or reconciler (a quicker run of what reads cost). */
const READS_ONLY = process.argv.slice(2).includes('reads-only');
const HELD = READS_ONLY ? 0 : arg('held', 2_000);
const IN_FLIGHT = Math.max(arg('inFlight', 5_000), HELD);
const MEASURED_SHARE = 0.1; // of the history, in the measured workspace
const EMPTY_JOBS = 400; // the measured workspace's history in the empty database: pages for every filter
const TERMINATED = 100;
/** The usage workspace's month, the same in both databases. */
const USAGE_JOBS = arg('usageJobs', 2_000);
/** Failed jobs of the workspace holding most of the history in the skewed database. */
const SKEWED_FAILED = arg('failed', 300_000);
/** RECONCILE_INTERVAL_MS's default: the bench's own reconciler passes run at it. */
const RECONCILE_INTERVAL = 15_000;

const started = performance.now();
const elapsed = () => `${((performance.now() - started) / 1000).toFixed(0)} s`;
const log = (msg: string) => console.log(`[${elapsed()}] ${msg}`);

// ------------------------------------------------------------------ slow provider for held jobs

/**
 * The local renderer answers "running" with a poll hint of at most 2 s; held jobs are told to come
 * back only when their (long) latency is over, so a parked job costs no task while it waits.
 */
const parkHeldJobs: ActivityInterceptorsFactory = (ctx) => ({
  inbound: {
    async execute(input, next) {
      const result = (await next(input)) as { nextPollMs?: number; stored?: unknown } | undefined;
      const type = ctx.info.activityType;
      if ((type === 'submitAndCheck' || type === 'checkProvider') && result && !result.stored && result.nextPollMs !== undefined) {
        result.nextPollMs = HOLD_LATENCY_MS;
      }
      return result;
    },
  },
});

// ------------------------------------------------------------------ the run

/**
 * One workspace holding most of the history (SKEWED_FAILED failed jobs) and one holding 10, in a
 * database of their own served by one gateway: every status filter of GET /v1/jobs, the two
 * workspaces' requests alternating. `completed` matches nothing in either.
 */
async function skewedWorkspace(env: Record<string, string>): Promise<void> {
  const db = await freshDatabase('bench_scale_skew');
  const config = testConfig(dbUrl('bench_scale_skew'), { LOG_LEVEL: 'warn', RATE_LIMIT_POLL_PER_MIN: '1000000', DATABASE_POOL_SIZE: '20', ...env });
  let gw: InProcessGateway | undefined;
  try {
    const [big, small] = [await createTenant(db, 0), await createTenant(db, 0)];
    const t0 = performance.now();
    await loadFailedHistory(db, big, small, SKEWED_FAILED);
    log(`loaded ${SKEWED_FAILED.toLocaleString('en')} failed jobs into one workspace and 10 into another in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    gw = await startGateway(config, db);
    const as = (name: 'empty' | 'full', tenant: typeof big): Side => ({
      name,
      db,
      config,
      tenant,
      project2: '',
      jobIds: [],
      gw: gw!,
      workers: null as unknown as Workers,
    });
    // "empty" is the 10-job workspace, "full" the one holding the history.
    const pair: [Side, Side] = [as('empty', small), as('full', big)];
    const skewRows: string[][] = [];
    for (const path of [...jobStatuses.map((st) => `/v1/jobs?status=${st}`), '/v1/images?status=completed', '/v1/jobs']) {
      await alternate(pair, 20, (s) => call(s.gw.baseUrl, 'GET', path, s.tenant.apiKey));
      const lat = await alternate(pair, 300, (s) => call(s.gw.baseUrl, 'GET', path, s.tenant.apiKey));
      const [e, f] = [pct(lat[0], 0.99), pct(lat[1], 0.99)];
      const [e50, f50] = [pct(lat[0], 0.5), pct(lat[1], 0.5)];
      skewRows.push([`GET ${path}`, e50.toFixed(2), f50.toFixed(2), (f50 / e50).toFixed(2), e.toFixed(2), f.toFixed(2), (f / e).toFixed(2)]);
    }
    console.log(
      `\nstatus filters with ${SKEWED_FAILED.toLocaleString('en')} failed jobs in one workspace (ms, requests alternating between the two workspaces)`,
    );
    printTable(['', '10 jobs p50', 'failed p50', 'ratio', '10 jobs p99', 'failed p99', 'ratio'], skewRows);
  } finally {
    await gw?.close();
    await db.destroy();
    if (process.env.BENCH_KEEP !== '1') await admin((c) => c.query('drop database if exists bench_scale_skew with (force)'));
  }
}

/** Creates (with an Idempotency-Key, workflow start included) and a month of usage, both sides alternating. */
async function createsAndUsage(sides: [Side, Side], usageTenants: Side['tenant'][]): Promise<void> {
  const creates = await alternate(sides, 200, (s, i) =>
    call(
      s.gw.baseUrl,
      'POST',
      '/v1/images/generate',
      s.tenant.apiKey,
      { project_id: s.tenant.projectId, prompt: `bench create ${i}`, model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 },
      { 'idempotency-key': `bench-${s.name}-${i}` },
    ),
  );
  report('create p50', 0.5, creates);
  report('create p99', 0.99, creates);

  // A month of usage of a workspace with the same history in both databases: the report reads its
  // own rows, whatever else the tables hold.
  const monthFrom = new Date(Date.now() - 30 * 86_400_000).toISOString();
  const monthTo = new Date(Date.now() + 60_000).toISOString();
  const usageSides = sides.map((s, i) => ({ ...s, tenant: usageTenants[i]! })) as [Side, Side];
  for (const [label, extra] of [
    [`GET /v1/usage (a month by day, ${USAGE_JOBS} jobs)`, ''],
    [`GET /v1/usage (a month by day and model, kind, key)`, '&group_by=model,kind,key'],
  ] as const) {
    const lat = await alternate(usageSides, 100, (s) => call(s.gw.baseUrl, 'GET', `/v1/usage?from=${monthFrom}&to=${monthTo}${extra}`, s.tenant.apiKey));
    report(`${label} p50`, 0.5, lat);
    report(`${label} p99`, 0.99, lat);
  }
}

/** Table and index sizes of both databases. */
async function printSizes(emptyDb: Database, fullDb: Database): Promise<void> {
  console.log('\ntable and index sizes (MB)');
  const sizeRows: string[][] = [];
  const sizes = async (db: Database) =>
    (
      await sql<{ name: string; kind: string; mb: string; rows: string }>`
        select c.relname as name, case c.relkind when 'i' then 'index' else 'table' end as kind,
               round(pg_relation_size(c.oid) / 1048576.0, 1)::text as mb, c.reltuples::bigint::text as rows
        from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = 'public' and c.relkind in ('r', 'i') and c.relname not like 'kysely%'
          and (c.relname like 'jobs%' or c.relname like 'credit_ledger%' or c.relname like 'webhook_deliveries%' or c.relname like 'idempotency_keys%'
               or c.relname like 'file_uploads%' or c.relname like 'rate_limits%' or c.relname like 'job_labels%' or c.relname like 'workspace_events%')
        order by c.relname`.execute(db)
    ).rows;
  const [se, sf] = [await sizes(emptyDb), await sizes(fullDb)];
  for (const r of sf) sizeRows.push([r.name, r.kind, r.rows, se.find((x) => x.name === r.name)?.mb ?? '-', r.mb]);
  printTable(['relation', 'kind', 'rows (1M db)', 'empty db MB', '1M db MB'], sizeRows);
}

async function side(name: 'empty' | 'full', overrides: Record<string, string>): Promise<Side> {
  const db = await freshDatabase(`bench_scale_${name}`);
  const config = testConfig(dbUrl(`bench_scale_${name}`), {
    LOG_LEVEL: 'warn',
    RATE_LIMIT_GENERATE_PER_MIN: '1000000',
    RATE_LIMIT_POLL_PER_MIN: '1000000',
    DATABASE_POOL_SIZE: '20',
    ...overrides,
  });
  const tenant = await createTenant(db, 1_000_000_000);
  const project2 = (await createProject(db, tenant.workspaceId, 'second')).id;
  return { name, db, config, tenant, project2, jobIds: [], gw: null as unknown as InProcessGateway, workers: null as unknown as Workers };
}

async function main() {
  requireStackEnv();
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const keep = process.env.BENCH_KEEP === '1';
  log(`bench:scale: ${TOTAL_JOBS.toLocaleString('en')} finished jobs over ${WORKSPACES} workspaces, ${HELD} held workflows, ${IN_FLIGHT} in flight in all`);
  // Both sides park their jobs at the slow provider (nothing renders while requests are timed), and
  // their fleets' reconcilers stay idle: the bench runs its own, at the default interval.
  const sideEnv = { LOCAL_RENDER_LATENCY_MS: String(HOLD_LATENCY_MS), RECONCILE_INTERVAL_MS: '3600000' };
  const empty = await side('empty', sideEnv);
  const full = await side('full', sideEnv);
  const sides: [Side, Side] = [empty, full];
  try {
    let t = performance.now();
    await loadHistory(empty.db, empty, EMPTY_JOBS, 0);
    await loadHistory(full.db, full, Math.round(TOTAL_JOBS * MEASURED_SHARE), TOTAL_JOBS - Math.round(TOTAL_JOBS * MEASURED_SHARE));
    await loadInFlightRows(full.db, IN_FLIGHT - HELD);
    const usageTenants = await Promise.all(sides.map((s) => createTenant(s.db, 0)));
    for (const [i, s] of sides.entries()) await loadUsageMonth(s.db, usageTenants[i]!, USAGE_JOBS);
    // The usage the triggers counted during the load joins the daily rollups, as the reconciler's pass would.
    for (const s of sides) await foldUsageDeltas(s.db);
    log(
      `loaded the history (${TOTAL_JOBS.toLocaleString('en')} jobs, ledger, outbox, idempotency keys) and ${IN_FLIGHT - HELD} in-flight rows in ${((performance.now() - t) / 1000).toFixed(0)} s`,
    );
    for (const s of sides) {
      s.jobIds = (
        await s.db
          .selectFrom('jobs')
          .select('id')
          .where('workspace_id', '=', s.tenant.workspaceId)
          .where('kind', '=', 'image')
          .orderBy('created_at', 'desc')
          .limit(2000)
          .execute()
      ).map((r) => r.id);
      s.gw = await startGateway(s.config, s.db);
      s.workers = await startWorkers(s.config, s.db, 'all', { activityInterceptors: [parkHeldJobs] });
    }

    // Jobs held in flight: the gateway's create path (one statement) and its workflow start, 24 at a time.
    t = performance.now();
    const heldTenant = await createTenant(full.db, 1_000_000_000);
    const held: string[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 24 }, async () => {
        while (next < HELD) {
          next++;
          const job = await insertJobWithCharge(full.db, {
            id: newId('img'),
            kind: 'image',
            workspaceId: heldTenant.workspaceId,
            projectId: heldTenant.projectId,
            apiKeyId: heldTenant.apiKeyId,
            model: 'nano-banana-2',
            params: { prompt: 'held in flight', aspect_ratio: '1:1', count: 1, provider: 'local', deadline_seconds: 7200 },
            price: 4,
          });
          await startJobWorkflow(full.gw.client, jobToStart(job, full.config.TASK_QUEUE_PREFIX));
          held.push(job.id);
        }
      }),
    );
    for (;;) {
      const r = await full.db
        .selectFrom('jobs')
        .select(sql<number>`count(*)::int`.as('n'))
        .where('workspace_id', '=', heldTenant.workspaceId)
        .where('provider_ref', 'is not', null)
        .executeTakeFirstOrThrow();
      if (r.n >= HELD) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    log(`${HELD} workflows held at the slow provider (started, claimed, submitted, parked on a timer) in ${((performance.now() - t) / 1000).toFixed(0)} s`);

    // Warm both sides' pools and caches.
    await alternate(sides, 200, (s, i) => call(s.gw.baseUrl, 'GET', `/v1/images/${s.jobIds[i % s.jobIds.length]}`, s.tenant.apiKey));

    const n = 1000;
    const reads = await alternate(sides, n * 2, (s, i) => call(s.gw.baseUrl, 'GET', `/v1/images/${s.jobIds[(i * 7919) % s.jobIds.length]}`, s.tenant.apiKey));
    report('status read p50', 0.5, reads);
    report('status read p99', 0.99, reads);

    const hourAgo = Date.now() - 3_600_000 - 86_400_000;
    const listFilters: [string, JobListFilters | ((s: Side) => JobListFilters)][] = [
      ['/v1/jobs', {}],
      ['status=failed', { status: 'failed' }],
      ['status=completed', { status: 'completed' }],
      ['model=sora-2', { model: 'sora-2' }],
      ['project_id=(10% project)', (s) => ({ projectId: s.project2 })],
      ['created_before=(a day back)', { createdBefore: hourAgo }],
      ['/v1/videos', { kind: 'video' }],
      ['/v1/images?status=failed', { kind: 'image', status: 'failed' }],
      ['/v1/talking-actors?model=talking-actor', { kind: 'talking_actor', model: 'talking-actor' }],
      ['model=veo-3.1 (nothing)', { model: 'veo-3.1' }],
      ['/v1/videos?status=pending (nothing)', { kind: 'video', status: 'pending' }],
      ['tag=team-3 (10%)', { labels: ['t:team-3'] }],
      ['tag=rare (0.1%)', { labels: ['t:rare'] }],
      ['metadata[customer]=cus_13 (1%)', { labels: ['m:customer=cus_13'] }],
      ['tag=team-3&metadata[customer]=cus_13 (1%)', { labels: ['t:team-3', 'm:customer=cus_13'] }],
    ];
    const filters: [string, (s: Side) => string][] = [
      ['GET /v1/jobs', () => '/v1/jobs'],
      ['GET /v1/jobs?status=failed', () => '/v1/jobs?status=failed'],
      ['GET /v1/jobs?status=completed', () => '/v1/jobs?status=completed'],
      ['GET /v1/jobs?model=sora-2', () => '/v1/jobs?model=sora-2'],
      ['GET /v1/jobs?project_id=(10% project)', (s) => `/v1/jobs?project_id=${s.project2}`],
      ['GET /v1/jobs?created_before=(a day back)', () => `/v1/jobs?created_before=${hourAgo}`],
      ['GET /v1/videos', () => '/v1/videos'],
      ['GET /v1/images?status=failed', () => '/v1/images?status=failed'],
      ['GET /v1/talking-actors?model=talking-actor', () => '/v1/talking-actors?model=talking-actor'],
      ['GET /v1/jobs?model=veo-3.1 (matches nothing)', () => '/v1/jobs?model=veo-3.1'],
      ['GET /v1/videos?status=pending (matches nothing)', () => '/v1/videos?status=pending'],
      // The label filters (0115_labels): each walks its label's index (db/repos/label-filters.ts).
      ['GET /v1/jobs?tag=team-3 (10% of the jobs)', () => '/v1/jobs?tag=team-3'],
      ['GET /v1/jobs?tag=rare (0.1%; 1 in 8 of the empty one)', () => '/v1/jobs?tag=rare'],
      ['GET /v1/jobs?metadata[customer]=cus_13 (1%)', () => '/v1/jobs?metadata[customer]=cus_13'],
      ['GET /v1/jobs?tag=team-3&metadata[customer]=cus_13 (1%)', () => '/v1/jobs?tag=team-3&metadata[customer]=cus_13'],
      ['GET /v1/videos?tag=team-3', () => '/v1/videos?tag=team-3'],
    ];
    // The label filters and the event log (issue 56's mark: within 1.5x of the empty workspace at a
    // million jobs) print p50 and p99; the other lists their p99.
    for (const [label, path] of filters) {
      const lat = await alternate(sides, 300, (s) => call(s.gw.baseUrl, 'GET', path(s), s.tenant.apiKey));
      if (label.includes('tag=') || label.includes('metadata[')) report(`${label} p50`, 0.5, lat);
      report(`${label} p99`, 0.99, lat);
    }
    // The event log (docs/api/events.md): a follower at its tail, a reader catching up from the
    // oldest event kept (all types, and completions only), and one from the middle of the log; the
    // full side's log holds 30 days of 100,000 jobs' events, the empty side's 30 days of 400.
    const ends = new Map(await Promise.all(sides.map(async (s) => [s.name, await logEnds(s)] as const)));
    const eventReads: [string, (s: Side) => EventPage][] = [
      ['GET /v1/events?after=(tail - 10)', (s) => ({ after: Math.max(0, ends.get(s.name)!.last - 10) })],
      ['GET /v1/events?after=(oldest kept)', (s) => ({ after: ends.get(s.name)!.first - 1 })],
      ['GET /v1/events?after=(oldest kept)&types=job.completed', (s) => ({ after: ends.get(s.name)!.first - 1, types: 'job.completed' })],
      ['GET /v1/events?after=(mid-log)&types=job.failed', (s) => ({ after: midLog(ends.get(s.name)!), types: 'job.failed' })],
    ];
    log(`event log: ${[...ends].map(([n, e]) => `${n} seq ${e.first}..${e.last}`).join(', ')} in the measured workspace`);
    for (const [label, page] of eventReads) {
      const lat = await alternate(sides, 300, (s) => call(s.gw.baseUrl, 'GET', eventsPath(page(s)), s.tenant.apiKey));
      report(`${label} p50`, 0.5, lat);
      report(`${label} p99`, 0.99, lat);
    }
    // What each page reads in Postgres, whatever the machine's noise: buffers touched by the page's query.
    const bufferRows: string[][] = [];
    for (const [label, filters] of listFilters) {
      const read = await Promise.all(
        sides.map(async (s) => {
          const f = typeof filters === 'function' ? filters(s) : filters;
          return planFigures(await explainJobListPage(s.db, s.tenant.workspaceId, { limit: 50, filters: f }));
        }),
      );
      bufferRows.push([label, read[0]!.rows, String(read[0]!.buffers), read[0]!.ms, read[1]!.rows, String(read[1]!.buffers), read[1]!.ms]);
    }
    for (const [label, page] of eventReads) {
      const read = await Promise.all(sides.map(async (s) => planFigures(await explainEventsPage(s, page(s)))));
      bufferRows.push([label, read[0]!.rows, String(read[0]!.buffers), read[0]!.ms, read[1]!.rows, String(read[1]!.buffers), read[1]!.ms]);
    }

    if (!READS_ONLY) await createsAndUsage(sides, usageTenants);
    console.log('\nlatency in ms, requests alternating between the two gateways');
    printTable(['', 'empty db', '1M jobs', 'ratio'], rows);
    console.log('\neach list page in Postgres (EXPLAIN ANALYZE of the query the gateway sends, limit 50): rows returned, 8 kB buffers touched, execution ms');
    printTable(['', 'empty rows', 'buffers', 'ms', '1M rows', 'buffers', 'ms'], bufferRows);

    if (READS_ONLY) {
      await printSizes(empty.db, full.db);
      log('done (reads only)');
      return;
    }
    await skewedWorkspace(sideEnv);

    // The reconciler: passes with everything in flight and nothing to settle, on both sides. The
    // in-flight rows without a workflow stand for healthy running jobs, whose progress writes keep
    // them fresh: touched now, or a slow load (a busy machine) would age them past
    // RECONCILE_STALE_AFTER_MS and every pass would check 100 of them against Temporal.
    await sql`update jobs set updated_at = now() where id like 'vid\\_flight%'`.execute(full.db);
    console.log('\nreconciler passes (nothing to settle)');
    const passRows: string[][] = [];
    for (const s of sides) {
      const r = reconcilerOf({ config: s.config, db: s.db, storage: s.workers.service.storage, client: s.gw.client, logger: pino({ level: 'silent' }) });
      const times: number[] = [];
      let calls = 0;
      for (let i = 0; i < 10; i++) {
        const t0 = performance.now();
        const pass = await r.runOnce();
        times.push(performance.now() - t0);
        calls += pass.temporalCalls;
      }
      const inFlight = await s.db
        .selectFrom('jobs')
        .select(sql<number>`count(*)::int`.as('n'))
        .where('status', 'in', inFlightStatuses)
        .executeTakeFirstOrThrow();
      const perPass = calls / 10;
      passRows.push([
        s.name === 'empty' ? 'empty db' : '1M jobs',
        String(inFlight.n),
        pct(times, 0.5).toFixed(1),
        pct(times, 0.99).toFixed(1),
        perPass.toFixed(1),
        ((perPass * 60_000) / RECONCILE_INTERVAL).toFixed(1),
      ]);
    }
    printTable(['', 'in flight', 'pass p50 ms', 'pass max ms', 'Temporal calls/pass', 'calls/min (one replica)'], passRows);

    // 100 held jobs terminated (which skips workflow code) while a reconciler runs a pass every
    // RECONCILE_INTERVAL_MS (the default, 15 s), its phase against the terminations arbitrary.
    const interval = RECONCILE_INTERVAL;
    const reconciler = reconcilerOf({
      config: full.config,
      db: full.db,
      storage: full.workers.service.storage,
      client: full.gw.client,
      logger: pino({ level: 'silent' }),
    });
    const victims = held.slice(0, TERMINATED);
    const passes: { at: number; ms: number; settled: number; calls: number }[] = [];
    let loopOn = true;
    const loop = (async () => {
      while (loopOn) {
        const t0 = performance.now();
        const p = await reconciler.runOnce();
        passes.push({ at: t0, ms: performance.now() - t0, settled: p.settled.length, calls: p.temporalCalls });
        await new Promise((r) => setTimeout(r, Math.max(0, interval - (performance.now() - t0))));
      }
    })();
    let closedAt = 0;
    let settleMs: number;
    // The loop's pass ends before anything is torn down, on every path: a pass still running when
    // the databases close would crash the process and hide why the wait gave up.
    try {
      await new Promise((r) => setTimeout(r, 4_000));
      await Promise.all(victims.map((id) => full.gw.client.workflow.getHandle(id).terminate('bench: terminated by an operator')));
      closedAt = performance.now();
      for (;;) {
        const r = await full.db
          .selectFrom('jobs')
          .select(sql<number>`count(*)::int`.as('n'))
          .where('id', 'in', victims)
          .where('status', '=', 'failed')
          .where(sql<boolean>`exists (select 1 from credit_ledger l where l.job_id = jobs.id and l.reason = 'refund')`)
          .executeTakeFirstOrThrow();
        if (r.n === TERMINATED) break;
        if (performance.now() - closedAt > 120_000) throw new Error(`only ${r.n} of ${TERMINATED} terminated jobs settled after 120 s`);
        await new Promise((r) => setTimeout(r, 100));
      }
      settleMs = performance.now() - closedAt;
    } finally {
      loopOn = false;
      await loop;
    }
    console.log(
      `\n${TERMINATED} terminated jobs settled and refunded ${(settleMs / 1000).toFixed(1)} s after they closed (a pass every ${interval / 1000} s; ${HELD - TERMINATED} held jobs and ${IN_FLIGHT - HELD} other jobs still in flight)`,
    );
    for (const p of passes)
      console.log(`  pass at +${((p.at - closedAt) / 1000).toFixed(1)} s: ${p.ms.toFixed(0)} ms, settled ${p.settled}, ${p.calls} Temporal calls`);

    await printSizes(empty.db, full.db);
    log('done');
  } finally {
    // Nothing keeps running in the shared Temporal namespace: one batch ends every workflow of the
    // bench's queues (the server runs few batches at once: wait for a slot).
    const queues = sides.map((s) => `'${s.config.TASK_QUEUE_PREFIX}-workflows'`).join(', ');
    for (let attempt = 0; ; attempt++) {
      try {
        await full.gw?.client.workflowService.startBatchOperation({
          namespace: full.config.TEMPORAL_NAMESPACE,
          visibilityQuery: `TaskQueue IN (${queues}) AND ExecutionStatus = 'Running'`,
          jobId: `bench-scale-cleanup-${full.config.TASK_QUEUE_PREFIX}`,
          reason: 'bench:scale is over',
          terminationOperation: {},
        });
        break;
      } catch (err) {
        if (attempt >= 30 || !/concurrent batch/i.test((err as Error).message)) {
          console.error(`could not terminate the bench's workflows: ${(err as Error).message}`);
          break;
        }
        await new Promise((r) => setTimeout(r, 2_000));
      }
    }
    for (const s of sides) {
      await s.workers?.stop();
      await s.gw?.close();
      await s.db.destroy();
      if (!keep) await admin((c) => c.query(`drop database if exists bench_scale_${s.name} with (force)`));
    }
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
