// `npm run dev` end to end against the test stack's services (reused through the variables, so it
// starts no servers of its own): it migrates and seeds a fresh database, starts the gateway and a
// worker, prints the base URL, demo key and project id, serves the catalog, and Ctrl-C stops it all.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { startDevSh, type DevSh } from '../support/dev-sh.js';

describe('npm run dev (scripts/dev.sh)', () => {
  let dev: DevSh;

  before(async () => {
    // No trace viewer: it would be a server of its own (test/e2e/trace-viewer.test.ts runs it).
    dev = await startDevSh({ DEV_TRACING: '0', OTEL_EXPORTER_OTLP_ENDPOINT: '' });
  });

  after(() => dev?.close());

  test('starts, prints the base URL, demo key, project id and Temporal UI, serves the API; Ctrl-C stops it', async () => {
    const { base, key, project } = await dev.summary(240_000);
    const { t, child, exit, home } = dev;
    assert.match(dev.stdout(), /Temporal Web UI\s+\S+/);
    assert.match(dev.stdout(), /Trace viewer\s+\(off: DEV_TRACING=0\)/);
    assert.match(dev.stderr(), /postgres: reusing DATABASE_URL/);

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
    child.kill('SIGINT');
    const code = await exit;
    assert.equal(code, 130);
    await assert.rejects(fetch(`${base}/healthz`), 'the gateway is gone');
    assert.match(dev.stderr(), /stopping gateway/);
    // It started no servers: the profile's state holds no pid files.
    const state = await readdir(join(home, 'dev')).catch(() => [] as string[]);
    assert.ok(!state.some((f) => f.endsWith('.pid')), state.join(', '));
  });
});
