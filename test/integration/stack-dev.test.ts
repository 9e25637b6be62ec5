// `npm run dev` end to end against the test stack's services (reused through the variables, so it
// starts no servers of its own): it migrates and seeds a fresh database, starts the gateway and a
// worker, prints the base URL, demo key and project id, serves the catalog, and Ctrl-C stops it all.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTestDatabase, waitFor, type TestDatabase } from '../support/stack.js';
import { randomToken } from '../../shared/ids.js';

const devSh = fileURLToPath(new URL('../../../scripts/dev.sh', import.meta.url));

describe('npm run dev (scripts/dev.sh)', () => {
  let t: TestDatabase;
  let home: string;
  let child: ChildProcess | undefined;
  let stdout = '';
  let stderr = '';
  let exit: Promise<number | null>;

  before(async () => {
    t = await createTestDatabase();
    home = await mkdtemp(join(tmpdir(), 'dev-sh-'));
    child = spawn('bash', [devSh], {
      env: {
        ...process.env,
        DATABASE_URL: t.url,
        MEDIA_GEN_HOME: home,
        DEV_SKIP_BUILD: '1', // npm test has just built dist/
        PORT: '0',
        // Its own task queues, so its worker never picks up another suite's tasks.
        TASK_QUEUE_PREFIX: `t-dev-${randomToken(8)}`,
        LOG_LEVEL: 'warn',
        // No trace viewer: it would be a server of its own (docs/trace.png shows the traced dev profile).
        DEV_TRACING: '0',
        OTEL_EXPORTER_OTLP_ENDPOINT: '',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    exit = new Promise((resolve) => child!.once('exit', (code) => resolve(code)));
  });

  after(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exit;
    }
    await rm(home, { recursive: true, force: true });
    await t?.drop();
  });

  test('starts, prints the base URL, demo key, project id and Temporal UI, serves the API; Ctrl-C stops it', async () => {
    // An exit ends the wait at once (waitFor retries a check that throws), with dev.sh's own words.
    const outcome = await waitFor(
      'dev.sh to print its summary',
      () => (child!.exitCode !== null ? 'exited' : stdout.includes('Ctrl-C stops') && 'ready'),
      240_000,
      200,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\nstderr: ${stderr.slice(-2000)}`);
    });
    if (outcome === 'exited') assert.fail(`dev.sh exited with ${child!.exitCode}: ${stderr.slice(-2000)}`);

    const base = /Base URL\s+(http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(stdout)?.[1];
    const key = /Demo API key\s+(mg_live_\S+)/.exec(stdout)?.[1];
    const project = /Demo project id\s+(prj_\S+)/.exec(stdout)?.[1];
    assert.ok(base && key && project, stdout);
    assert.match(stdout, /Temporal Web UI\s+\S+/);
    assert.match(stdout, /Trace viewer\s+\(off: DEV_TRACING=0\)/);
    assert.match(stderr, /postgres: reusing DATABASE_URL/);

    const ready = await fetch(`${base}/readyz`);
    assert.equal(ready.status, 200);
    const row = await t.db.selectFrom('projects').select(['id', 'workspace_id']).where('id', '=', project).executeTakeFirst();
    assert.ok(row, 'the demo project exists');
    const ws = await t.db.selectFrom('workspaces').select('credits').where('id', '=', row.workspace_id).executeTakeFirstOrThrow();
    assert.equal(ws.credits, 10_000);

    const actors = await fetch(`${base}/v1/actors`, { headers: { Authorization: `Bearer ${key}` } });
    assert.equal(actors.status, 200);
    const body = (await actors.json()) as { data: Array<{ reference_image_url: string }> };
    assert.ok(body.data.length >= 12);
    const image = await fetch(body.data[0]!.reference_image_url);
    assert.equal(image.status, 200);
    assert.equal(image.headers.get('content-type'), 'image/png');

    // Ctrl-C: the gateway and the worker stop, and so does the script.
    child!.kill('SIGINT');
    const code = await exit;
    assert.equal(code, 130);
    await assert.rejects(fetch(`${base}/healthz`), 'the gateway is gone');
    assert.match(stderr, /stopping gateway/);
    // It started no servers: the profile's state holds no pid files.
    const state = await readdir(join(home, 'dev')).catch(() => [] as string[]);
    assert.ok(!state.some((f) => f.endsWith('.pid')), state.join(', '));
  });
});
