// Running jobs survive a worker upgrade: jobs run on the OLD workflow build (the pipeline before the
// LOCAL_DB_STEPS patch, test/workflows/fixtures/workflows-v1.ts, bundled as production bundles are),
// each held at a different step by a real activity interceptor; the old workflow worker is shut
// down mid-job, a worker with the current build takes over, and every job finishes through the old
// build's steps (the patch keeps their histories deterministic), with exact credits. A job created
// after the upgrade runs the new shape. The activity fleet (io, fetch, provider:local) runs the
// current activity code throughout: it keeps every activity the old build schedules.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { createTenant, createTestDatabase, testConfig, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, creditsOf, startGateway, startWorkers, waitForJobStatus, type InProcessGateway as Gateway, type Workers } from '../support/services.js';
import { insertActor, insertVoice } from '../support/fixtures.js';
import { Holds, type HeldCall } from '../support/holds.js';
import { ledgerForJob } from '../../db/repos/jobs.js';
import type { Config } from '../../shared/config.js';

const v1WorkflowsPath = fileURLToPath(new URL('../workflows/fixtures/workflows-v1.js', import.meta.url));

let tdb: TestDatabase;
let config: Config;
let gw: Gateway;
let activityFleet: Workers;
let bundleDir: string;
let oldBundlePath: string;
const holds = new Holds();

before(async () => {
  tdb = await createTestDatabase();
  config = testConfig(tdb.url, {
    RECONCILE_INTERVAL_MS: '3600000',
    LOCAL_RENDER_FAULTS: 'true',
    // The renderer reports "running" for a while after submit, so jobs wait in the poll loop.
    LOCAL_RENDER_LATENCY_MS: '1500',
    // Held provider activities keep their slots: room for every job.
    PROVIDER_CONCURRENCY: 'local=8',
    RATE_LIMIT_GENERATE_PER_MIN: '1000',
    RATE_LIMIT_POLL_PER_MIN: '100000',
  });
  gw = await startGateway(config, tdb.db);
  activityFleet = await startWorkers(config, tdb.db, 'io,fetch,provider:local', { activityInterceptors: [holds.activityInterceptor] });
  bundleDir = await mkdtemp(join(tmpdir(), 'upgrade-test-'));
  oldBundlePath = join(bundleDir, 'workflow-bundle-v1.js');
  const { code } = await bundleWorkflowCode({ workflowsPath: v1WorkflowsPath, logger: new DefaultLogger('ERROR') });
  await writeFile(oldBundlePath, code);
});

after(async () => {
  await activityFleet?.stop();
  await gw?.close();
  await tdb?.drop();
  if (bundleDir) await rm(bundleDir, { recursive: true, force: true });
});

interface Planned {
  name: string;
  path: string;
  body(t: Tenant): Record<string, unknown>;
  /** The old build's activity the job is held at when its workflow worker goes away. */
  heldAt: string;
  expect: 'completed' | 'failed';
  cancelAfterUpgrade?: true;
}

const image = (t: Tenant, prompt: string) => ({ project_id: t.projectId, prompt, model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });

