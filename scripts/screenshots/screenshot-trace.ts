// Follows one job end to end in the dev profile's trace viewer: creates an image job through the
// gateway, takes the trace id from the answer's X-Trace-Id header, checks the workflow's memo names
// the same trace, opens TRACE_VIEWER_URL/redirects/traces/<id> in headless Chromium, waits until the
// page shows the request, the workflow and the provider's activity, and saves a PNG.
//
//   eval "$(scripts/stack.sh env dev)"   # with `npm run dev` running: TRACE_VIEWER_URL, TEMPORAL_ADDRESS
//   node dist/scripts/screenshots/screenshot-trace.js --base-url http://127.0.0.1:8080 --key mg_live_… --project prj_… [--out docs/trace.png]
//
// Chromium is Debian's (CHROMIUM_PATH overrides the path) and may reach loopback addresses only.
import { Client } from '@temporalio/client';
import { connectClient } from '../../shared/temporal-connection.js';
import { temporalSettingsFromEnv } from '../../shared/config/temporal.js';
import puppeteer from 'puppeteer-core';
import { codecDataConverter } from '../../codec/payload-codec.js';
import { chromiumPath, headlessChromiumArgs } from './headless-chromium.js';

function arg(name: string): string | undefined {
  const argv = process.argv.slice(2);
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
}

function required(value: string | undefined, what: string): string {
  if (!value) throw new Error(`${what} is missing`);
  return value;
}

async function main() {
  const viewer = new URL(required(process.env.TRACE_VIEWER_URL, 'TRACE_VIEWER_URL (eval "$(scripts/stack.sh env dev)")'));
  if (viewer.hostname !== '127.0.0.1') throw new Error('TRACE_VIEWER_URL must be a loopback address');
  const baseUrl = required(arg('base-url'), '--base-url');
  const key = required(arg('key') ?? process.env.MEDIAGEN_API_KEY, '--key');
  const project = required(arg('project'), '--project');
  const out = arg('out') ?? '/tmp/trace.png';

  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const created = await fetch(`${baseUrl}/v1/images/generate`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ project_id: project, prompt: 'a lighthouse at dusk', model: 'nano-banana-2', aspect_ratio: '16:9', count: 1 }),
  });
  if (created.status !== 200) throw new Error(`create answered ${created.status}: ${await created.text()}`);
  const traceId = required(created.headers.get('x-trace-id') ?? undefined, 'X-Trace-Id (is tracing on?)');
  const jobId = ((await created.json()) as { data: { id: string } }).data.id;
  // Once a second: well inside the polling rate limit however long a busy machine takes.
  for (let i = 0; ; i++) {
    const answer = await fetch(`${baseUrl}/v1/images/${jobId}`, { headers });
    const job = answer.ok ? ((await answer.json()) as { data: { status: string } }).data : undefined; // else (429, 5xx): ask again
    if (job?.status === 'completed') break;
    if (job?.status === 'failed' || i > 200) throw new Error(`job ${jobId} ended ${job?.status ?? `unread (the gateway answered ${answer.status})`}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
  const connection = await connectClient(temporalSettingsFromEnv());
  const memo = (await new Client({ connection, ...codecDataConverter(process.env) }).workflow.getHandle(jobId).describe()).memo;
  await connection.close();
  if (memo?.traceId !== traceId) throw new Error(`the workflow memo names trace ${String(memo?.traceId)}, the answer ${traceId}`);

  const browser = await puppeteer.launch({
    executablePath: chromiumPath(),
    headless: true,
    // puppeteer adds its own --headless.
    args: headlessChromiumArgs().filter((a) => a !== '--headless'),
  });
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1600, height: 1000 });
    const url = `${viewer.origin}/redirects/traces/${traceId}`;
    // The spans arrive batched a second or so after the job: reload until the trace is there.
    const wanted = ['POST /v1/images/generate', 'RunWorkflow:imageGeneration', 'RunActivity:submitAndCheck'];
    for (let attempt = 0; ; attempt++) {
      await page.goto(url, { waitUntil: 'networkidle2', timeout: 60_000 });
      const found = await page
        .waitForFunction(`${JSON.stringify(wanted)}.every((n) => document.body.innerText.includes(n))`, { timeout: 15_000 })
        .then(() => true)
        .catch(() => false);
      if (found) break;
      if (attempt >= 5) throw new Error(`the viewer did not show ${wanted.join(', ')} at ${url}`);
    }
    await page.screenshot({ path: out });
    console.log(`job ${jobId}, trace ${traceId}: ${url} → ${out}`);
  } finally {
    await browser.close();
  }
}

main().catch((err: unknown) => {
  console.error(`screenshot-trace: ${(err as Error).message}`);
  process.exit(1);
});
