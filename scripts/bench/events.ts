// Benchmark (not a test): live job events at scale, on the real stack in the environment
// (eval "$(scripts/stack.sh up test)"). One gateway process (`node dist/api/server.js`) holds
// STREAMS open event streams over JOBS image jobs (STREAMS / JOBS per job) while a worker fleet in
// this process runs the jobs on the local renderer. It prints
//   - whether every stream got its terminal event (and nothing out of order),
//   - the gateway's RSS before the streams opened, at its peak while they were open, and after,
//   - the event delay: from a job's row change (the record's updated_at, written by the status
//     move's transaction) to the receipt of its event, over every status-change event received by
//     a stream that was already open (p50 / p99 / max),
//   - how many LISTEN connections the gateway held (one, whatever the number of streams).
// It asserts nothing.
//
//   npm run build:all && npm run bench:events [-- streams=500 jobs=50]
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { createTenant, createTestDatabase, testConfig, waitFor } from '../../test/support/stack.js';
import { api, startWorkers } from '../../test/support/services.js';
import { spawnGateway } from '../../test/integration/gateway-harness.js';
import { openEventStream, type SseStream } from '../../test/support/sse.js';
import { JOB_EVENTS_LISTENER_NAME } from '../../api/job-events.js';

function arg(name: string, fallback: number): number {
  const hit = process.argv.slice(2).find((a) => a.startsWith(`${name}=`));
  return hit ? Number(hit.slice(name.length + 1)) : fallback;
}

const STREAMS = arg('streams', 500);
const JOBS = arg('jobs', 50);
// Long enough that every stream is open before its job finishes.
const RENDER_LATENCY_MS = arg('latency', 8_000);

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]) / 1024;
}

const percentile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
const now = () => performance.timeOrigin + performance.now();

async function main(): Promise<void> {
  const tdb = await createTestDatabase();
  const config = testConfig(tdb.url, { LOCAL_RENDER_LATENCY_MS: String(RENDER_LATENCY_MS), PROGRESS_WRITE_INTERVAL_MS: '2000' });
  const limits = { RATE_LIMIT_POLL_PER_MIN: '1000000', RATE_LIMIT_GENERATE_PER_MIN: '100000' };
  const gw = await spawnGateway(tdb.url, { TASK_QUEUE_PREFIX: config.TASK_QUEUE_PREFIX, ...limits });
  const workers = await startWorkers(config, tdb.db);
  const pid = gw.child.pid!;
  const streams: { job: string; s: SseStream; openedAt: number }[] = [];
  try {
    const t = await createTenant(tdb.db, 1_000_000);
    const c = api(gw.baseUrl, t.apiKey);
    await waitFor('the new key to be accepted', async () => (await c.get('/v1/projects')).status === 200);

    const jobs: string[] = [];
    for (let i = 0; i < JOBS; i++) {
      const r = await c.post('/v1/images/generate', { project_id: t.projectId, prompt: `bench ${i}`, model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });
      if (r.status !== 200) throw new Error(`create failed: ${r.status} ${r.text}`);
      jobs.push(r.body.data.id as string);
    }
    const rssBefore = rssMb(pid);
    let rssPeak = rssBefore;
    const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rssMb(pid))), 100);

    const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
    const openStart = performance.now();
    await Promise.all(
      Array.from({ length: STREAMS }, async (_x, i) => {
        const job = jobs[i % JOBS]!;
        const s = await openEventStream(gw.baseUrl, `/v1/images/${job}/events`, { authorization: `Bearer ${t.apiKey}` }, agent);
        if (s.status !== 200) throw new Error(`stream ${i} answered ${s.status}`);
        streams.push({ job, s, openedAt: now() });
      }),
    );
    const openMs = performance.now() - openStart;
    const rssOpen = rssMb(pid);
    const listeners = (
      await sql<{
        n: number;
      }>`select count(*)::int as n from pg_stat_activity where application_name = ${JOB_EVENTS_LISTENER_NAME} and datname = current_database()`.execute(tdb.db)
    ).rows[0]!.n;

    const doneStart = performance.now();
    await Promise.all(streams.map(({ s }) => s.waitForEnd(300_000)));
    const allDoneMs = performance.now() - doneStart;
    clearInterval(sampler);
    rssPeak = Math.max(rssPeak, rssMb(pid));

    let terminal = 0;
    let outOfOrder = 0;
    let events = 0;
    const delays: number[] = [];
    for (const { s, openedAt } of streams) {
      events += s.events.length;
      const records = s.events.map((e) => ({ id: Number(e.id), at: e.receivedAt, r: JSON.parse(e.data) as { status: string; updated_at: number } }));
      const last = records.at(-1);
      if (last && (last.r.status === 'completed' || last.r.status === 'failed')) terminal++;
      for (let i = 1; i < records.length; i++) {
        if (records[i]!.id <= records[i - 1]!.id) outOfOrder++;
        // A status move, heard by a stream that was open when it happened.
        if (records[i]!.r.status !== records[i - 1]!.r.status && records[i]!.r.updated_at >= openedAt) delays.push(records[i]!.at - records[i]!.r.updated_at);
      }
    }
    delays.sort((a, b) => a - b);
    const rssAfter = rssMb(pid);

    const f = (n: number) => n.toFixed(1);
    console.log(`event streams: ${STREAMS} streams over ${JOBS} jobs on one gateway process (local renderer, ${RENDER_LATENCY_MS} ms per job)`);
    console.log(`  opened all streams in ${f(openMs)} ms; gateway LISTEN connections: ${listeners}`);
    console.log(`  streams that got their terminal event: ${terminal}/${STREAMS}; events received: ${events}; ids out of order: ${outOfOrder}`);
    console.log(`  all streams ended ${f(allDoneMs / 1000)} s after the last one opened`);
    console.log(
      `  gateway RSS: ${f(rssBefore)} MB before the streams, ${f(rssOpen)} MB with ${STREAMS} open, peak ${f(rssPeak)} MB (growth ${f(rssPeak - rssBefore)} MB, ${f(((rssPeak - rssBefore) * 1024) / STREAMS)} KB per stream), ${f(rssAfter)} MB after they closed`,
    );
    console.log(
      `  event delay (row change → receipt) over ${delays.length} status events: p50 ${f(percentile(delays, 0.5))} ms, p99 ${f(percentile(delays, 0.99))} ms, max ${f(delays.at(-1) ?? NaN)} ms`,
    );
  } finally {
    for (const { s } of streams) s.close();
    await workers.stop();
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
