// Benchmark (not a test): one workspace's heavy usage reads against another workspace's status
// polls, on the real stack in the environment (eval "$(scripts/stack.sh up test)"). A real gateway
// process (`node dist/api/server.js`, default USAGE_STATEMENT_TIMEOUT_MS and
// USAGE_MAX_CONCURRENT_PER_WORKSPACE) serves workspace A, with a year of usage (50,000 charged
// jobs, folded into the daily rollups as the reconciler would), and workspace B, with one job.
// Phase 1: B polls its job's status alone (4 connections, closed loop). Phase 2: the same polls
// while A keeps 20 year-long GET /v1/usage calls in flight (grouped by model and kind). It prints
// the machine's load average, B's status p50/p99 in each phase, and A's usage answers by status
// (200 served, 429 over the workspace's concurrency cap, 503 past the statement timeout, anything
// else, which would be a silent failure, counted apart), and checks that every 200 carried the
// whole year (its totals equal the ledger's): a read cut by its timeout never answers 200. It
// asserts nothing. docs/api/limits.md states the bound these figures are held to.
//
//   npm run build:all && npm run bench:usage [-- seconds=15 heavy=50000]
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { foldUsageDeltas } from '../../db/repos/usage.js';
import { createTenant, createTestDatabase, insertImageJob } from '../../test/support/stack.js';
import { seedYearOfUsage } from '../../test/support/usage-seed.js';
import { spawnGateway } from '../../test/integration/gateway-harness.js';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.split('=') as [string, string]));
const SECONDS = Number(args.seconds ?? 15);
const HEAVY_ROWS = Number(args.heavy ?? 50_000);
const USAGE_IN_FLIGHT = 20;
const STATUS_CONNECTIONS = 4;
const YEAR = '/v1/usage?from=2026-01-01T00:00:00Z&to=2027-01-01T00:00:00Z&group_by=model,kind';

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! : NaN;
};

async function main(): Promise<void> {
  const tdb = await createTestDatabase();
  const a = await createTenant(tdb.db);
  const b = await createTenant(tdb.db);
  const seeded = performance.now();
  await seedYearOfUsage(tdb.db, a, HEAVY_ROWS);
  await foldUsageDeltas(tdb.db);
  const job = await insertImageJob(tdb.db, b);
  const ledger = await sql<{ spent: number }>`
    select coalesce(-sum(delta), 0)::int as spent from credit_ledger
    where workspace_id = ${a.workspaceId} and reason = 'charge' and created_at >= '2026-01-01' and created_at < '2027-01-01'`.execute(tdb.db);
  const yearSpent = ledger.rows[0]!.spent;
  console.log(`[bench-usage] workspace A: ${HEAVY_ROWS} charged jobs over 2026 (seeded in ${((performance.now() - seeded) / 1000).toFixed(1)} s)`);
  const gw = await spawnGateway(tdb.url, { RATE_LIMIT_POLL_PER_MIN: '10000000' });
  try {
    const get = async (key: string, path: string) => {
      const r = await fetch(`${gw.baseUrl}${path}`, { headers: { authorization: `Bearer ${key}` } });
      const body = await r.text();
      return { status: r.status, body };
    };
    const pollStatus = async (until: number) => {
      const times: number[] = [];
      let errors = 0;
      await Promise.all(
        Array.from({ length: STATUS_CONNECTIONS }, async () => {
          while (performance.now() < until) {
            const t0 = performance.now();
            const { status: s } = await get(b.apiKey, `/v1/images/${job.id}`);
            if (s === 200) times.push(performance.now() - t0);
            else errors++;
          }
        }),
      );
      return { times, errors };
    };
    // Warm up both paths.
    for (let i = 0; i < 20; i++) await get(b.apiKey, `/v1/images/${job.id}`);
    await get(a.apiKey, YEAR);

    const alone = await pollStatus(performance.now() + SECONDS * 1000);
    const usage = new Map<number | string, number>();
    const usageMs: number[] = [];
    let partial = 0;
    const until = performance.now() + SECONDS * 1000;
    const heavy = Promise.all(
      Array.from({ length: USAGE_IN_FLIGHT }, async () => {
        while (performance.now() < until) {
          const t0 = performance.now();
          const r = await get(a.apiKey, YEAR).catch((err: unknown) => ({ status: `network error ${(err as Error).message}`, body: '' }));
          const s = r.status;
          usage.set(s, (usage.get(s) ?? 0) + 1);
          if (s === 200) {
            usageMs.push(performance.now() - t0);
            if ((JSON.parse(r.body) as { totals: { credits: { spent: number } } }).totals.credits.spent !== yearSpent) partial++;
          }
          // A refused caller retries after a short pause, as retry_after_ms asks (shortened: this is load).
          if (s === 429) await new Promise((r) => setTimeout(r, 50));
        }
      }),
    );
    const contended = await pollStatus(until);
    await heavy;
    const load = os.loadavg().map((l) => l.toFixed(1));
    console.log(`[bench-usage] load average ${load.join(' ')} on ${os.cpus().length} cores`);
    const fmt = (xs: number[]) => `p50 ${pct(xs, 50).toFixed(1)} ms, p99 ${pct(xs, 99).toFixed(1)} ms (${xs.length} polls)`;
    console.log(`[bench-usage] B status, alone:                          ${fmt(alone.times)}${alone.errors ? `, ${alone.errors} errors` : ''}`);
    console.log(
      `[bench-usage] B status, with A's ${USAGE_IN_FLIGHT} year-long usage calls: ${fmt(contended.times)}${contended.errors ? `, ${contended.errors} errors` : ''}`,
    );
    console.log(`[bench-usage] p99 ratio: ${(pct(contended.times, 99) / pct(alone.times, 99)).toFixed(2)}×`);
    console.log(
      `[bench-usage] A usage answers: ${[...usage].map(([s, n]) => `${n}× ${s}`).join(', ')}; served ones p50 ${pct(usageMs, 50).toFixed(0)} ms, p99 ${pct(usageMs, 99).toFixed(0)} ms, max ${Math.max(...usageMs).toFixed(0)} ms`,
    );
    const silent = [...usage].filter(([s]) => s !== 200 && s !== 429 && s !== 503).reduce((n, [, c]) => n + c, 0);
    console.log(`[bench-usage] answers other than 200, 429 or 503: ${silent}; 200s whose totals were not the whole year's ${yearSpent} credits: ${partial}`);
  } finally {
    await gw.close();
    await tdb.drop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
