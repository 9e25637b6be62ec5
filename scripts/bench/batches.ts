// Benchmark (not a test): one POST /v1/batches of N image items (default 1,000) against an
// in-process gateway and worker fleet (every role) on the stack in the environment, with the local
// fal queue as the live provider (test/support/fake-providers/live-fal.ts), so every provider call
// is counted. Prints: the create's answer time, submit → every item's job charged and started (its
// workflow's first step ran), submit → every job submitted to the provider, submit → the batch
// completed, the start rate that bounds it (BATCH_START_PER_SECOND), and the provider calls by
// kind (submits, status polls, result reads), per item.
//
//   npm run bench:batches [-- 1000 50]     (items, BATCH_START_PER_SECOND)
//   node dist/scripts/bench/batches.js 1000 50    (after npm run build:all, on the stack in the environment)
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { createTestDatabase, createTenant, testConfig, waitFor } from '../../test/support/stack.js';
import { api, startGateway, startWorkers } from '../../test/support/services.js';
import { startLiveFal } from '../../test/support/fake-providers/live-fal.js';

const items = Number(process.argv[2] ?? 1000);
const rate = Number(process.argv[3] ?? 50);

async function main() {
  const tdb = await createTestDatabase();
  const live = await startLiveFal();
  live.fal.flow = ['IN_PROGRESS', 'COMPLETED'];
  const config = testConfig(tdb.url, {
    ...live.env,
    BATCH_START_PER_SECOND: String(rate),
    RATE_LIMIT_GENERATE_PER_MIN: '1000000',
    RATE_LIMIT_POLL_PER_MIN: '1000000',
    LOG_LEVEL: 'silent',
  });
  const gw = await startGateway(config, tdb.db);
  const workers = await startWorkers(config, tdb.db);
  const t = await createTenant(tdb.db, items * 100);
  try {
    const body = {
      project_id: t.projectId,
      items: Array.from({ length: items }, (_, i) => ({
        custom_id: `item-${i}`,
        kind: 'image',
        body: { prompt: `bench ${i}`, model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 },
      })),
    };
    const t0 = performance.now();
    const created = await api(gw.baseUrl, t.apiKey).post('/v1/batches', body);
    if (created.status !== 200) throw new Error(`create answered ${created.status}: ${created.text}`);
    const answered = performance.now() - t0;
    const id = created.body.data.id as string;
    const count = async (where: ReturnType<typeof sql>) =>
      Number(
        (
          await sql<{
            n: string;
          }>`select count(*)::text as n from jobs where id in (select job_id from batch_items where batch_id = ${id}) and ${where}`.execute(tdb.db)
        ).rows[0]!.n,
      );
    console.log(`batch of ${items} nano-banana-2 items on the local fal queue; BATCH_START_PER_SECOND=${rate}; Temporal at ${config.TEMPORAL_ADDRESS}`);
    console.log(`  create answered                 ${answered.toFixed(0).padStart(7)} ms`);
    // Each figure is printed as soon as it is reached, so a run stopped early still says how far it got.
    const allStarted = await waitFor(
      'every item started',
      async () => ((await count(sql`workflow_started`)) === items ? performance.now() - t0 : undefined),
      1_800_000,
      100,
    );
    console.log(
      `  submit → all items started      ${allStarted.toFixed(0).padStart(7)} ms   (${((items / allStarted) * 1000).toFixed(1)} items/s; the bound is ${rate}/s)`,
    );
    const allSubmitted = await waitFor(
      'every item submitted',
      async () => ((await count(sql`submitted_at is not null`)) === items ? performance.now() - t0 : undefined),
      1_800_000,
      100,
    );
    console.log(`  submit → all submitted to fal   ${allSubmitted.toFixed(0).padStart(7)} ms`);
    const completed = await waitFor(
      'the batch completed',
      async () => ((await api(gw.baseUrl, t.apiKey).get(`/v1/batches/${id}`)).body.data.status === 'completed' ? performance.now() - t0 : undefined),
      1_800_000,
      200,
    );
    console.log(`  submit → batch completed        ${completed.toFixed(0).padStart(7)} ms`);
    const calls = new Map<string, number>();
    for (const r of live.fal.requests) calls.set(r.op, (calls.get(r.op) ?? 0) + 1);
    const total = live.fal.requests.length;
    console.log(
      `  provider calls                  ${String(total).padStart(7)}      (${(total / items).toFixed(2)} per item: ${[...calls].map(([op, n]) => `${op} ${n}`).join(', ')})`,
    );
    console.log(`  requests submitted to fal       ${String(live.fal.states.size).padStart(7)}      (one per item: ${live.fal.states.size === items})`);
  } finally {
    await workers.stop();
    await gw.close();
    await live.close();
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
