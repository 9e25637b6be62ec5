// Opens the Temporal Web UI in headless Chromium, searches one workspace's jobs by the `WorkspaceId`
// search attribute (the same query an operator types into the UI's search box) and saves a PNG.
//
//   eval "$(scripts/stack.sh env dev)"            # TEMPORAL_ADDRESS and TEMPORAL_UI_URL of `npm run dev`
//   node dist/scripts/screenshots/screenshot-temporal-ui.js [--workspace ws_…] [--out /tmp/temporal-ui.png]
//
// Without --workspace it takes the workspace of a job the visibility store lists first (a recent
// one). It checks that the rendered page lists a job of that workspace, then takes the screenshot. Chromium is
// Debian's (`apt-get install chromium`; CHROMIUM_PATH overrides the path) and may reach loopback
// addresses only: every host name is mapped to nowhere.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@temporalio/client';
import { connectClient } from '../../shared/temporal-connection.js';
import { temporalSettingsFromEnv } from '../../shared/config/temporal.js';
import { searchAttributes } from '../../workflows/definitions.js';
import { codecDataConverter } from '../../codec/payload-codec.js';
import { chromiumPath, headlessChromiumArgs } from './headless-chromium.js';

const run = promisify(execFile);

function arg(name: string): string | undefined {
  const argv = process.argv.slice(2);
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}

function requireEnv(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run eval "$(scripts/stack.sh env dev)" first`);
  return v;
}

/** Only the local stack's UI: the screenshot must never send the browser anywhere else. */
function loopbackUrl(raw: string): URL {
  const url = new URL(raw);
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname)) throw new Error('TEMPORAL_UI_URL must be a loopback address');
  if (url.hostname === 'localhost') url.hostname = '127.0.0.1';
  return url;
}

/** The workspace to search for, and the id of one of its jobs (to check the page lists it). */
async function pickJob(client: Client, workspaceId: string | undefined): Promise<{ workspaceId: string; jobId: string }> {
  const query = workspaceId ? `WorkspaceId='${workspaceId.replace(/'/g, '')}'` : 'WorkspaceId IS NOT NULL';
  for await (const wf of client.workflow.list({ query, pageSize: 1 })) {
    const ws = wf.typedSearchAttributes.get(searchAttributes.workspaceId);
    if (ws) return { workspaceId: ws, jobId: wf.workflowId };
  }
  throw new Error(workspaceId ? `no job workflow of workspace ${workspaceId} found` : 'no job workflow found: create a job first');
}

async function chromium(url: string, extra: string[]): Promise<string> {
  const profile = await mkdtemp(join(tmpdir(), 'temporal-ui-chromium-'));
  try {
    const { stdout } = await run(
      chromiumPath(),
      headlessChromiumArgs([
        '--hide-scrollbars',
        `--user-data-dir=${profile}`,
        '--window-size=1600,1000',
        // Let the single-page app load and run its visibility query before the capture.
        '--virtual-time-budget=20000',
        ...extra,
        url,
      ]),
      { timeout: 120_000, maxBuffer: 64 * 1024 * 1024 },
    );
    return stdout;
  } finally {
    await rm(profile, { recursive: true, force: true });
  }
}

async function main() {
  const ui = loopbackUrl(requireEnv('TEMPORAL_UI_URL'));
  const namespace = process.env.TEMPORAL_NAMESPACE || 'default';
  const connection = await connectClient(temporalSettingsFromEnv());
  let job: { workspaceId: string; jobId: string };
  try {
    job = await pickJob(new Client({ connection, namespace, ...codecDataConverter(process.env) }), arg('workspace'));
  } finally {
    await connection.close();
  }
  const out = arg('out') ?? join(tmpdir(), `temporal-ui-${job.workspaceId}.png`);
  const page = new URL(`namespaces/${encodeURIComponent(namespace)}/workflows`, ui.toString().replace(/\/?$/, '/'));
  page.searchParams.set('query', `WorkspaceId='${job.workspaceId}'`);

  const dom = await chromium(page.toString(), ['--dump-dom']);
  if (!dom.includes(job.jobId)) throw new Error(`the UI page did not list job ${job.jobId} of workspace ${job.workspaceId} (${page})`);
  await chromium(page.toString(), [`--screenshot=${out}`]);
  const { size } = await stat(out);
  console.log(`searched ${page.searchParams.get('query')} in ${page.origin}: job ${job.jobId} listed; screenshot ${out} (${size} bytes)`);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(`screenshot-temporal-ui failed: ${(err as Error).message}`);
    process.exit(1);
  },
);
