// The planner's choices that keep GET /v1/usage and the job lists' status filters flat, read from
// EXPLAIN on rows Postgres writes itself (no timing asserted):
// - a usage report walks its workspace's ledger rows of the raw part of its range (by hour: all of
//   it; by day: the partial days at its edges) in credit_ledger_usage_idx (from the index alone),
//   each row's job by primary key when it groups, and its jobs of the range in a list index; its
//   whole days by the rollups' primary key,
//   with no sequential scan of jobs or credit_ledger, whether the workspace is small or holds most
//   of the table;
// - in a workspace whose history is all failed jobs, every status filter (completed, which matches
//   nothing, included) walks a status list index in its order and reads about what it returns.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { CompiledQuery, sql } from 'kysely';
import { createTenant, createTestDatabase, type Tenant, type TestDatabase } from '../support/stack.js';
import { bulkInsertJobs, explainJobListPage } from '../support/job-rows.js';
import { usageStatement, type UsageQuery } from '../../db/repos/usage.js';
import { jobStatuses } from '../../shared/job-model.js';
import type { JobListOptions } from '../../db/repos/job-lists.js';

let tdb: TestDatabase;
let big: Tenant;
let small: Tenant;
let failedOnly: Tenant;

/** Ledger rows for the bulk jobs: a charge each, a refund for the failed ones an hour later. */
async function ledgerFor(prefix: string) {
  await sql`insert into credit_ledger (workspace_id, job_id, job_seq, delta, reason, created_at)
            select workspace_id, id, 1, -price, 'charge', created_at from jobs where id like ${`${prefix}\\_%`}`.execute(tdb.db);
  await sql`insert into credit_ledger (workspace_id, job_id, job_seq, delta, reason, created_at)
            select workspace_id, id, 2, price, 'refund', created_at + interval '1 hour' from jobs where id like ${`${prefix}\\_%`} and status = 'failed'`.execute(
    tdb.db,
  );
}

before(async () => {
  tdb = await createTestDatabase();
  big = await createTenant(tdb.db, 0);
  small = await createTenant(tdb.db, 0);
  failedOnly = await createTenant(tdb.db, 0);
  await bulkInsertJobs(tdb.db, big, 60_000, 'big');
  await bulkInsertJobs(tdb.db, small, 20, 'small');
  await ledgerFor('big');
  await ledgerFor('small');
  // A workspace holding a large share of the history, all of it failed.
  await bulkInsertJobs(tdb.db, failedOnly, 30_000, 'failed');
  await sql`update jobs set status = 'failed' where workspace_id = ${failedOnly.workspaceId}`.execute(tdb.db);
  await vacuumUntilAllVisible('jobs');
  await vacuumUntilAllVisible('credit_ledger');
});

/**
 * A table as a long-lived one is: its visibility map covering every page (what an index-only scan
 * relies on). The test stack commits asynchronously (synchronous_commit off) and VACUUM marks a page
 * all-visible only once the commits of its rows are flushed, so a synchronous commit flushes them
 * first, and the vacuum is repeated (a bounded number of times) until the map covers the table.
 */
async function vacuumUntilAllVisible(table: 'jobs' | 'credit_ledger'): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    await tdb.db.transaction().execute(async (tx) => {
      await sql`set local synchronous_commit = on`.execute(tx);
      await sql`select txid_current()`.execute(tx);
    });
    await sql.raw(`vacuum analyze ${table}`).execute(tdb.db);
    const { rows } = await sql<{ visible: number; pages: number }>`
      select relallvisible as visible, relpages as pages from pg_class where oid = ${table}::regclass`.execute(tdb.db);
    if (rows[0]!.visible >= rows[0]!.pages) return;
    assert.ok(attempt < 20, `${table}: ${rows[0]!.visible} of ${rows[0]!.pages} pages all-visible after ${attempt} vacuums`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

after(async () => {
  await tdb?.drop();
});

async function explainUsage(q: UsageQuery): Promise<string> {
  const c = usageStatement(q).compile(tdb.db);
  const r = await tdb.db.executeQuery<{ 'QUERY PLAN': string }>(CompiledQuery.raw(`explain (analyze, buffers) ${c.sql}`, [...c.parameters]));
  return r.rows.map((row) => row['QUERY PLAN']).join('\n');
}

test('a usage report reads its range by index: the ledger from credit_ledger_usage_idx alone, each job by primary key, no sequential scan', async () => {
  const now = Date.now();
  const monthBack = new Date(now - 30 * 86_400_000);
  const cases: [string, UsageQuery][] = [
    [
      'a small workspace, a month by day',
      { workspaceId: small.workspaceId, from: monthBack, to: new Date(now + 1000), granularity: 'day', groupBy: [], limit: 50 },
    ],
    [
      'the same, by every dimension',
      {
        workspaceId: small.workspaceId,
        from: monthBack,
        to: new Date(now + 1000),
        granularity: 'day',
        groupBy: ['key', 'project', 'model', 'kind'],
        limit: 50,
      },
    ],
    [
      'the large workspace, its last hour by hour and model',
      { workspaceId: big.workspaceId, from: new Date(now - 3_600_000), to: new Date(now + 1000), granularity: 'hour', groupBy: ['model'], limit: 50 },
    ],
  ];
  for (const [label, q] of cases) {
    const plan = await explainUsage(q);
    assert.doesNotMatch(plan, /Seq Scan on (jobs|credit_ledger)/, `${label}: ${plan}`);
    assert.match(plan, /Index Only Scan using credit_ledger_usage_idx on credit_ledger/, `${label}: ${plan}`);
    if (q.groupBy.length) assert.match(plan, /Index (Only )?Scan using jobs_pkey on jobs j\b/, `${label}: ${plan}`);
    else assert.doesNotMatch(plan, /jobs_pkey/, `${label}: nothing grouped, no job looked up\n${plan}`);
    assert.match(plan, /(Index (Only )?Scan using|Bitmap Index Scan on) jobs_\w+_list_idx/, `${label}: ${plan}`); // By day, the whole days come from the rollups (and the deltas not folded yet), by their keys.
    if (q.granularity === 'day') assert.match(plan, /Index (Only )?Scan using usage_daily_pkey on usage_daily/, `${label}: ${plan}`);
  }
});

test('with 30,000 failed jobs in one workspace every status filter walks a status index in its order and reads about what it returns', async () => {
  const limit = 51;
  const cases: JobListOptions['filters'][] = [
    ...jobStatuses.map((status) => ({ status })),
    ...jobStatuses.map((status) => ({ kind: 'image' as const, status })),
  ];
  for (const filters of cases) {
    const label = JSON.stringify(filters);
    const plan = (await explainJobListPage(tdb.db, failedOnly.workspaceId, { limit, filters })).join('\n');
    assert.match(plan, /Index Scan Backward using jobs_(kind_)?status_list_idx/, `${label}: ${plan}`);
    assert.doesNotMatch(plan, /Seq Scan|Sort|Bitmap/, `${label}: ${plan}`);
    const removed = [...plan.matchAll(/Rows Removed by Filter: (\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);
    assert.ok(removed <= 2 * limit, `${label}: ${removed} rows read and filtered out\n${plan}`);
  }
});
