// Benchmark (not a test): the console's weight and first load. Prints the bundle's files (bytes,
// gzip and brotli), then, against a real gateway process on the stack in the environment
// (eval "$(scripts/stack.sh up test)") and headless Chromium, the first load of the signed-in
// console in a fresh profile (no cache) until the jobs page shows its list: first contentful paint,
// load, and until usable (the list rendered, which includes its API calls), p50 and worst of N runs.
// It asserts nothing.
//
//   npm run build:all && npm run bench:console [-- runs=10]
import { readFile } from 'node:fs/promises';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import puppeteer from 'puppeteer-core';
import { createTenant, createTestDatabase } from '../../test/support/stack.js';
import { spawnGateway } from '../../test/integration/gateway-harness.js';
import { chromiumPath, headlessChromiumArgs } from '../screenshots/headless-chromium.js';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.split('=') as [string, string]));
const RUNS = Number(args.runs ?? 10);
const dir = fileURLToPath(new URL('../../console/', import.meta.url));

const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

async function bundleSizes(): Promise<void> {
  let total = [0, 0, 0];
  for (const name of ['index.html', 'app.js', 'app.css']) {
    const bytes = await readFile(dir + name);
    const sizes = [bytes.length, gzipSync(bytes, { level: 9 }).length, brotliCompressSync(bytes).length];
    total = total.map((t, i) => t + sizes[i]!);
    console.log(`[bench-console] ${name.padEnd(10)} ${kb(sizes[0]!).padStart(9)}  gzip ${kb(sizes[1]!).padStart(8)}  brotli ${kb(sizes[2]!).padStart(8)}`);
  }
  console.log(`[bench-console] ${'total'.padEnd(10)} ${kb(total[0]!).padStart(9)}  gzip ${kb(total[1]!).padStart(8)}  brotli ${kb(total[2]!).padStart(8)}`);
}

async function firstLoads(): Promise<void> {
  const tdb = await createTestDatabase();
  const tenant = await createTenant(tdb.db);
  const gw = await spawnGateway(tdb.url);
  const browser = await puppeteer.launch({ executablePath: chromiumPath(), headless: true, args: headlessChromiumArgs().filter((a) => a !== '--headless') });
  const fcp: number[] = [];
  const load: number[] = [];
  const usable: number[] = [];
  try {
    for (let i = 0; i < RUNS; i++) {
      const context = await browser.createBrowserContext();
      const page = await context.newPage();
      await page.setCacheEnabled(false);
      // Signed in before the measured load: the cookie is set, nothing is cached.
      await page.goto(`${gw.baseUrl}/healthz`);
      await page.evaluate(
        `fetch('/console/session', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ api_key: ${JSON.stringify(tenant.apiKey)} }) }).then((r) => r.status)`,
      );
      const started = performance.now();
      await page.goto(`${gw.baseUrl}/console#/jobs`);
      await page.waitForSelector('table caption');
      usable.push(performance.now() - started);
      const t = (await page.evaluate(
        `({ fcp: performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? NaN, load: performance.getEntriesByType('navigation')[0].loadEventEnd })`,
      )) as { fcp: number; load: number };
      fcp.push(t.fcp);
      load.push(t.load);
      await context.close();
    }
  } finally {
    await browser.close();
    await gw.close();
    await tdb.drop();
  }
  const line = (what: string, xs: number[]) =>
    console.log(
      `[bench-console] ${what.padEnd(26)} p50 ${pct(xs, 50).toFixed(0).padStart(5)} ms   worst ${Math.max(...xs)
        .toFixed(0)
        .padStart(5)} ms`,
    );
  console.log(`[bench-console] first load of /console#/jobs, fresh profile, no cache, ${RUNS} runs:`);
  line('first contentful paint', fcp);
  line('load event', load);
  line('usable (jobs list shown)', usable);
}

await bundleSizes();
await firstLoads();
