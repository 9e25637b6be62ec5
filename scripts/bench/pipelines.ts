// Benchmark (not a test): a two-step pipeline (an image, then a video with that image as its start
// frame) run as one POST /v1/pipelines, against the same two jobs chained by a client, as a customer
// without pipelines does it: create the image, wait for it, download it, upload it, create the video
// from the upload, wait for it. Both sides use the TypeScript client over HTTP (its waits follow the
// event streams) against an in-process gateway and worker fleet (every role) on the stack in the
// environment; the local renderer is the provider, with no added latency. Each of C clients runs
// one chain and then the next; the two sides run in alternating halves, so load from elsewhere on the
// machine drifts into both alike. Prints, per concurrency: chains/s, create→video-completed p50 /
// p99, the ratios pipeline / chained, and the credits each side spent (the same prices).
//
//   npm run bench:pipelines [-- 20 6]     (chains at concurrency 4, chains at concurrency 1)
//   node dist/scripts/bench/pipelines.js 20 6    (after npm run build:all, on the stack in the environment)
import { performance } from 'node:perf_hooks';
import { MediaGenClient, type Pipeline } from '@mediagen/client';
import { createTestDatabase, createTenant, testConfig, type Tenant } from '../../test/support/stack.js';
import { creditsOf, startGateway, startWorkers } from '../../test/support/services.js';

const chainsAt4 = Number(process.argv[2] ?? 20);
const chainsAt1 = Number(process.argv[3] ?? 6);

const image = (prompt: string) => ({ prompt, model: 'nano-banana-2' as const, aspect_ratio: '16:9' as const, count: 1 });
const video = (prompt: string) => ({ prompt, model: 'seedance-1.5' as const, aspect_ratio: '16:9' as const, resolution: '480p' as const, duration: 4 });

interface Run {
  ms: number[];
  seconds: number;
}

const quantile = (ms: number[], q: number) => {
  const s = [...ms].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

/** `count` runs of `one`, `width` at a time, each client starting its next when the last ended. */
async function closedLoop(count: number, width: number, one: (i: number) => Promise<void>): Promise<Run> {
  const ms: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < count) {
        const i = next++;
        const t0 = performance.now();
        await one(i);
        ms.push(performance.now() - t0);
      }
    }),
  );
  return { ms, seconds: (performance.now() - started) / 1000 };
}

const combine = (a: Run, b: Run): Run => ({ ms: [...a.ms, ...b.ms], seconds: a.seconds + b.seconds });
const perSecond = (r: Run) => r.ms.length / r.seconds;
const line = (name: string, r: Run) =>
  `  ${name.padEnd(34)} ${perSecond(r).toFixed(2).padStart(6)} chains/s   create→video completed p50 ${quantile(r.ms, 0.5).toFixed(0).padStart(5)} ms, p99 ${quantile(r.ms, 0.99).toFixed(0).padStart(5)} ms`;

async function main() {
  const tdb = await createTestDatabase();
  const config = testConfig(tdb.url, {
    RATE_LIMIT_GENERATE_PER_MIN: '1000000',
    RATE_LIMIT_POLL_PER_MIN: '1000000',
    LOG_LEVEL: 'silent',
    LOCAL_RENDER_LATENCY_MS: '0',
  });
  const gw = await startGateway(config, tdb.db);
  const workers = await startWorkers(config, tdb.db);
  // Two workspaces, one a side, so each side's spend is its own.
  const total = chainsAt4 + chainsAt1 + 1;
  const [piped, chained] = [await createTenant(tdb.db, total * 100), await createTenant(tdb.db, total * 100)] as [Tenant, Tenant];
  const client = (t: Tenant) => new MediaGenClient({ apiKey: t.apiKey, baseUrl: gw.baseUrl });
  const mgPiped = client(piped);
  const mgChained = client(chained);
  try {
    console.log(`server: Temporal at ${config.TEMPORAL_ADDRESS}; steps: nano-banana-2 16:9 image → seedance-1.5 480p 4 s video from it, local renderer`);

    const pipeline = async (i: number) => {
      const created = await mgPiped.pipelines.create({
        project_id: piped.projectId,
        steps: [
          { id: 'still', kind: 'image', body: image(`bench ${i}`) },
          { id: 'clip', kind: 'video', body: { ...video(`bench pan ${i}`), start_frame_file_id: { from: 'still', output: 0 } } },
        ],
      });
      const done = await mgPiped.pipelines.wait((created.data as Pipeline).id);
      if (done.status !== 'completed') throw new Error(`pipeline ${done.id}: ${JSON.stringify(done.error)}`);
    };
    const chain = async (i: number) => {
      const still = await mgChained.images.generate({ project_id: chained.projectId, ...image(`bench ${i}`) });
      const { url } = await mgChained.waitForJob(still);
      const bytes = await fetch(url);
      if (!bytes.ok) throw new Error(`download ${i}: ${bytes.status}`);
      const upload = await mgChained.uploadFile(await bytes.blob(), { projectId: chained.projectId, filename: 'still.png' });
      const clip = await mgChained.videos.generate({ project_id: chained.projectId, ...video(`bench pan ${i}`), start_frame_file_id: upload.id });
      await mgChained.waitForJob(clip);
    };
    // Warm both paths (bundles, connections, sticky caches) before measuring.
    await pipeline(-1);
    await chain(-1);
    const spent0 = [await creditsOf(tdb.db, piped), await creditsOf(tdb.db, chained)];

    let runs = 0;
    for (const [width, count] of [
      [1, chainsAt1],
      [4, chainsAt4],
    ] as const) {
      const half = Math.ceil(count / 2);
      const p1 = await closedLoop(half, width, (i) => pipeline(runs + i));
      const c1 = await closedLoop(half, width, (i) => chain(runs + i));
      const p2 = await closedLoop(count - half, width, (i) => pipeline(runs + half + i));
      const c2 = await closedLoop(count - half, width, (i) => chain(runs + half + i));
      runs += count;
      const p = combine(p1, p2);
      const c = combine(c1, c2);
      console.log(`concurrency ${width}, ${count} each:`);
      console.log(line('pipeline (one POST /v1/pipelines)', p));
      console.log(line('chained by the client', c));
      console.log(
        `  ratio pipeline/chained: throughput ${(perSecond(p) / perSecond(c)).toFixed(2)}×, p50 ${(quantile(p.ms, 0.5) / quantile(c.ms, 0.5)).toFixed(2)}×, p99 ${(quantile(p.ms, 0.99) / quantile(c.ms, 0.99)).toFixed(2)}×`,
      );
    }
    const spent = [spent0[0]! - (await creditsOf(tdb.db, piped)), spent0[1]! - (await creditsOf(tdb.db, chained))];
    console.log(`credits spent over ${runs} chains each: pipelines ${spent[0]}, chained ${spent[1]}`);
  } finally {
    await workers.stop();
    await gw.close();
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
