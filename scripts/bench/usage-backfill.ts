// Benchmark (not a test): how long migration 0076_usage_daily holds the service's writes on a large
// history. On the test stack's Postgres (eval "$(scripts/stack.sh up test)"), a fresh database is
// migrated, 0076 is taken down, a history of `jobs` finished jobs over 1,000 workspaces with their
// ledger rows is loaded (bench:scale's loader), and 0076 is applied again in one transaction, as the
// migrator runs it, while a writer with the service's own pool bounds (defaultDbTimeouts: a 5 s lock
// timeout) charges a workspace every 50 ms and a reader reads a job. It prints the migration's
// duration (the SHARE lock on `jobs` and `credit_ledger` is held from its first statement to its
// commit), the longest write wait, how many writes failed on their lock timeout, and the longest
// read. It asserts nothing; docs/operations/runbook.md quotes the figures.
//
//   npm run build:all && node dist/scripts/bench/usage-backfill.js [jobs=1000000]
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { sql, type Kysely } from 'kysely';
import { createDb, defaultDbTimeouts } from '../../db/index.js';
import { migrations } from '../../db/migrate.js';
import { createProject } from '../../db/repos/workspaces.js';
import { createTenant, requireStackEnv } from '../../test/support/stack.js';
import { dbUrl, freshDatabase, loadHistory } from './scale-data.js';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.split('=') as [string, string]));
const JOBS = Number(args.jobs ?? 1_000_000);
const NAME = 'bench_usage_backfill';
const log = (m: string) => console.log(`[bench-usage-backfill] ${m}`);

async function main(): Promise<void> {
  requireStackEnv();
  const db = await freshDatabase(NAME);
  const usage = migrations['0076_usage_daily']!;
  try {
    await usage.down!(db as unknown as Kysely<unknown>);
    const tenant = await createTenant(db, 1_000_000_000);
    const project2 = (await createProject(db, tenant.workspaceId, 'second')).id;
    let t = performance.now();
    await loadHistory(db, { tenant, project2 }, Math.round(JOBS / 10), JOBS - Math.round(JOBS / 10));
    const sizes = await sql<{ jobs: string; ledger: string; bytes: string }>`
      select (select count(*) from jobs) as jobs, (select count(*) from credit_ledger) as ledger,
             pg_size_pretty(pg_total_relation_size('jobs') + pg_total_relation_size('credit_ledger')) as bytes`.execute(db);
    const s = sizes.rows[0]!;
    log(
      `loaded ${Number(s.jobs).toLocaleString('en')} jobs and ${Number(s.ledger).toLocaleString('en')} ledger rows (${s.bytes}) in ${((performance.now() - t) / 1000).toFixed(0)} s`,
    );

    // The service's side: its pool bounds, one charge every 50 ms and one read of a job every 50 ms.
    const app = createDb(dbUrl(NAME), 4, {}, defaultDbTimeouts);
    const writes: number[] = [];
    const reads: number[] = [];
    let lockTimeouts = 0;
    let otherErrors = 0;
    let running = true;
    const loop = async (fn: () => Promise<unknown>, into: number[]) => {
      while (running) {
        const start = performance.now();
        try {
          await fn();
          into.push(performance.now() - start);
        } catch (err) {
          if ((err as { code?: string }).code === '55P03') lockTimeouts++;
          else otherErrors++;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    const charge = () => sql`insert into credit_ledger (workspace_id, delta, reason) values (${tenant.workspaceId}, -1, 'deduct')`.execute(app);
    const read = () => sql`select status from jobs where id = 'img_bench00000004'`.execute(app);
    const loops = [loop(charge, writes), loop(read, reads)];
    await new Promise((r) => setTimeout(r, 1000));
    const before = writes.length;

    t = performance.now();
    await db.connection().execute(async (conn) => {
      // As migrateToLatest runs a migration: its own long bounds, one transaction.
      await sql`set statement_timeout = 0`.execute(conn);
      await sql`set lock_timeout = 0`.execute(conn);
      await conn.transaction().execute((tx) => usage.up(tx as unknown as Kysely<unknown>));
    });
    const heldMs = performance.now() - t;
    await new Promise((r) => setTimeout(r, 1000));
    running = false;
    await Promise.all(loops);
    await app.destroy();
    const rollups = await sql<{ n: string }>`select count(*) as n from usage_daily`.execute(db);
    const max = (xs: number[]) => (xs.length ? Math.max(...xs) : NaN);
    log(
      `load average ${os
        .loadavg()
        .map((x) => x.toFixed(2))
        .join(' ')}, ${os.cpus().length} CPUs`,
    );
    log(
      `0076 applied in ${(heldMs / 1000).toFixed(2)} s (${Number(rollups.rows[0]!.n).toLocaleString('en')} rollup rows): writes to jobs and credit_ledger wait that long`,
    );
    log(
      `writer (lock_timeout ${defaultDbTimeouts.lockMs} ms): ${writes.length - before} charges during and after, longest ${max(writes).toFixed(0)} ms, ${lockTimeouts} failed on the lock timeout, ${otherErrors} other errors`,
    );
    log(`reader: ${reads.length} reads, longest ${max(reads).toFixed(0)} ms`);
  } finally {
    await db.destroy();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
