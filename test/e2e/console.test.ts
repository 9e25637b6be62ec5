// The customer console (/console) in a real headless Chromium (Debian's, driven by puppeteer-core)
// on the real stack (Postgres, Temporal, MinIO, the gateway over HTTP, workers with the local
// renderer): sign in with the demo key, generate an image from the playground and see its pixels in
// a screenshot, a refusal shown from the dry run before any charge; the session's guarantees (the
// raw key is never in the page's storage or a readable cookie, a revoked key ends the session, a
// cross-site POST is refused); a video started from the playground whose percent moves, canceled,
// its refund in the receipt; the usage page's totals are GET /v1/usage's; a failed webhook delivery
// redelivered from the webhooks page; and axe on every page, at desktop and phone width.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { randomFillSync } from 'node:crypto';
import { crc32, deflateSync } from 'node:zlib';
import { createRequire } from 'node:module';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import puppeteer, { type Browser, type BrowserContext, type Page } from 'puppeteer-core';
import { MediaGenClient, type Pipeline } from '@mediagen/client';
import { createTenant, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { startService, type InProcessGateway, type Service } from '../support/services.js';
import { colourSummary, decodePng } from '../support/png-pixels.js';
import { seedDemo, type DemoSeed } from '../../admin/seed.js';
import { revokeApiKey } from '../../db/repos/workspaces.js';
import { chromiumPath, headlessChromiumArgs } from '../../scripts/screenshots/headless-chromium.js';
import { runAdmin } from '../../admin/main.js';
import { Receiver } from '../support/webhook-receiver.js';
import { imageStep, videoStep } from '../support/pipeline-steps.js';
import { verifyWebhook } from '@mediagen/client/webhooks';

let suite: Service;
let tdb: TestDatabase;
let gw: InProcessGateway;
let browser: Browser;
let demo: DemoSeed;
let axeSource: string;
const receiver = new Receiver();

const IMAGE_MODEL = 'nano-banana-2';
const VIDEO_MODEL = 'veo-3.1-lite';

before(async () => {
  suite = await startService({
    RATE_LIMIT_GENERATE_PER_MIN: '10000',
    RATE_LIMIT_POLL_PER_MIN: '100000',
    // `[latency:N]` in a prompt holds that one job at the local renderer (a video to watch and cancel).
    LOCAL_RENDER_FAULTS: 'true',
    // A delivery to the loopback receiver is given up after 3 quick attempts.
    WEBHOOK_ALLOW_LOOPBACK: 'true',
    WEBHOOK_TIMEOUT_MS: '1000',
    WEBHOOK_RETRY_INITIAL_MS: '100',
    WEBHOOK_RETRY_MAX_INTERVAL_MS: '200',
    WEBHOOK_RETRY_MAX_ATTEMPTS: '3',
  });
  ({ tdb, gw } = suite);
  demo = await seedDemo(tdb.db);
  await receiver.start();
  axeSource = await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  browser = await puppeteer.launch({
    executablePath: chromiumPath(),
    headless: true,
    // puppeteer adds its own --headless.
    args: headlessChromiumArgs().filter((a) => a !== '--headless'),
  });
});

after(async () => {
  await browser?.close();
  await receiver.close();
  await suite?.close();
});

/** A fresh browser profile (its own cookies and storage) with one page at `width`. */
async function freshPage(width = 1280): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  await page.setViewport({ width, height: 900 });
  return { context, page };
}

async function signIn(page: Page, key: string): Promise<void> {
  await page.goto(`${gw.baseUrl}/console#/playground`);
  await page.waitForSelector('#api_key');
  await page.type('#api_key', key);
  await page.click('form button[type=submit]');
  await page.waitForSelector('nav[aria-label=Console]');
}

/** Signs in and opens the playground on `model`, its form drawn (the prompt field there). */
async function openPlayground(page: Page, key: string, model: string): Promise<void> {
  await signIn(page, key);
  await page.waitForSelector('#model');
  await page.select('#model', model);
  await page.waitForSelector('textarea[name=prompt]');
}

/** A `side`×`side` PNG of random RGB noise, stored uncompressed: about 3·side² bytes. */
function noisePng(side: number): Buffer {
  const row = 1 + side * 3;
  const raw = Buffer.alloc(row * side);
  for (let y = 0; y < side; y++) randomFillSync(raw, y * row + 1, side * 3);
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([len, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(side, 0);
  ihdr.writeUInt32BE(side, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw, { level: 0 })), chunk('IEND', Buffer.alloc(0))]);
}

// In-page code is passed as source text: this project's types have no DOM.
const text = (page: Page) => page.evaluate<[], () => string>('document.body.innerText' as never);
const inPage = <T>(page: Page, expression: string): Promise<T> => page.evaluate(expression) as Promise<T>;

async function waitForText(page: Page, what: string, check: (t: string) => boolean, timeoutMs = 60_000): Promise<string> {
  let last = '';
  await waitFor(
    what,
    async () => {
      last = await text(page);
      return check(last);
    },
    timeoutMs,
    100,
  ).catch((err: Error) => {
    throw new Error(`${err.message}; the page shows:\n${last}`);
  });
  return last;
}

