// The README's picture of the console: signs in to the playground with a key, picks a video model
// that takes a start frame, drops an image on that field (made first through the API, so it is a
// real picture), sets the generation controls, waits for the dry run's price, generates, waits
// until the video is playable in the page, and saves a PNG of the whole page.
//
//   npm run dev                          # prints the base URL, the demo key and the demo project
//   node dist/scripts/screenshots/screenshot-console.js --base-url http://127.0.0.1:8080 --key mg_live_… [--model veo-3.1-lite] [--out docs/console.png]
//
// Chromium is Debian's (CHROMIUM_PATH overrides the path) and may reach loopback addresses only.
import puppeteer, { type Page } from 'puppeteer-core';
import { chromiumPath, headlessChromiumArgs } from './headless-chromium.js';
import { MediaGenClient } from '@mediagen/client';

function arg(name: string): string | undefined {
  const argv = process.argv.slice(2);
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
}

/** Polls `check` until it returns true, up to `seconds`. */
async function until(what: string, check: () => Promise<boolean>, seconds: number): Promise<void> {
  for (let waited = 0; !(await check()); waited += 0.5) {
    if (waited > seconds) throw new Error(`${what}: not within ${seconds} s`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** A still made through the API (the demo stack's renderer), as PNG bytes: what the playground's start frame gets. */
async function makeStill(client: MediaGenClient, project: string): Promise<Buffer> {
  const job = await client.images.generate({
    project_id: project,
    model: 'nano-banana-2',
    prompt: 'a red fox in snow at dusk',
    aspect_ratio: '16:9',
    count: 1,
  });
  const done = await client.waitForJob({ kind: 'images', id: job.id });
  return Buffer.from(await (await fetch(done.urls[0]!)).arrayBuffer());
}

/** Drops `png` on the upload field `field` as a browser drop does (a DataTransfer holding one File). */
async function dropFile(page: Page, field: string, name: string, png: Buffer): Promise<void> {
  await page.evaluate(`(() => {
    const bytes = Uint8Array.from(atob(${JSON.stringify(png.toString('base64'))}), (c) => c.charCodeAt(0));
    const dt = new DataTransfer();
    dt.items.add(new File([bytes], ${JSON.stringify(name)}, { type: 'image/png' }));
    document.querySelector('[data-upload=${field}]').dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  })()`);
}

async function main() {
  const baseUrl = arg('base-url') ?? process.env.MEDIAGEN_BASE_URL;
  const key = arg('key') ?? process.env.MEDIAGEN_API_KEY;
  if (!baseUrl || !key) throw new Error('--base-url and --key (or MEDIAGEN_BASE_URL and MEDIAGEN_API_KEY) are needed');
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(new URL(baseUrl).hostname)) throw new Error('the gateway must be on a loopback address');
  const model = arg('model') ?? 'veo-3.1-lite';
  const out = arg('out') ?? '/tmp/console.png';
  const client = new MediaGenClient({ apiKey: key, baseUrl });
  const project = (await client.projects.list({ limit: 1 })).data[0]?.id;
  if (!project) throw new Error('the workspace has no project');
  const still = await makeStill(client, project);

  const browser = await puppeteer.launch({ executablePath: chromiumPath(), headless: true, args: headlessChromiumArgs().filter((a) => a !== '--headless') });
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    await page.goto(`${baseUrl}/console#/playground`);
    await page.waitForSelector('#api_key');
    await page.type('#api_key', key);
    await page.click('form button[type=submit]');
    await page.waitForSelector('#model');
    await page.select('#model', model);
    await page.waitForSelector('[data-upload=start_frame_file_id]');
    await page.type('textarea[name=prompt]', 'the fox looks up as the snow begins to fall');
    if (await page.$('input[name=seed]')) await page.type('input[name=seed]', '12345');
    await dropFile(page, 'start_frame_file_id', 'fox.png', still);
    await until(
      'the start frame uploaded',
      async () => /^upl_/.test(await page.$eval('input[type=hidden][name=start_frame_file_id]', (e) => (e as unknown as { value: string }).value)),
      60,
    );
    await until(
      'the dry run priced the request',
      async () => /Price: \d+ credits · available/.test(await page.evaluate<[], () => string>('document.body.innerText' as never)),
      60,
    );
    await page.click('form.playground button[type=submit]');
    // A frame on screen: the video seeked into its first second and painted.
    await page.waitForSelector('video.output', { timeout: 300_000 });
    await page.evaluate(`new Promise((resolve, reject) => {
      const v = document.querySelector('video.output');
      v.preload = 'auto';
      v.addEventListener('seeked', () => requestAnimationFrame(() => requestAnimationFrame(resolve)), { once: true });
      v.addEventListener('error', () => reject(new Error('the video did not load: ' + (v.error && v.error.message))), { once: true });
      const seek = () => { v.currentTime = 1; };
      if (v.readyState >= 1) seek(); else v.addEventListener('loadedmetadata', seek, { once: true });
    })`);
    await page.screenshot({ path: out as `${string}.png`, fullPage: true });
    console.log(`saved ${out}`);
  } finally {
    await browser.close();
  }
}

main().catch((err: unknown) => {
  console.error((err as Error).message);
  process.exit(1);
});
