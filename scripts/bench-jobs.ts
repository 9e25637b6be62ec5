// Benchmark (not a test): the job path end to end on the real stack in the environment
// (eval "$(scripts/stack.sh env test)"). The gateway and a worker fleet run in-process; the local
// renderer is the provider. Jobs are created before the workers start, then run. Prints
//   - create latency (p50 / p95 / max) and throughput for N image jobs created C at a time,
//   - status-poll latency for jobs in flight (Postgres row + live progress query) and finished,
//   - the time from create to `completed` (p50 / p95 / max).
//
//   npm run build && node dist/scripts/bench-jobs.js [jobs=100] [concurrency=10]
import { performance } from 'node:perf_hooks';
import { createTestDatabase, createTenant, testConfig } from '../test/support/stack.js';
import { api, startGateway, startWorkers } from '../test/support/services.js';

const jobs = Number(process.argv[2] ?? 100);
const concurrency = Number(process.argv[3] ?? 10);

function stats(ms: number[]): string {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!.toFixed(1);
  return `p50 ${at(0.5)} ms, p95 ${at(0.95)} ms, max ${s[s.length - 1]!.toFixed(1)} ms (n=${s.length})`;
}

async function pool<T>(items: T[], width: number, fn: (item: T) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

async function main() {
  const tdb = await createTestDatabase();
  const config = testConfig(tdb.url, { RATE_LIMIT_GENERATE_PER_MIN: '1000000', RATE_LIMIT_POLL_PER_MIN: '1000000', LOG_LEVEL: 'silent' });
  const gw = await startGateway(config, tdb.db);
  let workers: Awaited<ReturnType<typeof startWorkers>> | undefined;
  const t = await createTenant(tdb.db, jobs * 4);
  const c = api(gw.baseUrl, t.apiKey);
  try {
    const createMs: number[] = [];
    const createdAt = new Map<string, number>();
    const started = performance.now();
    await pool([...Array(jobs).keys()], concurrency, async (i) => {
      const t0 = performance.now();
      const r = await c.post('/v1/images/generate', { project_id: t.projectId, prompt: `bench ${i}`, model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });
      createMs.push(performance.now() - t0);
      if (r.status !== 200) throw new Error(`create ${i}: ${r.status} ${r.text}`);
      createdAt.set(r.body.data.id, t0);
    });
    const createSeconds = (performance.now() - started) / 1000;
    // Workers start only now, so the create figures are the gateway's alone (rendering competes
    // for the same two cores).
    workers = await startWorkers(config, tdb.db);

    const inFlightPollMs: number[] = [];
    const donePollMs: number[] = [];
    const toCompleteMs: number[] = [];
    const pending = new Set(createdAt.keys());
    while (pending.size) {
      await pool([...pending], concurrency, async (id) => {
        const t0 = performance.now();
        const r = await c.get(`/v1/images/${id}`);
        const ms = performance.now() - t0;
        if (r.body.data.status === 'completed' || r.body.data.status === 'failed') {
          donePollMs.push(ms);
          if (pending.delete(id)) toCompleteMs.push(performance.now() - createdAt.get(id)!);
        } else inFlightPollMs.push(ms);
      });
    }
    const ws = await tdb.db.selectFrom('workspaces').select('credits').where('id', '=', t.workspaceId).executeTakeFirstOrThrow();

    console.log(`jobs: ${jobs} image jobs, ${concurrency} at a time, local renderer`);
    console.log(`create:            ${stats(createMs)}; ${(jobs / createSeconds).toFixed(1)} creates/s`);
    console.log(`status (in flight): ${inFlightPollMs.length ? stats(inFlightPollMs) : 'none observed'}`);
    console.log(`status (finished):  ${stats(donePollMs)}`);
    console.log(`create → completed (queued behind the whole batch): ${stats(toCompleteMs)}`);
    console.log(`credits left: ${ws.credits} (expected 0)`);
  } finally {
    await workers?.stop();
    await gw.close();
    await tdb.drop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
