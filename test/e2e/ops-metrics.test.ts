// Every metric the alerting rules and the dashboard (ops/) read exists: a gateway and a worker run
// as the processes they are in production (their own metrics ports, the worker relaying the
// Temporal SDK's series), a job goes through them, and both /metrics answers are scraped.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createTenant, createTestDatabase, waitFor, type TestDatabase } from '../support/stack.js';
import { randomToken } from '../../shared/ids.js';
import { api, waitForJobStatus } from '../support/services.js';
import { allExpressions, exposedNames, metricNames } from '../support/ops.js';

const gatewayMain = fileURLToPath(new URL('../../api/server.js', import.meta.url));
const workerMain = fileURLToPath(new URL('../../worker/main.js', import.meta.url));

let tdb: TestDatabase;
const children: { child: ChildProcess; out: () => string }[] = [];

/** Starts a process and waits for the log line `pattern` captures a URL from. */
async function startProcess(main: string, env: Record<string, string>, pattern: RegExp): Promise<{ urls: string[] }> {
  const child = spawn(process.execPath, [main], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  children.push({ child, out: () => out });
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`${main} exited (${code}) before starting:\n${out}`))));
  exited.catch(() => undefined);
  await Promise.race([waitFor(`${main} to log its addresses`, () => (pattern.test(out) ? true : undefined), 60_000, 50), exited]);
  return { urls: pattern.exec(out)!.slice(1) };
}

before(async () => {
  tdb = await createTestDatabase();
});

after(async () => {
  for (const { child } of children) child.kill('SIGTERM');
  await Promise.all(children.map(({ child }) => (child.exitCode === null ? new Promise((r) => child.once('exit', r)) : null)));
  await tdb?.drop();
});

test('every metric the alerting rules and the dashboard read is served by a gateway or a worker', async () => {
  const common = { NODE_ENV: 'test', LOG_LEVEL: 'info', DATABASE_URL: tdb.url, TASK_QUEUE_PREFIX: `t-${randomToken(10)}`, OTEL_EXPORTER_OTLP_ENDPOINT: '' };
  // The gateway logs its API address, then its metrics address.
  const gateway = await startProcess(
    gatewayMain,
    { ...common, HOST: '127.0.0.1', PORT: '0', API_METRICS_PORT: '0', METRICS_ENABLED: 'true' },
    /listening on (http:\/\/[^"]+)"[^]*metrics on (http:\/\/[^"]+)"/,
  );
  const [baseUrl, gatewayMetrics] = gateway.urls as [string, string];
  const worker = await startProcess(
    workerMain,
    { ...common, WORKER_ROLES: 'all', WORKER_METRICS_PORT: '0', RECONCILE_INTERVAL_MS: '500' },
    /metrics on (http:\/\/[^"]+)"/,
  );
  const workerMetrics = worker.urls[0]!;

  // One job through both, so the SDK's task latencies and the job series have samples.
  const t = await createTenant(tdb.db);
  const client = api(baseUrl, t.apiKey);
  const r = await client.post('/v1/images/generate', {
    project_id: t.projectId,
    prompt: 'a lighthouse',
    model: 'nano-banana-2',
    aspect_ratio: '1:1',
    count: 1,
  });
  assert.equal(r.status, 200, r.text);
  await waitForJobStatus(client, `/v1/images/${r.body.data.id}`, ['completed']);

  const scrape = async (url: string) => {
    const res = await fetch(url);
    assert.equal(res.status, 200);
    return res.text();
  };
  // The reconciler's first pass and the SDK's histograms come a moment after the job.
  const missing = await waitFor(
    'every metric name of the rules and the dashboard',
    async () => {
      const names = new Set([...exposedNames(await scrape(gatewayMetrics)), ...exposedNames(await scrape(workerMetrics))]);
      const wanted = new Set(allExpressions().flatMap(({ expr }) => metricNames(expr)));
      const absent = [...wanted].filter((n) => !names.has(n));
      return absent.length === 0 ? absent : undefined;
    },
    30_000,
    250,
  ).catch(async () => {
    const names = new Set([...exposedNames(await scrape(gatewayMetrics)), ...exposedNames(await scrape(workerMetrics))]);
    return [...new Set(allExpressions().flatMap(({ expr }) => metricNames(expr)))].filter((n) => !names.has(n));
  });
  assert.deepEqual(missing, []);
});