/** axe-core's serious and critical violations on the page as it is now. */
async function axeViolations(page: Page): Promise<string[]> {
  // Runtime.evaluate, not a script tag: the page's CSP admits only its own scripts.
  await page.evaluate(axeSource);
  const found = await inPage<{ id: string; impact: string; targets: string[] }[]>(
    page,
    `axe.run(document).then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, targets: v.nodes.map((n) => n.target.join(' ')) })))`,
  );
  return found.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.impact} ${v.id}: ${v.targets.join(', ')}`);
}

describe('the console in headless Chromium', () => {
  test('the gateway serves the console with a policy that admits only its own scripts', async () => {
    const page = await fetch(`${gw.baseUrl}/console`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /text\/html/);
    assert.match(page.headers.get('content-security-policy') ?? '', /default-src 'self'/);
    assert.match(await page.text(), /<script type="module" src="\/console\/app.js">/);
    const js = await fetch(`${gw.baseUrl}/console/app.js`);
    assert.equal(js.status, 200);
    assert.match(js.headers.get('content-type') ?? '', /javascript/);
    assert.ok((await js.arrayBuffer()).byteLength > 1000, 'the bundle is built');
    const other = await fetch(`${gw.baseUrl}/console/package.json`);
    assert.equal(other.status, 404);
  });

  test('sign in with the demo key: the key is in no storage and no readable cookie; the session cookie is httpOnly and SameSite=Strict', async () => {
    const { context, page } = await freshPage();
    try {
      await signIn(page, demo.apiKey);
      const stored = await inPage<Record<string, string>>(
        page,
        `({ local: JSON.stringify({ ...localStorage }), session: JSON.stringify({ ...sessionStorage }), cookie: document.cookie, html: document.documentElement.outerHTML })`,
      );
      const secret = demo.apiKey.split('_').pop()!;
      for (const [where, value] of Object.entries(stored)) {
        assert.ok(!value.includes(secret), `the key's secret is not in ${where}`);
        assert.ok(!value.includes('mg_live_'), `no key in ${where}`);
      }
      assert.equal(stored.cookie, '', 'no cookie is readable by the page');
      const cookies = await context.cookies();
      const session = cookies.find((c) => c.name === 'mg_console');
      assert.ok(session, `the session cookie is set: ${cookies.map((c) => c.name).join(', ')}`);
      assert.equal(session.httpOnly, true);
      assert.equal(session.sameSite, 'Strict');
      assert.ok(!session.value.includes(secret), 'the cookie holds a session id, not the key');
      // The page signed in reads the API as the key: the balance the key itself reads.
      const balance = await new MediaGenClient({ apiKey: demo.apiKey, baseUrl: gw.baseUrl }).balance.get();
      await page.goto(`${gw.baseUrl}/console#/usage`);
      await page.waitForSelector('[data-available]');
      assert.equal(await page.$eval('[data-available]', (e) => e.getAttribute('data-available')), String(balance.data.available));
    } finally {
      await context.close();
    }
  });

  test(
    'the playground generates an image and shows it: the screenshot has the output’s pixels; the job’s record shows its receipt',
    { timeout: 180_000 },
    async () => {
      const { context, page } = await freshPage();
      try {
        await openPlayground(page, demo.apiKey, IMAGE_MODEL);
        await page.type('textarea[name=prompt]', 'a red fox in snow at dusk');
        // The model takes a seed (GET /v1/models controls): the form draws a number field for it.
        await page.type('input[name=seed]', '12345');
        // The options every create takes are drawn as their types need: tags as a list, metadata as
        // key=value lines (the API refuses a string for either).
        await page.type('input[name=tags]', 'console, campaign:winter');
        await page.type('textarea[name=metadata]', 'order=A-7\ncustomer = cus_42');
        // Leaving the field prices the request (the dry run).
        await page.keyboard.press('Tab');
        const model = (await new MediaGenClient({ apiKey: demo.apiKey, baseUrl: gw.baseUrl }).models.list()).data.find((m) => m.name === IMAGE_MODEL)!;
        assert.ok(model.controls.includes('seed'));
        await waitForText(page, 'the dry run’s price', (t) => /Price: \d+ credits · available: \d+ credits/.test(t));
        assert.match(await text(page), new RegExp(`Price: ${model.price.credits} credits`));
        await page.click('form.playground button[type=submit]');
        const img = await page.waitForSelector('img.output', { timeout: 120_000 });
        await page.waitForFunction(`(() => { const i = document.querySelector('img.output'); return !!i && i.complete && i.naturalWidth > 0 })()`);
        const src = await inPage<string>(page, `document.querySelector('img.output').src`);
        const original = colourSummary(decodePng(Buffer.from(await (await fetch(src)).arrayBuffer())));
        const shot = colourSummary(decodePng(Buffer.from(await img!.screenshot({ type: 'png' }))));
        assert.ok(shot.spread > 5, `the picture is not one flat colour (spread ${shot.spread.toFixed(1)})`);
        for (let c = 0; c < 3; c++) {
          assert.ok(
            Math.abs(shot.mean[c]! - original.mean[c]!) < 12,
            `channel ${c}: the screen shows ${shot.mean[c]!.toFixed(0)}, the output has ${original.mean[c]!.toFixed(0)}`,
          );
        }
        // Its record: completed, charged the price, nothing refunded.
        const jobId = await page.$eval('h2 a[href^="#/jobs/"]', (a) => a.textContent!);
        const record = await new MediaGenClient({ apiKey: demo.apiKey, baseUrl: gw.baseUrl }).images.get(jobId);
        assert.equal(record.seed, 12345, 'the seed was sent as a number and round-trips');
        assert.deepEqual(record.tags, ['console', 'campaign:winter']);
        assert.deepEqual(record.metadata, { order: 'A-7', customer: 'cus_42' });
        await page.goto(`${gw.baseUrl}/console#/jobs`);
        await waitForText(page, 'the job in the list', (t) => t.includes(jobId));
        await page.click(`a[href="#/jobs/${jobId}"]`);
        await page.waitForSelector('[data-charged]');
        assert.equal(await page.$eval('[data-charged]', (e) => e.getAttribute('data-charged')), String(model.price.credits));
        assert.equal(await page.$eval('[data-refunded]', (e) => e.getAttribute('data-refunded')), '0');
        assert.equal(await page.$eval('[role=status]', (e) => e.getAttribute('data-status')), 'completed');
      } finally {
        await context.close();
      }
    },
  );

  test('the playground sends the output format and quality and the reuse choice as the API takes them', { timeout: 180_000 }, async () => {
    const tenant = await createTenant(tdb.db, 1000);
    const client = new MediaGenClient({ apiKey: tenant.apiKey, baseUrl: gw.baseUrl });
    const model = (await client.models.list()).data.find((m) => m.name === IMAGE_MODEL)!;
    assert.deepEqual(model.output_formats, ['png', 'jpeg', 'webp'], 'the model takes them here');
    // An image takes no negative prompt (GET /v1/models controls): the form draws none.
    assert.ok(!model.controls.includes('negative_prompt'));
    const { context, page } = await freshPage();
    try {
      await openPlayground(page, tenant.apiKey, IMAGE_MODEL);
      await page.type('textarea[name=prompt]', 'a lighthouse at dawn');
      assert.equal(await page.$('textarea[name=negative_prompt]'), null, 'no negative prompt field for an image');
      // Quality is drawn only beside a format that takes it (the API refuses it with png).
      assert.equal(await page.$('input[name=output_quality]'), null, 'no quality field beside the default png');
      await page.select('select[name=output_format]', 'webp');
      await page.waitForSelector('input[name=output_quality]');
      await page.type('input[name=output_quality]', '80');
      await page.select('select[name=reuse]', 'false');
      await page.keyboard.press('Tab');
      // A quality sent as text, or reuse as a string, would be refused by the dry run and shown instead.
      await waitForText(page, 'the dry run’s price', (t) => /Price: \d+ credits · available: \d+ credits/.test(t));
      await page.click('form.playground button[type=submit]');
      await page.waitForSelector('h2 a[href^="#/jobs/"]');
      const jobId = await page.$eval('h2 a[href^="#/jobs/"]', (a) => a.textContent!);
      const record = await client.images.get(jobId);
      assert.equal(record.output_format, 'webp');
      assert.equal(record.output_quality, 80);
      const row = await tdb.db.selectFrom('jobs').select('reuse_key').where('id', '=', jobId).executeTakeFirstOrThrow();
      assert.equal(row.reuse_key, null, 'reuse: false kept the job out of reuse');
      await waitFor('the job completed', async () => (await client.images.get(jobId)).status === 'completed', 120_000);
      const stored = await fetch((await client.images.url(jobId)).url);
      assert.equal(stored.headers.get('content-type'), 'image/webp', 'stored as the asked format');
      assert.equal(
        Buffer.from(await stored.arrayBuffer())
          .subarray(8, 12)
          .toString('latin1'),
        'WEBP',
      );
    } finally {
      await context.close();
    }
  });

  test('a prompt longer than the model allows shows the API’s message from the dry run, and nothing is charged', async () => {
    const tenant = await createTenant(tdb.db, 1000);
    const client = new MediaGenClient({ apiKey: tenant.apiKey, baseUrl: gw.baseUrl });
    const model = (await client.models.list()).data.find((m) => m.name === IMAGE_MODEL)!;
    const { context, page } = await freshPage();
    try {
      await openPlayground(page, tenant.apiKey, IMAGE_MODEL);
      const long = 'a fox '.repeat(Math.ceil((model.prompt_length!.max + 10) / 6));
      await inPage(
        page,
        `(() => { const e = document.querySelector('textarea[name=prompt]'); e.value = ${JSON.stringify(long)}; e.dispatchEvent(new Event('input', { bubbles: true })); e.dispatchEvent(new Event('change', { bubbles: true })) })()`,
      );
      // The message the API gives for the same body.
      const refused = await client.images
        .quote({ project_id: tenant.projectId, model: IMAGE_MODEL, prompt: long.trim(), aspect_ratio: model.default_aspect_ratio as '1:1', count: 1 })
        .then(
          () => assert.fail('the API refuses the prompt'),
          (err: { message: string; code: string }) => err,
        );
      // The page's alert once the dry run of the long prompt answered (the model's selection ran one
      // before it, without a prompt, whose refusal may show first).
      const alertText = `document.querySelector('form.playground [role=alert]')?.textContent ?? ''`;
      const shown = await page.waitForFunction(`(${alertText}).includes(${JSON.stringify(refused.message)})`, { timeout: 15_000 }).then(
        () => inPage<string>(page, alertText),
        async () => `(not shown within 15 s) ${await inPage<string>(page, alertText)}`,
      );
      assert.ok(shown.includes(refused.message) && shown.includes(refused.code), `the page shows the API's message: ${shown} (API: ${refused.message})`);
      await page.click('form.playground button[type=submit]');
      await page.waitForFunction(`!document.querySelector('form.playground button[type=submit]').disabled`);
      assert.equal((await client.balance.get()).data.available, 1000, 'nothing charged');
      assert.equal((await client.jobs.list()).data.length, 0, 'no job created');
    } finally {
      await context.close();
    }
  });

  test('files dropped on the playground are uploaded at once (a large one straight to storage) and the job takes them', { timeout: 180_000 }, async () => {
    const tenant = await createTenant(tdb.db, 10_000);
    const client = new MediaGenClient({ apiKey: tenant.apiKey, baseUrl: gw.baseUrl });
    const { context, page } = await freshPage();
    try {
      await signIn(page, tenant.apiKey);
      await page.waitForSelector('#model');
      await page.select('#model', VIDEO_MODEL);
      const zone = '[data-upload=start_frame_file_id]';
      await page.waitForSelector(zone);
      await page.type('textarea[name=prompt]', 'the fox walks off into the snow');
      // A video model takes a negative prompt here (GET /v1/models controls): drawn as its own field.
      assert.ok((await client.models.list()).data.find((m) => m.name === VIDEO_MODEL)!.controls.includes('negative_prompt'));
      await page.type('textarea[name=negative_prompt]', 'people, text');
      /** Drops a PNG of `side`×`side` noise on the start frame's field, as a browser drop does (a DataTransfer of one File). */
      const drop = (name: string, side: number) =>
        inPage(
          page,
          `(() => { const b = Uint8Array.from(atob(${JSON.stringify(noisePng(side).toString('base64'))}), (c) => c.charCodeAt(0));
              const dt = new DataTransfer(); dt.items.add(new File([b], ${JSON.stringify(name)}, { type: 'image/png' }));
              document.querySelector(${JSON.stringify(zone)}).dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true })) })()`,
        );
      const heldId = () => inPage<string>(page, `document.querySelector('input[type=hidden][name=start_frame_file_id]').value`);
      // A small frame goes through the gateway (POST /v1/upload).
      await drop('small.png', 64);
      await waitFor('the small upload', async () => (await heldId()).startsWith('upl_'), 60_000);
      const small = await heldId();
      assert.doesNotMatch(await text(page), /straight to storage/);
      // One above 4 MiB goes straight to storage (a presigned POST the page sends itself) and replaces it.
      await drop('large.png', 1280);
      await waitFor('the large upload', async () => /^upl_/.test(await heldId()) && (await heldId()) !== small, 120_000);
      const large = await heldId();
      await waitForText(page, 'the direct upload noted', (t) => t.includes(`large.png → ${large} (straight to storage)`));
      const record = await client.uploads.get(large);
      assert.equal(record.status, 'completed');
      assert.ok(record.file_size > 4 * 1024 * 1024, `stored ${record.file_size} bytes`);
      // Priced by the dry run with the frame, then created with it.
      await waitForText(page, 'the dry run’s price', (t) => /Price: \d+ credits · available: \d+ credits/.test(t));
      await page.click('form.playground button[type=submit]');
      await page.waitForSelector('h2 a[href^="#/jobs/"]');
      const jobId = await page.$eval('h2 a[href^="#/jobs/"]', (a) => a.textContent!);
      const row = await tdb.db.selectFrom('jobs').select('params').where('id', '=', jobId).executeTakeFirstOrThrow();
      assert.equal((row.params as { start_frame_file_id?: string }).start_frame_file_id, large, 'the job takes the dropped frame');
      assert.equal((row.params as { negative_prompt?: string }).negative_prompt, 'people, text', 'and the negative prompt');
    } finally {
      await context.close();
    }
  });

  test('a revoked key ends its session on the next request', async () => {
    const tenant: Tenant = await createTenant(tdb.db, 100);
    const { context, page } = await freshPage();
    try {
      await signIn(page, tenant.apiKey);
      assert.equal(await page.evaluate(async () => (await fetch('/v1/balance')).status), 200, 'the session reads the API');
      await revokeApiKey(tdb.db, { workspaceId: tenant.workspaceId, keyId: tenant.apiKeyId, actorEmail: tenant.ownerEmail });
      const after = await page.evaluate(async () => {
        const r = await fetch('/v1/balance');
        return { status: r.status, body: (await r.json()) as { error: { code: string } } };
      });
      assert.equal(after.status, 401);
      assert.equal(after.body.error.code, 'unauthorized');
      // The console, reloaded, asks to sign in again.
      await page.reload();
      await page.waitForSelector('#api_key');
    } finally {
      await context.close();
    }
  });

  test('a cross-site POST carrying the session is refused (403), and a same-origin one is served', async () => {
    const tenant = await createTenant(tdb.db, 1000);
    // Another origin on loopback: the same site for cookies (ports do not make sites), so only the Origin check stands between it and the session.
    const evil: Server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>elsewhere</title>'));
    await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r));
    const evilBase = `http://127.0.0.1:${(evil.address() as AddressInfo).port}`;
    const { context, page } = await freshPage();
    try {
      await signIn(page, tenant.apiKey);
      const body = JSON.stringify({ project_id: tenant.projectId, model: IMAGE_MODEL, prompt: 'a fox', aspect_ratio: '1:1', count: 1 });
      await page.goto(evilBase);
      const statuses: number[] = [];
      page.on('response', (r) => {
        if (r.url().startsWith(`${gw.baseUrl}/v1/images/generate`)) statuses.push(r.status());
      });
      // A simple request (no preflight): text/plain, the cookie sent along.
      await page.evaluate(
        async (url, b) => {
          await fetch(url, { method: 'POST', mode: 'no-cors', credentials: 'include', headers: { 'content-type': 'text/plain' }, body: b });
        },
        `${gw.baseUrl}/v1/images/generate`,
        body,
      );
      await waitFor('the cross-site answer', async () => statuses.length > 0, 10_000, 50);
      assert.deepEqual(statuses, [403]);
      // A form post from elsewhere, the oldest cross-site request there is.
      await inPage(
        page,
        `(() => { const f = document.createElement('form'); f.method = 'POST'; f.action = ${JSON.stringify(`${gw.baseUrl}/v1/images/generate`)}; document.body.append(f); f.submit() })()`,
      );
      await waitFor('the form post’s answer', async () => statuses.length > 1, 10_000, 50);
      assert.equal(statuses[1], 403);
      const client = new MediaGenClient({ apiKey: tenant.apiKey, baseUrl: gw.baseUrl });
      assert.equal((await client.jobs.list()).data.length, 0, 'no job was created');
      assert.equal((await client.balance.get()).data.available, 1000);
      // The same request from the console's own origin is served.
      await page.goto(`${gw.baseUrl}/console#/jobs`);
      await page.waitForSelector('nav[aria-label=Console]');
      const own = await page.evaluate(
        async (b) => (await fetch('/v1/images/generate?dry_run=true', { method: 'POST', headers: { 'content-type': 'application/json' }, body: b })).status,
        body,
      );
      assert.equal(own, 200);
    } finally {
      await context.close();
      await new Promise((r) => evil.close(r));
    }
  });

  test('a session cookie sent without the gateway’s own Origin is refused on a state-changing request', async () => {
    const tenant = await createTenant(tdb.db, 100);
    const signIn = await fetch(`${gw.baseUrl}/console/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: gw.baseUrl },
      body: JSON.stringify({ api_key: tenant.apiKey }),
    });
    assert.equal(signIn.status, 201);
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
    const post = (headers: Record<string, string>) =>
      fetch(`${gw.baseUrl}/v1/images/generate?dry_run=true`, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ project_id: tenant.projectId, model: IMAGE_MODEL, prompt: 'a fox', aspect_ratio: '1:1', count: 1 }),
      });
    for (const [what, headers] of [
      ['no Origin', {}],
      ['another Origin', { origin: 'http://127.0.0.1:1' }],
      ['a cross-site fetch', { origin: gw.baseUrl, 'sec-fetch-site': 'cross-site' }],
    ] as const) {
      const r = await post(headers);
      assert.equal(r.status, 403, what);
      assert.equal(((await r.json()) as { error: { code: string } }).error.code, 'forbidden', what);
    }
    assert.equal((await post({ origin: gw.baseUrl })).status, 200, 'the gateway’s own origin is served');
    // A sign-in from elsewhere is refused too (no login CSRF).
    const foreign = await fetch(`${gw.baseUrl}/console/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'http://127.0.0.1:1' },
      body: JSON.stringify({ api_key: tenant.apiKey }),
    });
    assert.equal(foreign.status, 403);
    // Signing out ends the session: the cookie reads nothing afterwards.
    const out = await fetch(`${gw.baseUrl}/console/session`, { method: 'DELETE', headers: { cookie, origin: gw.baseUrl } });
    assert.equal(out.status, 204);
    assert.equal((await fetch(`${gw.baseUrl}/v1/balance`, { headers: { cookie } })).status, 401);
  });

  test('bad sign-ins answer 4xx with the error body', async () => {
    for (const [body, status] of [
      ['{}', 400],
      ['{"api_key":42}', 400],
      ['{"api_key":"nope"}', 401],
      [JSON.stringify({ api_key: `mg_live_${'a'.repeat(16)}_${'b'.repeat(32)}` }), 401],
      ['not json', 400],
    ] as const) {
      const r = await fetch(`${gw.baseUrl}/console/session`, { method: 'POST', headers: { 'content-type': 'application/json', origin: gw.baseUrl }, body });
      assert.equal(r.status, status, body);
      const parsed = (await r.json()) as { error: { code: string; message: string } };
      assert.ok(parsed.error.code && parsed.error.message, body);
    }
  });

  test(
    'a video started in the playground shows its percent moving; canceled from the console, its receipt shows the refund the API records',
    { timeout: 180_000 },
    async () => {
      const tenant = await createTenant(tdb.db, 10_000);
      const client = new MediaGenClient({ apiKey: tenant.apiKey, baseUrl: gw.baseUrl });
      const model = (await client.models.list()).data.find((m) => m.name === VIDEO_MODEL)!;
      const { context, page } = await freshPage();
      try {
        await openPlayground(page, tenant.apiKey, VIDEO_MODEL);
        // The shortest, smallest video: its render is quick; the marker then holds it two minutes.
        if (model.resolutions.length) await page.select('select[name=resolution]', model.resolutions[0]!);
        if (await page.$('select[name=duration]')) {
          const shortest = await page.$eval('select[name=duration] option', (o) => o.getAttribute('value')!);
          await page.select('select[name=duration]', shortest);
        }
        await page.type('textarea[name=prompt]', 'the tide comes in slowly [latency:120000]');
        await page.click('form.playground button[type=submit]');
        const link = await page.waitForSelector('h2 a[href^="#/jobs/"]', { timeout: 60_000 });
        const jobId = await link!.evaluate((a) => a.textContent!);
        // The percent the page shows, as the job's events bring it: two different figures, growing.
        const seen: number[] = [];
        await waitFor(
          'the percent to move',
          async () => {
            const percent = await page.$eval('.job-progress [role=status]', (e) => e.getAttribute('data-percent'));
            if (percent && seen.at(-1) !== Number(percent)) seen.push(Number(percent));
            return seen.length >= 2;
          },
          90_000,
          100,
        );
        assert.ok(seen[1]! > seen[0]! && seen[1]! < 100, `the percent grew: ${seen.join(' → ')}`);
        assert.equal(await page.$eval('.job-progress [role=status]', (e) => e.getAttribute('data-status')), 'generating');
        await page.click('.job-progress button.danger');
        await page.waitForSelector('.job-progress [role=status][data-status=failed]', { timeout: 60_000 });
        assert.match(await text(page), /\(canceled\)/, 'the cancel is shown with its code');
        // The receipt on the job's page: what the API's timeline records, the price charged and refunded.
        const timeline = await waitFor('the refund recorded', async () => {
          const t = await client.jobs.timeline(jobId);
          return t.charges.refunded > 0 ? t : undefined;
        });
        assert.ok(timeline.charges.charged > 0);
        await page.goto(`${gw.baseUrl}/console#/jobs/${jobId}`);
        await page.waitForSelector('[data-refunded]');
        assert.equal(await page.$eval('[data-charged]', (e) => e.getAttribute('data-charged')), String(timeline.charges.charged));
        assert.equal(await page.$eval('[data-refunded]', (e) => e.getAttribute('data-refunded')), String(timeline.charges.refunded));
        assert.equal(await page.$eval('[data-net]', (e) => e.getAttribute('data-net')), String(timeline.charges.net));
        assert.equal((await client.balance.get()).data.available, 10_000 - timeline.charges.net, 'the balance agrees with the receipt');
      } finally {
        await context.close();
      }
    },
  );

  test('the usage page shows the totals GET /v1/usage answers, with and without a grouping', { timeout: 120_000 }, async () => {
    const { context, page } = await freshPage();
    try {
      await signIn(page, demo.apiKey);
      const client = new MediaGenClient({ apiKey: demo.apiKey, baseUrl: gw.baseUrl });
      for (const groupBy of ['', 'model'] as const) {
        await page.goto(`${gw.baseUrl}/console#/usage`);
        await page.waitForSelector('[data-total-spent]');
        if (groupBy) {
          await page.select('select', groupBy);
          await page.waitForSelector('thead th:nth-child(6)');
        }
        const usage = await client.usage.get({ granularity: 'day', ...(groupBy ? { group_by: groupBy } : {}) });
        assert.ok(usage.totals.jobs.created > 0, 'the demo workspace has usage to show');
        const shown = await inPage<Record<string, string>>(
          page,
          `Object.fromEntries(['spent', 'refunded', 'net', 'jobs'].map((k) => [k, document.querySelector('[data-total-' + k + ']').getAttribute('data-total-' + k)]))`,
        );
        const t = usage.totals;
        assert.deepEqual(
          shown,
          { spent: String(t.credits.spent), refunded: String(t.credits.refunded), net: String(t.credits.net), jobs: String(t.jobs.created) },
          `group by ${groupBy || 'nothing'}`,
        );
        const rows = await inPage<string[]>(page, `[...document.querySelectorAll('tbody [data-spent]')].map((e) => e.getAttribute('data-spent'))`);
        assert.deepEqual(
          rows,
          usage.data.map((r) => String(r.credits.spent)),
          'one row per row of the API',
        );
      }
    } finally {
      await context.close();
    }
  });

  test('a webhook delivery given up after failing is redelivered from the console and delivered', { timeout: 120_000 }, async () => {
    const tenant = await createTenant(tdb.db, 1000);
    const rotated = await runAdmin(['webhook', 'secret', 'rotate', '--workspace', tenant.workspaceId, '--as', tenant.ownerEmail, '--json'], {
      ...process.env,
      DATABASE_URL: tdb.url,
    });
    assert.equal(rotated.code, 0, rotated.stderr);
    const path = '/console-hooks/failing';
    receiver.scripts.set(path, [500, 500, 500, 204]);
    const client = new MediaGenClient({ apiKey: tenant.apiKey, baseUrl: gw.baseUrl });
    const job = await client.images.generate({
      project_id: tenant.projectId,
      model: IMAGE_MODEL,
      prompt: 'a lighthouse at dusk',
      aspect_ratio: '1:1',
      count: 1,
      webhook_url: `${receiver.base}${path}`,
      webhook_events: ['completed'],
    });
    const failed = await waitFor('the delivery given up', async () => {
      const d = (await client.webhookDeliveries.list({ job_id: job.id })).data[0];
      return d?.status === 'failed' ? d : undefined;
    });
    const { context, page } = await freshPage();
    try {
      await signIn(page, tenant.apiKey);
      await page.goto(`${gw.baseUrl}/console#/webhooks`);
      await waitForText(page, 'the failed delivery with its attempts', (t) => t.includes(failed.id) && (t.match(/Attempt \d at/g) ?? []).length === 3);
      assert.equal(receiver.at(path).length, 3);
      const button = await page.waitForSelector(`xpath/.//button[contains(., ${JSON.stringify(`Redeliver ${failed.id}`)})]`);
      await button!.click();
      await waitForText(page, 'the redelivery queued', (t) => t.includes(`Redelivery of ${failed.id} queued.`));
      await waitFor('the redelivery received', async () => receiver.at(path).length === 4);
      assert.equal(receiver.at(path)[3]!.headers['webhook-id'], failed.id, 'the same event, sent again');
      await waitFor('the delivery delivered', async () => (await client.webhookDeliveries.get(failed.id)).status === 'delivered');
      await page.reload();
      await waitForText(page, 'the delivery shown delivered', (t) => t.includes(failed.id) && (t.match(/Attempt \d at/g) ?? []).length === 4);
      assert.equal(await page.$eval('.deliveries .badge', (e) => e.textContent), 'delivered');
    } finally {
      await context.close();
    }
  });

  test('pipelines: listed, the record shows its steps live, and a cancel from the console ends it as the API records', { timeout: 180_000 }, async () => {
    const tenant = await createTenant(tdb.db, 10_000);
    const client = new MediaGenClient({ apiKey: tenant.apiKey, baseUrl: gw.baseUrl });
    // The first step is held at the local renderer, so the pipeline is still running when canceled.
    // (The steps' kinds are plain strings to the compiler, as in the pipeline suites.)
    const created = (
      await client.pipelines.create({
        project_id: tenant.projectId,
        steps: [imageStep('a lighthouse held in the fog [latency:120000]'), videoStep()],
      } as never)
    ).data as Pipeline;
    const id = created.id;
    const { context, page } = await freshPage();
    try {
      await signIn(page, tenant.apiKey);
      await page.goto(`${gw.baseUrl}/console#/pipelines`);
      await page.waitForSelector(`a[href="#/pipelines/${id}"]`);
      await page.click(`a[href="#/pipelines/${id}"]`);
      await page.waitForSelector('[data-step=still][data-step-status=generating]', { timeout: 90_000 });
      assert.equal(await page.$eval('[data-step=clip]', (e) => e.getAttribute('data-step-status')), 'waiting');
      await page.click('button.danger');
      await page.waitForSelector('[role=status][data-status=failed]', { timeout: 60_000 });
      const ended = await waitFor('the pipeline ended', async () => {
        const p = (await client.pipelines.get(id)).data;
        return p.status === 'failed' ? p : undefined;
      });
      assert.equal(ended.error?.code, 'canceled');
      assert.match(await text(page), /\(canceled\)/, 'the cancel is shown with its code');
      // The steps as the API has them once the events have arrived.
      await page.reload();
      await page.waitForSelector('[role=status][data-status=failed]');
      const shown = await inPage<string[]>(page, `[...document.querySelectorAll('[data-step]')].map((e) => e.dataset.step + ':' + e.dataset.stepStatus)`);
      assert.deepEqual(
        shown,
        ended.steps.map((s) => `${s.id}:${s.status}`),
      );
      assert.notEqual(ended.steps[1]!.status, 'completed', 'no later step ran');
    } finally {
      await context.close();
    }
  });

  test('budgets: the page shows each budget as GET /v1/budgets has it', async () => {
    const tenant = await createTenant(tdb.db, 1000);
    const client = new MediaGenClient({ apiKey: tenant.apiKey, baseUrl: gw.baseUrl });
    await client.apiKeys.create({ name: 'capped', scopes: ['read', 'generate'], budget: { limit: 250, period: 'day' } });
    const budgets = (await client.budgets.list()).data;
    assert.equal(budgets.length, 1);
    const { context, page } = await freshPage();
    try {
      await signIn(page, tenant.apiKey);
      await page.goto(`${gw.baseUrl}/console#/budgets`);
      await page.waitForSelector('[data-budget-id]');
      const shown = await inPage<string[][]>(
        page,
        `[...document.querySelectorAll('[data-budget-id]')].map((r) => [r.dataset.budgetId, r.querySelector('[data-limit]').dataset.limit, r.querySelector('[data-spent]').dataset.spent, r.querySelector('[data-remaining]').dataset.remaining])`,
      );
      assert.deepEqual(
        shown,
        budgets.map((b) => [b.id, String(b.limit), String(b.spent), String(b.remaining)]),
      );
    } finally {
      await context.close();
    }
  });

  test(
    'API keys: listed with the session; create (confirmed with the key) shows the secret once and it works, revoke ends the key',
    { timeout: 120_000 },
    async () => {
      const tenant = await createTenant(tdb.db, 1000);
      const owner = new MediaGenClient({ apiKey: tenant.apiKey, baseUrl: gw.baseUrl });
      const { context, page } = await freshPage();
      const confirmWithKey = () => page.type('#confirm_key', tenant.apiKey);
      try {
        await signIn(page, tenant.apiKey);
        await page.goto(`${gw.baseUrl}/console#/keys`);
        await page.waitForSelector(`[data-key-id="${tenant.apiKeyId}"]`);
        // Without the key typed again, nothing is sent: the page says what it needs.
        await page.type('form.new-key input[name=name]', 'ci deploys');
        await page.click('form.new-key button[type=submit]');
        await waitForText(page, 'the confirm prompt', (t) => t.includes('changing keys needs the key itself'));
        await confirmWithKey();
        await page.click('form.new-key button[type=submit]');
        const secret = await (await page.waitForSelector('[data-secret]'))!.evaluate((e) => e.textContent!);
        assert.match(secret, /^mg_live_/);
        assert.equal(await page.$eval('#confirm_key', (e) => (e as unknown as { value: string }).value), '', 'the confirming key is not left in the page');
        const stored = await inPage<string>(page, `JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + document.cookie`);
        assert.ok(!stored.includes(tenant.apiKey.split('_').pop()!), 'the confirming key is in no storage');
        const created = (await owner.apiKeys.list()).data.find((k) => k.name === 'ci deploys');
        assert.ok(created, 'the key is created');
        assert.deepEqual(created.scopes, ['read', 'generate', 'uploads'], 'the scopes ticked by default');
        const minted = new MediaGenClient({ apiKey: secret, baseUrl: gw.baseUrl, maxRetries: 0 });
        assert.equal((await minted.balance.get()).data.available, 1000, 'the secret shown is the key');
        await page.waitForSelector(`[data-key-id="${created.id}"]`);
        // Shown once: a reload of the page shows the key, never its secret.
        await page.reload();
        await page.waitForSelector(`[data-key-id="${created.id}"]`);
        assert.ok(!(await inPage<string>(page, 'document.documentElement.outerHTML')).includes(secret), 'the secret is gone from the page');
        await confirmWithKey();
        await (await page.waitForSelector(`[data-key-id="${created.id}"] button`))!.click();
        await page.waitForSelector(`[data-key-id="${created.id}"] .badge.failed`);
        await assert.rejects(minted.balance.get(), (err: { status: number }) => err.status === 401, 'the revoked key is refused');
        // A refusal is shown with the API's message: a scope the acting key lacks.
        const narrow = await owner.apiKeys.create({ name: 'reader', scopes: ['read', 'admin'] });
        await page.type('#confirm_key', narrow.data.key);
        await page.type('form.new-key input[name=name]', 'wider');
        await page.click('form.new-key button[type=submit]');
        const alert = await page.waitForSelector('[role=alert]');
        assert.match(await alert!.evaluate((e) => e.textContent ?? ''), /a key cannot mint a key with more than it has \(key_scope_denied\)/);
      } finally {
        await context.close();
      }
    },
  );

  test('webhook endpoints: add one (its secret shown once), its test ping arrives signed with that secret, disable, delete', { timeout: 120_000 }, async () => {
    const tenant = await createTenant(tdb.db, 1000);
    const client = new MediaGenClient({ apiKey: tenant.apiKey, baseUrl: gw.baseUrl });
    const path = '/console-hooks/endpoint';
    const url = `${receiver.base}${path}`;
    const { context, page } = await freshPage();
    try {
      await signIn(page, tenant.apiKey);
      await page.goto(`${gw.baseUrl}/console#/endpoints`);
      await waitForText(page, 'the empty list', (t) => t.includes('No endpoints yet.'));
      await page.type('form.new-endpoint input[name=url]', url);
      await page.click('form.new-endpoint button[type=submit]');
      const secret = await (await page.waitForSelector('[data-secret]'))!.evaluate((e) => e.textContent!);
      const [endpoint] = await client.webhookEndpoints.list();
      assert.ok(endpoint && endpoint.url === url, 'the endpoint is created');
      assert.deepEqual(endpoint.event_types, ['job.*']);
      const buttons = async () => page.$$(`[data-endpoint-id="${endpoint.id}"] button`);
      await page.waitForSelector(`[data-endpoint-id="${endpoint.id}"]`);
      await (await buttons())[0]!.click();
      await waitForText(page, 'the ping sent', (t) => t.includes(`sent to ${url}`));
      const ping = await waitFor('the ping received', async () => receiver.at(path)[0]);
      const event = verifyWebhook(secret, ping.body, ping.headers);
      assert.equal(event.type, 'webhook.ping');
      await (await buttons())[1]!.click();
      await waitForText(page, 'disabled', (t) => t.includes('Disabled.'));
      assert.equal((await client.webhookEndpoints.get(endpoint.id)).enabled, false);
      await (await buttons())[2]!.click();
      await waitForText(page, 'deleted', (t) => t.includes(`Deleted ${endpoint.id}.`));
      assert.deepEqual(await client.webhookEndpoints.list(), []);
      // A refusal is the API's message: an event type there is none of.
      await page.type('form.new-endpoint input[name=url]', url);
      await page.$eval('form.new-endpoint input[name=event_types]', (e) => ((e as unknown as { value: string }).value = 'no.such.event'));
      await page.click('form.new-endpoint button[type=submit]');
      const alert = await page.waitForSelector('[role=alert]');
      assert.match(await alert!.evaluate((e) => e.textContent ?? ''), /\(\w+\)$/);
    } finally {
      await context.close();
    }
  });

  test(
    'every page passes axe (no serious or critical violation) at desktop and phone width, and nothing scrolls sideways on a phone',
    { timeout: 180_000 },
    async () => {
      // A pipeline of the demo workspace, for the pipelines pages.
      const demoClient = new MediaGenClient({ apiKey: demo.apiKey, baseUrl: gw.baseUrl });
      // The newest job (the playground's image) before the pipeline's step jobs come.
      const jobId = (await demoClient.jobs.list({ limit: 1 })).data[0]?.id;
      const pipelineId = ((await demoClient.pipelines.create({ project_id: demo.projectId, steps: [imageStep()] } as never)).data as Pipeline).id;
      for (const width of [1280, 390]) {
        const { context, page } = await freshPage(width);
        try {
          await page.goto(`${gw.baseUrl}/console`);
          await page.waitForSelector('#api_key');
          assert.deepEqual(await axeViolations(page), [], `sign-in at ${width}px`);
          await signIn(page, demo.apiKey);
          const pages: [string, string][] = [
            ['#/playground', 'textarea[name=prompt]'],
            ['#/jobs', 'table tbody tr'],
            ['#/usage', '[data-available]'],
            ['#/pipelines', 'table tbody tr'],
            ['#/budgets', 'table'],
            ['#/webhooks', 'h1'],
            ['#/endpoints', 'form.new-endpoint'],
            ['#/keys', 'table tbody tr'],
          ];
          if (jobId) pages.push([`#/jobs/${jobId}`, '[data-charged]']);
          pages.push([`#/pipelines/${pipelineId}`, '[data-step]']);
          for (const [hash, ready] of pages) {
            await page.goto(`${gw.baseUrl}/console${hash}`);
            await page.waitForSelector(ready);
            assert.deepEqual(await axeViolations(page), [], `${hash} at ${width}px`);
            if (width < 600) {
              const overflow = await inPage<number>(page, 'document.documentElement.scrollWidth - window.innerWidth');
              assert.ok(overflow <= 0, `${hash} fits a ${width}px screen (${overflow}px too wide)`);
            }
          }
        } finally {
          await context.close();
        }
      }
    },
  );
});
