// GET /docs in a real headless Chromium (Debian's `chromium`, installed by scripts/stack.sh install):
// the page renders every operation of the gateway's OpenAPI document, and the browser requests
// nothing from anywhere but the gateway (no CDN: operators run it offline).
// DOCS_SCREENSHOT=path.png also saves a screenshot of the rendered page (the README's picture).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import puppeteer, { type Browser } from 'puppeteer-core';
import { createTestDatabase, testConfig, type TestDatabase } from '../support/stack.js';
import { startGateway, type InProcessGateway as Gateway } from '../support/services.js';

let tdb: TestDatabase;
let gw: Gateway;
let browser: Browser;

function chromiumPath(): string {
  if (process.env.CHROMIUM_PATH) return process.env.CHROMIUM_PATH;
  try {
    return execFileSync('sh', ['-c', 'command -v chromium || command -v chromium-browser'], { encoding: 'utf8' }).trim().split('\n')[0]!;
  } catch {
    throw new Error('chromium is not installed: run scripts/stack.sh install');
  }
}

before(async () => {
  tdb = await createTestDatabase();
  gw = await startGateway(testConfig(tdb.url), tdb.db);
  browser = await puppeteer.launch({
    executablePath: chromiumPath(),
    headless: true,
    // Root in a container has no user namespace sandbox; the page is our own, on loopback.
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update'],
  });
});

after(async () => {
  await browser?.close();
  await gw?.close();
  await tdb?.drop();
});

test('the assets are served by the gateway itself, with their types', async () => {
  const html = await fetch(`${gw.baseUrl}/docs`);
  assert.equal(html.status, 200);
  assert.match(html.headers.get('content-type') ?? '', /text\/html/);
  const page = await html.text();
  assert.doesNotMatch(page, /https?:\/\//, 'no absolute URL: nothing loads from elsewhere');
  for (const [path, type] of [
    ['/docs/swagger-ui-bundle.js', /javascript/],
    ['/docs/swagger-ui.css', /text\/css/],
    ['/docs/init.js', /javascript/],
  ] as const) {
    const r = await fetch(`${gw.baseUrl}${path}`);
    assert.equal(r.status, 200, path);
    assert.match(r.headers.get('content-type') ?? '', type, path);
    await r.arrayBuffer();
  }
  const other = await fetch(`${gw.baseUrl}/docs/package.json`);
  assert.equal(other.status, 404, 'only the page assets are served from the package');
  assert.equal(((await other.json()) as { error: { code: string } }).error.code, 'not_found');
});

test('headless Chromium lists every operation of /v1/openapi.json and loads nothing from elsewhere', async () => {
  const doc = (await (await fetch(`${gw.baseUrl}/v1/openapi.json`)).json()) as {
    paths: Record<string, Record<string, unknown>>;
    webhooks?: Record<string, Record<string, unknown>>;
  };
  // Swagger UI lists the document's webhooks (job.completed, …) beside its paths.
  const expected = [...Object.entries(doc.paths), ...Object.entries(doc.webhooks ?? {})]
    .flatMap(([path, ops]) => Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`))
    .sort();
  assert.ok(expected.length >= 20, `the document has ${expected.length} operations`);

  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  const origin = new URL(gw.baseUrl).origin;
  const foreign: string[] = [];
  const failed: string[] = [];
  await page.setRequestInterception(true);
  page.on('request', (req) => {
    const url = req.url();
    if (url.startsWith('data:') || url.startsWith('blob:') || new URL(url).origin === origin) return void req.continue();
    foreign.push(url);
    void req.abort('blockedbyclient');
  });
  page.on('requestfailed', (req) => failed.push(`${req.url()} ${req.failure()?.errorText}`));
  page.on('pageerror', (err) => failed.push(`page error: ${(err as Error).message}`));

  await page.goto(`${gw.baseUrl}/docs`, { waitUntil: 'load' });
  await page.waitForFunction((n: number) => (globalThis as any).document.querySelectorAll('.opblock').length >= n, { timeout: 60_000 }, expected.length);
  const listed = (
    await page.$$eval('.opblock', (blocks) =>
      blocks.map((b) => {
        const method = b.querySelector('.opblock-summary-method')?.textContent?.trim() ?? '';
        const path = b.querySelector('.opblock-summary-path')?.getAttribute('data-path') ?? '';
        return `${method.toUpperCase()} ${path}`;
      }),
    )
  ).sort();
  assert.deepEqual(listed, expected, 'every operation of the document is on the page, and nothing else');
  const title = await page.$eval('.info .title', (el) => el.textContent ?? '');
  assert.match(title, /Media Generation API/);

  if (process.env.DOCS_SCREENSHOT) await page.screenshot({ path: process.env.DOCS_SCREENSHOT as `${string}.png`, fullPage: false });
  assert.deepEqual(foreign, [], 'the page requested nothing outside the gateway');
  assert.deepEqual(failed, []);
  await page.close();
});