describe('a worker upgrade with jobs in flight', () => {
  test('jobs started on the old build finish on the new one with exact credits; new jobs run the new shape', async () => {
    const t = await createTenant(tdb.db, 10_000);
    const c = api(gw.baseUrl, t.apiKey);
    const voice = await insertVoice(tdb.db);
    const actor = await insertActor(tdb.db, gw.storage, { defaultVoiceId: voice });
    const planned: Planned[] = [
      { name: 'image before its inputs', path: '/v1/images', body: (t) => image(t, 'held before prepare'), heldAt: 'prepareProviderRequest', expect: 'completed' },
      { name: 'image polling', path: '/v1/images', body: (t) => image(t, 'held while polling'), heldAt: 'pollProvider', expect: 'completed' },
      {
        name: 'video storing',
        path: '/v1/videos',
        body: (t) => ({ project_id: t.projectId, prompt: 'held while storing', model: 'seedance-1.5', aspect_ratio: '9:16', duration: 4, resolution: '480p' }),
        heldAt: 'storeOutputs',
        expect: 'completed',
      },
      { name: 'talking actor completing', path: '/v1/talking-actors', body: (t) => ({ project_id: t.projectId, actor_id: actor, script: 'Upgraded mid-job.' }), heldAt: 'completeJob', expect: 'completed' },
      { name: 'image the provider fails', path: '/v1/images', body: (t) => image(t, 'fails after the upgrade [fail:poll]'), heldAt: 'pollProvider', expect: 'failed' },
      { name: 'image canceled after the upgrade', path: '/v1/images', body: (t) => image(t, 'canceled after the upgrade'), heldAt: 'pollProvider', expect: 'failed', cancelAfterUpgrade: true },
    ];

    // The old build runs every job up to its hold.
    const oldWorkflows = await startWorkers({ ...config, WORKFLOW_BUNDLE_PATH: oldBundlePath }, tdb.db, 'workflows');
    const jobs: (Planned & { id: string; hold: HeldCall })[] = [];
    for (const p of planned) {
      const hold = holds.activity(p.heldAt, 'before');
      const created = await c.post(`${p.path}/generate`, p.body(t));
      assert.equal(created.status, 200, `${p.name}: ${created.text}`);
      const id = created.body.data.id as string;
      assert.equal(await hold.reached, id, `${p.name} reached ${p.heldAt}`);
      jobs.push({ ...p, id, hold });
    }

    // The upgrade: the old workflow worker stops mid-job, the new build's worker starts.
    await oldWorkflows.stop();
    const upgradedAt = Date.now();
    const newWorkflows = await startWorkers(config, tdb.db, 'workflows');
    try {
      for (const j of jobs) {
        if (j.cancelAfterUpgrade) assert.equal((await c.post(`${j.path}/${j.id}/cancel`)).status, 200);
        j.hold.release();
      }
      const after = await c.post('/v1/images/generate', image(t, 'created after the upgrade'));
      assert.equal(after.status, 200, after.text);
      const afterId = after.body.data.id as string;

      for (const j of jobs) {
        const done = await waitForJobStatus(c, `${j.path}/${j.id}`, ['completed', 'failed']);
        assert.equal(done.status, j.expect, `${j.name}: ${JSON.stringify(done.error)}`);
        if (j.cancelAfterUpgrade) assert.equal(done.error.code, 'canceled');
        const net = (await ledgerForJob(tdb.db, j.id)).reduce((sum, l) => sum + Number(l.delta), 0);
        const row = await tdb.db.selectFrom('jobs').select('price').where('id', '=', j.id).executeTakeFirstOrThrow();
        assert.equal(net, j.expect === 'completed' ? -row.price : 0, `${j.name}: net ledger of the job`);

        // It finished through the old build's steps, on the new worker: no patch marker, and the
        // old remote Postgres step ended it.
        const history = await gw.client.workflow.getHandle(j.id).fetchHistory();
        const events = history.events ?? [];
        assert.ok(!events.some((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch'), `${j.name}: no patch marker`);
        const scheduled = events.map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name).filter((n) => !!n);
        assert.equal(scheduled.at(-1), j.expect === 'completed' ? 'completeJob' : 'failJob', `${j.name}: ${scheduled.join(', ')}`);
        const eventMs = (e: (typeof events)[number]) => Number(e.eventTime?.seconds ?? 0) * 1000 + Math.floor((e.eventTime?.nanos ?? 0) / 1e6);
        assert.ok(
          events.some((e) => e.workflowTaskCompletedEventAttributes && eventMs(e) >= upgradedAt),
          `${j.name}: the new build's worker ran workflow tasks of the job (the old one had stopped)`,
        );
      }

      const done = await waitForJobStatus(c, `/v1/images/${afterId}`, ['completed', 'failed']);
      assert.equal(done.status, 'completed', JSON.stringify(done.error));
      const events = (await gw.client.workflow.getHandle(afterId).fetchHistory()).events ?? [];
      assert.ok(events.some((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch'), 'a new job records the patch');
      assert.ok(!events.some((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'completeJob'), 'a new job completes in a local activity');

      // Exact credits: the workspace paid the prices of the completed jobs, nothing else.
      const prices = await tdb.db
        .selectFrom('jobs')
        .select(['id', 'price', 'status'])
        .where('workspace_id', '=', t.workspaceId)
        .execute();
      const owed = prices.filter((p) => p.status === 'completed').reduce((sum, p) => sum + p.price, 0);
      assert.equal(prices.length, jobs.length + 1);
      assert.equal(await creditsOf(tdb.db, t), 10_000 - owed);
    } finally {
      await newWorkflows.stop();
    }
  });
});
