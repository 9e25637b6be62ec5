// `npm run dev` with its trace viewer: the script starts the viewer (Arize Phoenix, installed into the
// cache on first use) beside the test stack's services, which it reuses through the variables,
// prints its URL next to the Temporal UI's, and traces the gateway and the worker to it; a job made
// through the gateway then opens in the viewer (scripts/screenshots/screenshot-trace.ts, headless Chromium: it
// checks the workflow memo names the trace of the answer's X-Trace-Id and waits until the viewer's
// page shows the request, the workflow and the provider activity). Ctrl-C stops the viewer too.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { waitFor } from '../support/stack.js';
import { startDevSh, type DevSh } from '../support/dev-sh.js';

const screenshotTrace = fileURLToPath(new URL('../../scripts/screenshots/screenshot-trace.js', import.meta.url));

describe('npm run dev with its trace viewer', () => {
  let dev: DevSh;

  before(async () => {
    // The viewer is the dev profile's own: a collector named by the caller would be used instead.
    dev = await startDevSh({ OTEL_EXPORTER_OTLP_ENDPOINT: undefined, DEV_TRACING: undefined });
  });

  after(() => dev?.close());

  // The first run on a machine installs the viewer from PyPI (about two minutes) before it starts.
  test("prints the viewer's URL, a job's trace opens there, and Ctrl-C stops the viewer", { timeout: 900_000 }, async () => {
    const { base, key, project } = await dev.summary(840_000);
    const { child, exit, home } = dev;
    const stdout = dev.stdout();
    const viewer = /Trace viewer\s+(http:\/\/127\.0\.0\.1:\d+)\s/.exec(stdout)?.[1];
    assert.ok(viewer, `dev.sh names a trace viewer on loopback:\n${stdout}`);
    assert.match(stdout, /Temporal Web UI\s+\S+/);
    const health = await fetch(`${viewer}/healthz`);
    assert.equal(health.status, 200, 'the viewer answers');

    const png = join(home, 'trace.png');
    const run = await promisify(execFile)(process.execPath, [screenshotTrace, '--base-url', base, '--key', key, '--project', project, '--out', png], {
      env: { ...process.env, TRACE_VIEWER_URL: viewer },
      timeout: 240_000,
    }).catch((err: Error & { stdout?: string; stderr?: string }) => {
      throw new Error(`screenshot-trace failed: ${err.message}\n${err.stderr ?? ''}`);
    });
    const shown = /job (img_\S+), trace ([0-9a-f]{32}): (\S+)/.exec(run.stdout);
    assert.ok(shown, run.stdout);
    assert.equal(shown[3], `${viewer}/redirects/traces/${shown[2]}`);
    const picture = await readFile(png);
    assert.deepEqual([...picture.subarray(1, 4)], [...Buffer.from('PNG')], 'a PNG of the trace page');
    assert.ok((await stat(png)).size > 10_000, 'the picture is a rendered page, not an empty one');

    // Ctrl-C: the gateway, the worker and the viewer stop with the script.
    const viewerPid = Number(await readFile(join(home, 'dev', 'phoenix.pid'), 'utf8'));
    assert.ok(Number.isInteger(viewerPid), 'the profile started the viewer and keeps its pid');
    child.kill('SIGINT');
    assert.equal(await exit, 130);
    await assert.rejects(fetch(`${base}/healthz`), 'the gateway is gone');
    await waitFor(
      'the viewer to stop',
      async () => {
        try {
          await fetch(`${viewer}/healthz`);
          return false;
        } catch {
          return true;
        }
      },
      60_000,
      200,
    );
    assert.throws(() => process.kill(viewerPid, 0), 'the viewer process is gone');
    const state = await readdir(join(home, 'dev')).catch(() => [] as string[]);
    assert.ok(!state.some((f) => f.endsWith('.pid')), state.join(', '));
  });
});
