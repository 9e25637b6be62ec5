// A worker's /healthz and /readyz (worker/health.ts) over HTTP on the metrics server, from the SDK
// states of its Temporal workers: liveness fails only on a failed worker, readiness needs every
// worker polling and no shutdown under way. The running process is test/integration/worker-health.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import type { State } from '@temporalio/worker';
import { workerHealth, type HealthSource } from '../../worker/health.js';
import { createWorkerMetrics, serveWorkerMetrics } from '../../worker/metrics.js';

const source = (states: State[] | null, stopping = false): HealthSource => ({
  workers: () => states?.map((s, i) => ({ options: { taskQueue: `q${i}` }, getState: () => s })) ?? null,
  stopping: () => stopping,
});

test('liveness fails only when a worker has failed; readiness needs every worker running and no shutdown', () => {
  const cases: [State[] | null, boolean, { live: boolean; ready: boolean }][] = [
    [null, false, { live: true, ready: false }], // the fleet is not built yet
    [['INITIALIZED', 'RUNNING'], false, { live: true, ready: false }],
    [['RUNNING', 'RUNNING'], false, { live: true, ready: true }],
    [[], false, { live: true, ready: true }], // control loops only (--roles reconciler)
    [['RUNNING', 'RUNNING'], true, { live: true, ready: false }], // SIGTERM received
    [['DRAINING', 'STOPPING'], false, { live: true, ready: false }], // letting in-flight calls finish: alive
    [['RUNNING', 'FAILED'], false, { live: false, ready: false }],
  ];
  for (const [states, stopping, want] of cases) {
    const h = workerHealth(source(states, stopping));
    assert.deepEqual({ live: h.live, ready: h.ready }, want, `${JSON.stringify(states)} stopping=${stopping}`);
  }
});

test('the metrics server answers /healthz and /readyz with 200 or 503 and the workers’ states', async () => {
  let states: State[] = ['INITIALIZED'];
  const server = await serveWorkerMetrics(createWorkerMetrics(), '127.0.0.1', 0, undefined, () => workerHealth(source(states)));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const get = async (path: string) => {
    const res = await fetch(`${base}${path}`);
    return { status: res.status, body: (await res.json()) as { status: string; workers: { taskQueue: string; state: string }[] } };
  };
  try {
    assert.deepEqual(await get('/readyz'), { status: 503, body: { status: 'not_ready', workers: [{ taskQueue: 'q0', state: 'INITIALIZED' }] } });
    assert.equal((await get('/healthz')).status, 200);
    states = ['RUNNING'];
    assert.deepEqual(await get('/readyz'), { status: 200, body: { status: 'ready', workers: [{ taskQueue: 'q0', state: 'RUNNING' }] } });
    states = ['FAILED'];
    assert.deepEqual(await get('/healthz'), { status: 503, body: { status: 'failed', workers: [{ taskQueue: 'q0', state: 'FAILED' }] } });
    assert.equal((await fetch(`${base}/metrics`)).status, 200, '/metrics is still served');
    assert.equal((await fetch(`${base}/other`)).status, 404);
  } finally {
    await new Promise((r) => server.close(r));
  }
});
