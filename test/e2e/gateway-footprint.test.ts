// The gateway process loads only what serving needs: started as `node dist/api/server.js` with a
// module log, it serves a few requests, stops, and the log must hold no worker, workflow, renderer
// or bundler code (those belong to worker processes and cost the gateway memory for nothing).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTenant, createTestDatabase, type TestDatabase } from '../support/stack.js';
import { spawnGateway } from '../integration/gateway-harness.js';

let tdb: TestDatabase;
let dir: string;

before(async () => {
  tdb = await createTestDatabase();
  dir = await mkdtemp(join(tmpdir(), 'gateway-modules-'));
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
  await tdb?.drop();
});

/** Loaded module URLs that must never appear in the gateway, and why. */
const forbidden: Array<[RegExp, string]> = [
  [/node_modules\/@temporalio\/(worker|workflow|activity|testing|core-bridge)\//, 'Temporal worker/workflow/activity SDK'],
  [/node_modules\/(@swc|webpack|swc-loader|memfs|unionfs)\//, 'the workflow bundler'],
  // The Temporal client side (starting and asking workflows: jobs, pipelines, batches, bulk actions, webhook redeliveries) is the gateway's.
  [
    /\/dist\/workflows\/(?!client\.js|webhook-client\.js|pipeline-client\.js|pipeline-types\.js|batch-client\.js|batch-types\.js|bulk-action-client\.js|bulk-action-types\.js|definitions\.js)[^/]+$/,
    'workflow code',
  ],
  [/\/dist\/worker\/(?!config\.js)[^/]+$/, 'worker process code'],
  [/\/dist\/activities\/(jobs|index)\.js$/, 'job activities'],
  [/\/dist\/activities\/providers\/(?!catalog\.js|routing\.js)/, 'provider adapters and the local renderer'],
];

describe('gateway import footprint', () => {
  test('serving requests loads no worker, workflow, activity, renderer or bundler module', async () => {
    const log = join(dir, 'modules.txt');
    const preload = fileURLToPath(new URL('../support/module-log.js', import.meta.url));
    const gw = await spawnGateway(tdb.url, { MODULE_LOG: log, NODE_OPTIONS: `--import=${preload}` });
    try {
      const t = await createTenant(tdb.db);
      const auth = { authorization: `Bearer ${t.apiKey}` };
      for (const path of ['/healthz', '/v1/openapi.json', '/v1/projects', '/v1/voices', '/v1/images/img_missing']) {
        const res = await fetch(`${gw.baseUrl}${path}`, { headers: auth });
        assert.ok(res.status < 500, `${path}: ${res.status}`);
      }
      const created = await fetch(`${gw.baseUrl}/v1/uploads`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ project_id: t.projectId, name: 'a.png', mime_type: 'image/png', size: 100 }),
      });
      assert.equal(created.status, 200);
    } finally {
      await gw.close();
    }
    const loaded = [...new Set((await readFile(log, 'utf8')).split('\n').filter(Boolean))];
    assert.ok(
      loaded.some((u) => u.endsWith('/dist/api/server.js')),
      'the log recorded the gateway itself',
    );
    assert.ok(
      loaded.some((u) => u.includes('node_modules/express/')),
      'the log recorded CommonJS modules',
    );
    const offenders = loaded.flatMap((url) => forbidden.filter(([re]) => re.test(url)).map(([, why]) => `${why}: ${url}`));
    assert.deepEqual(offenders, []);
  });
});
