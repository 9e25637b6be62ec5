// Benchmark (not a test): the job-list query on a million jobs. Loads N rows (default 1,000,000) into
// one workspace of a fresh database with generate_series, then prints the EXPLAIN (ANALYZE) plan and
// the timing of list pages as the gateway queries them: the first page, a deep page by cursor, per
// kind, by status, by kind and status, by model.
//
//   npm run build:all && node dist/scripts/bench/explain-job-lists.js [rows=1000000]
import { performance } from 'node:perf_hooks';
import { createTestDatabase, createTenant } from '../../test/support/stack.js';
import { bulkInsertJobs, explainJobListPage } from '../../test/support/job-rows.js';
import { listJobsPage, type JobListOptions } from '../../db/repos/job-lists.js';

const rows = Number(process.argv[2] ?? 1_000_000);

async function main() {
  const tdb = await createTestDatabase();
  try {
    const t = await createTenant(tdb.db, 0);
    const loadStart = performance.now();
    await bulkInsertJobs(tdb.db, t, rows);
    console.log(`loaded ${rows} jobs into one workspace in ${((performance.now() - loadStart) / 1000).toFixed(1)} s`);
    const cases: [string, JobListOptions][] = [
      ['GET /v1/jobs (first page, limit 50)', { limit: 50 }],
      [
        `GET /v1/jobs?cursor=… (a page half way down: ${rows / 2} rows newer)`,
        { limit: 50, after: { createdAtMicros: String((Date.now() - (rows / 2) * 1000) * 1000), id: 'zzz' } },
      ],
      ['GET /v1/videos', { limit: 50, filters: { kind: 'video' } }],
      ['GET /v1/jobs?status=failed', { limit: 50, filters: { status: 'failed' } }],
      ['GET /v1/images?status=pending', { limit: 50, filters: { kind: 'image', status: 'pending' } }],
      ['GET /v1/jobs?model=sora-2&created_before=…', { limit: 50, filters: { model: 'sora-2', createdBefore: Date.now() - 3600_000 } }],
    ];
    for (const [label, opts] of cases) {
      const plan = await explainJobListPage(tdb.db, t.workspaceId, opts);
      const times: number[] = [];
      for (let i = 0; i < 20; i++) {
        const s = performance.now();
        await listJobsPage(tdb.db, t.workspaceId, opts);
        times.push(performance.now() - s);
      }
      times.sort((a, b) => a - b);
      console.log(`\n== ${label}: round trip p50 ${times[10]!.toFixed(2)} ms, max ${times[19]!.toFixed(2)} ms (20 runs)`);
      console.log(plan.join('\n'));
    }
  } finally {
    await tdb.drop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
