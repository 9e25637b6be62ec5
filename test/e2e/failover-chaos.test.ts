// Chaos during a failover, on the real stack: grok-video's first route (the fake fal queue) refuses
// every call, so the job moves to xAI; the xAI provider worker — the built worker as its own process —
// is killed with SIGKILL right after it submitted there. Another xAI worker takes the step over, finds
// the request the first one recorded and polls it: one submit at xAI, the job completed and charged
// its price once, fal's refusals counted against its breaker.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createTenant, createTestDatabase, testConfig, waitFor, type TestDatabase } from '../support/stack.js';
import { api, creditsOf, startGateway, startWorkers, type InProcessGateway as Gateway, type Workers } from '../support/services.js';
import { startLiveFal, type LiveFal } from '../support/fake-providers/live-fal.js';
import { startFakeXai, type FakeXai } from '../support/fake-providers/xai.js';
import { json } from '../support/fake-providers/server.js';
import { ledgerForJob } from '../../db/repos/jobs.js';
import type { Config } from '../../shared/config.js';

const workerMain = fileURLToPath(new URL('../../worker/main.js', import.meta.url));

let tdb: TestDatabase;
let live: LiveFal;
let xai: FakeXai;
let env: Record<string, string>;
let config: Config;
let gw: Gateway;
let core: Workers;

before(async () => {
  tdb = await createTestDatabase();
  live = await startLiveFal();
  xai = await startFakeXai();
  xai.filesBaseUrl = live.cdn.origin;
  env = { ...live.env, XAI_API_KEY: xai.key, XAI_BASE_URL: xai.url, PROVIDER_FAILOVER_ATTEMPTS: '2' };
  config = testConfig(tdb.url, { ...env, RATE_LIMIT_GENERATE_PER_MIN: '1000', RATE_LIMIT_POLL_PER_MIN: '100000', RECONCILE_INTERVAL_MS: '3600000' });
  gw = await startGateway(config, tdb.db);
  // Every role but xAI's: the test brings that fleet.
  core = await startWorkers(config, tdb.db, 'workflows,io,fetch,provider:fal');
});

after(async () => {
  await core?.stop();
  await gw?.close();
  await Promise.all([live?.close(), xai?.close()]);
  await tdb?.drop();
});

/** The built worker as its own process, serving the xAI provider queue of this suite. */
async function spawnXaiWorker(): Promise<{ child: ChildProcess; exited: Promise<unknown> }> {
  const child = spawn(process.execPath, [workerMain, '--roles', 'provider:xai'], {
    env: { ...process.env, ...env, NODE_ENV: 'test', LOG_LEVEL: 'info', DATABASE_URL: config.DATABASE_URL, TASK_QUEUE_PREFIX: config.TASK_QUEUE_PREFIX, WORKER_METRICS_PORT: '', RECONCILE_INTERVAL_MS: '3600000' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  await Promise.race([
    waitFor(`worker process ${child.pid} to start`, () => out.includes('"msg":"worker started"'), 60_000, 50),
    exited.then(() => {
      throw new Error(`worker process exited before starting:\n${out}`);
    }),
  ]);
  return { child, exited };
}

test('the xAI worker is killed (SIGKILL) right after the failover submit: another one polls the recorded request, one submit, charged once', async () => {
  live.fal.down(['submit', 'status', 'result', 'cancel'], json(503, { detail: 'Service Unavailable' }));
  // The first status check at xAI hangs, so the step is in flight after the submit when the worker goes.
  xai.script('status', { status: 202, delayMs: 45_000 });
  const t = await createTenant(tdb.db, 100);
  const marker = '[killed-during-failover]';
  const first = await spawnXaiWorker();
  try {
    const r = await api(gw.baseUrl, t.apiKey).post('/v1/videos/generate', { project_id: t.projectId, prompt: `a lighthouse ${marker}`, model: 'grok-video', aspect_ratio: '16:9', duration: 1, resolution: '480p' });
    assert.equal(r.status, 200, r.text);
    const id = r.body.data.id as string;
    const rowOf = () => tdb.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    await waitFor('the failover submit at xAI and its first status check', async () => {
      const row = await rowOf();
      return (row.provider_ref as { provider?: string } | null)?.provider === 'xai' && xai.requestsOf('status').length >= 1 ? true : undefined;
    }, 120_000, 100);
    first.child.kill('SIGKILL');
    await first.exited;
    const fleet = await startWorkers(config, tdb.db, 'provider:xai');
    try {
      const row = await waitFor('the job to finish', async () => {
        const j = await rowOf();
        return j.status === 'completed' || j.status === 'failed' ? j : undefined;
      }, 180_000, 200);
      assert.equal(row.status, 'completed', JSON.stringify(row.error));
      assert.equal(xai.requestsOf('submit').filter((q) => JSON.stringify(q.json).includes(marker)).length, 1, 'one submit at xAI');
      assert.deepEqual(row.provider_attempts.map((a) => a.provider), ['fal']);
      assert.deepEqual((await ledgerForJob(tdb.db, id)).map((l) => [l.reason, Number(l.delta)]), [['charge', -6]]);
      assert.equal(await creditsOf(tdb.db, t), 100 - 6);
    } finally {
      await fleet.stop();
    }
  } finally {
    first.child.kill('SIGKILL');
    await first.exited;
    live.fal.up();
  }
});
