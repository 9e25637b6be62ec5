// A worker service as its process runs it (metrics port on): /readyz answers ready once its Temporal
// workers poll, turns not ready as soon as a shutdown starts, while /healthz stays 200 for as long
// as the worker lets a held paid call finish (Kubernetes must not kill a pod that is draining).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { createTenant, createTestDatabase, testConfig, waitFor, type TestDatabase } from '../support/stack.js';
import { api, startGateway } from '../support/services.js';
import { imageBody } from '../support/job-helpers.js';
import { Holds } from '../support/holds.js';
import { createWorkerService } from '../../worker/service.js';
import { parseRoles } from '../../worker/roles.js';

let tdb: TestDatabase;
before(async () => {
  tdb = await createTestDatabase();
});
after(async () => {
  await tdb?.drop();
});

test('/readyz follows the workers (ready while polling, not ready once stopping); /healthz stays up while a call drains', async () => {
  const config = testConfig(tdb.url, { WORKER_METRICS_PORT: '0', LOG_LEVEL: 'info', WORKER_SHUTDOWN_GRACE_MS: '60000' });
  let log = '';
  const logDestination = new Writable({
    write(chunk: Buffer, _enc, done) {
      log += chunk.toString();
      done();
    },
  });
  const holds = new Holds();
  // No reconciler role: it would apply lifecycle rules to the shared bucket.
  const service = createWorkerService(config, parseRoles('workflows,io,provider:local'), {
    db: tdb.db,
    processExtras: true,
    activityInterceptors: [holds.activityInterceptor],
    logDestination,
  });
  const gw = await startGateway(config, tdb.db);
  let stopped: Promise<void> | undefined;
  const held = holds.activity('submitAndCheck', 'before');
  try {
    await service.start();
    const port = await waitFor('the metrics port in the log', () => /"msg":"metrics on http:\/\/127\.0\.0\.1:(\d+)\/metrics"/.exec(log)?.[1]);
    const get = async (path: string) => {
      const res = await fetch(`http://127.0.0.1:${port}${path}`);
      return { status: res.status, body: (await res.json()) as { status: string; workers: { taskQueue: string; state: string }[] } };
    };
    const ready = await waitFor('the workers to poll', async () => ((await get('/readyz')).status === 200 ? get('/readyz') : undefined));
    assert.equal(ready.body.status, 'ready');
    assert.deepEqual(
      ready.body.workers.map((w) => w.state),
      service.fleet.workers.map(() => 'RUNNING'),
    );
    assert.equal(ready.body.workers.length, 4, 'one worker per queue: workflows, io, provider-local and its waits');
    assert.deepEqual((await get('/healthz')).body.status, 'ok');

    const t = await createTenant(tdb.db, 100);
    const created = await api(gw.baseUrl, t.apiKey).post('/v1/images/generate', imageBody(t, 'a held call'));
    assert.equal(created.status, 200, created.text);
    await held.reached;

    // SIGTERM's path: stop polling, let the call in flight finish.
    stopped = service.stop();
    const draining = await get('/readyz');
    assert.equal(draining.status, 503);
    assert.equal(draining.body.status, 'not_ready');
    const live = await get('/healthz');
    assert.equal(live.status, 200, 'a worker letting a call finish is alive');
    assert.ok(
      live.body.workers.some((w) => w.state !== 'RUNNING'),
      `the workers are shutting down: ${JSON.stringify(live.body.workers)}`,
    );
  } finally {
    held.release();
    await (stopped ?? service.stop());
    await gw.close();
  }
});
