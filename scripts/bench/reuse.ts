// Benchmark (not a test): reuse of identical requests (docs/api/reuse.md) against two in-process
// gateways and a worker fleet (every role) on the stack in the environment, with the local fal queue
// as the live provider, so every provider call is counted. A workload of N image creates (default
// 500) drawn from D distinct requests (default 50), sent with `reuse: true` in waves of C concurrent
// creates, alternating gateways; then the same workload with `reuse: false`. Prints, for each: the
// provider calls (submits, status polls, result reads), the time until every job completed, and the
// credits spent; then the calls and credits reuse saved.
//
//   npm run bench:reuse [-- 500 50 25]      (creates, distinct requests, concurrency)
//   node dist/scripts/bench/reuse.js 500 50 25    (after npm run build:all, on the stack in the environment)
import { performance } from 'node:perf_hooks';
import { createTestDatabase, createTenant, testConfig, waitFor } from '../../test/support/stack.js';
import { api, creditsOf, startGateway, startWorkers } from '../../test/support/services.js';
import { startLiveFal } from '../../test/support/fake-providers/live-fal.js';

const creates = Number(process.argv[2] ?? 500);
const distinct = Number(process.argv[3] ?? 50);
const concurrency = Number(process.argv[4] ?? 25);

async function main() {
  const tdb = await createTestDatabase();
  const live = await startLiveFal();
  live.fal.flow = ['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED'];
  const config = testConfig(tdb.url, { ...live.env, RATE_LIMIT_GENERATE_PER_MIN: '1000000', RATE_LIMIT_POLL_PER_MIN: '1000000', LOG_LEVEL: 'silent' });
  const gateways = [await startGateway(config, tdb.db), await startGateway(config, tdb.db)];
  const workers = await startWorkers(config, tdb.db);
  console.log(
    `${creates} nano-banana-2 creates over ${distinct} distinct requests, ${concurrency} at a time over 2 gateways; local fal queue; REUSE_PRICE_CREDITS=${config.REUSE_PRICE_CREDITS}`,
  );
  try {
    const run = async (reuse: boolean) => {
      const t = await createTenant(tdb.db, creates * 10);
      const before = await creditsOf(tdb.db, t);
      const callsBefore = live.fal.requests.length;
      const submitsBefore = live.fal.requestsOf('submit').length;
      const ids: string[] = [];
      const t0 = performance.now();
      for (let i = 0; i < creates; i += concurrency) {
        const wave = Array.from({ length: Math.min(concurrency, creates - i) }, (_, j) => i + j);
        ids.push(
          ...(await Promise.all(
            wave.map(async (n) => {
              const body = {
                project_id: t.projectId,
                prompt: `bench reuse ${reuse} ${n % distinct}`,
                model: 'nano-banana-2',
                aspect_ratio: '1:1',
                count: 1,
                reuse,
              };
              const r = await api(gateways[n % 2]!.baseUrl, t.apiKey).post('/v1/images/generate', body);
              if (r.status !== 200) throw new Error(`create answered ${r.status}: ${r.text}`);
              return r.body.data.id as string;
            }),
          )),
        );
      }
      const done = await waitFor(
        'every job to end',
        async () => {
          const open = await tdb.db
            .selectFrom('jobs')
            .select('id')
            .where('workspace_id', '=', t.workspaceId)
            .where('status', 'in', ['pending', 'generating'])
            .execute();
          return open.length === 0 ? performance.now() - t0 : undefined;
        },
        1_800_000,
        200,
      );
      const failed = await tdb.db.selectFrom('jobs').select('id').where('workspace_id', '=', t.workspaceId).where('status', '=', 'failed').execute();
      const calls = live.fal.requests.length - callsBefore;
      const submits = live.fal.requestsOf('submit').length - submitsBefore;
      const spent = before - (await creditsOf(tdb.db, t));
      console.log(
        `  reuse ${reuse ? 'on ' : 'off'}: ${String(submits).padStart(5)} submits, ${String(calls).padStart(6)} provider calls (${(calls / ids.length).toFixed(2)} per create), all ended in ${(done / 1000).toFixed(1).padStart(6)} s, ${spent} credits, ${failed.length} failed`,
      );
      return { submits, calls, spent, done };
    };
    const on = await run(true);
    const off = await run(false);
    console.log(
      `  reuse saved: ${off.submits - on.submits} submits and ${off.calls - on.calls} provider calls of ${off.calls} (${(((off.calls - on.calls) / off.calls) * 100).toFixed(1)} %), ${off.spent - on.spent} credits; time to all ended, on over off: ${(on.done / off.done).toFixed(2)}x`,
    );
  } finally {
    await workers.stop();
    await Promise.all(gateways.map((g) => g.close()));
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
