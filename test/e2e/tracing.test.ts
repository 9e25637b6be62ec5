// Operators follow one job end to end: with OTEL_EXPORTER_OTLP_ENDPOINT set, a job created through
// the gateway is one trace, received here by a loopback OTLP/HTTP receiver: the request span, the
// workflow start and run, every activity and local activity of its history, the provider call (the
// local fal queue over HTTP) and the storage write of its output, with Postgres statements as
// children. The same trace id is in the create's response headers, every log line of the request
// and of the job's activities, and the workflow's memo.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';
import { createTenant, createTestDatabase, testConfig, waitFor, type TestDatabase } from '../support/stack.js';
import { api, startWorkers, waitForJobStatus, type Workers } from '../support/services.js';
import { startLiveFal, type LiveFal } from '../support/fake-providers/live-fal.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';
import { localActivityOf } from '../support/history.js';
import { startTracing, tracing } from '../../shared/tracing.js';
import { createGateway, type Gateway } from '../../api/gateway.js';
import type { Config } from '../../shared/config.js';

let tdb: TestDatabase;
let live: LiveFal;
let receiver: OtlpReceiver;
let config: Config;
let gateway: Gateway;
let workers: Workers;
const gatewayLines: Record<string, unknown>[] = [];
const workerLines: Record<string, unknown>[] = [];
const sdkLines: LogEntry[] = [];

/** A pino destination keeping every JSON line. */
const collect = (into: Record<string, unknown>[]) =>
  new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) into.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });

before(async () => {
  // The SDK's log lines (activity and workflow logs among them) are read here, at debug.
  Runtime.install({ logger: new DefaultLogger('DEBUG', (entry) => void sdkLines.push(entry)) });
  [tdb, live, receiver] = await Promise.all([createTestDatabase(), startLiveFal(), startOtlpReceiver()]);
  config = testConfig(tdb.url, { ...live.env, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, LOG_LEVEL: 'debug', RECONCILE_INTERVAL_MS: '3600000' });
  // As the processes do: tracing first, then everything it traces.
  assert.ok(await startTracing(config, 'mediagen-test'));
  gateway = createGateway({ ...config, HOST: '127.0.0.1', PORT: 0 }, { processExtras: false, logDestination: collect(gatewayLines) });
  await gateway.start();
  workers = await startWorkers(config, gateway.db, 'workflows,io,fetch,provider:fal', { logDestination: collect(workerLines) });
});

after(async () => {
  await workers?.stop();
  await gateway?.stop({ graceMs: 0 });
  await tracing()?.shutdown();
  await receiver?.close();
  await live?.close();
  await tdb?.drop();
});

test('a job created through the gateway is one trace, named in its headers, logs and memo', async () => {
  const t = await createTenant(tdb.db);
  const client = api(gateway.baseUrl, t.apiKey);
  const r = await client.post('/v1/images/generate', {
    project_id: t.projectId,
    prompt: 'a lighthouse at dusk',
    model: 'nano-banana-2',
    aspect_ratio: '1:1',
    count: 1,
  });
  assert.equal(r.status, 200, r.text);
  const jobId = r.body.data.id as string;
  const traceId = r.headers.get('x-trace-id') ?? '';
  assert.match(traceId, /^[0-9a-f]{32}$/);
  assert.match(r.headers.get('traceparent') ?? '', new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
  await waitForJobStatus(client, `/v1/images/${jobId}`, ['completed']);

  // The memo: what an operator reads in the Web UI to open the trace.
  const handle = gateway.temporal.workflow.getHandle(jobId);
  const desc = await handle.describe();
  assert.equal(desc.memo?.traceId, traceId, 'the workflow memo names the trace');

  // Every activity the history shows, scheduled on a queue or run locally.
  const events = (await handle.fetchHistory()).events ?? [];
  const activities = new Set<string>();
  for (const e of events) {
    const scheduled = e.activityTaskScheduledEventAttributes?.activityType?.name;
    if (scheduled) activities.add(scheduled);
    const local = localActivityOf(e);
    if (local) activities.add(local);
  }
  assert.ok(activities.size >= 3, `activities in the history: ${[...activities].join(', ')}`);

  const expected = [
    'POST /v1/images/generate',
    'start job workflow',
    'StartWorkflow:imageGeneration',
    'RunWorkflow:imageGeneration',
    ...[...activities].flatMap((a) => [`StartActivity:${a}`, `RunActivity:${a}`]),
    'fal submit', // the provider call (named `fal submit to <model>`)
    'storage put',
  ];
  // Workflow spans leave the sandbox when their task completes; flush until every one arrived (or
  // the wait ends, and the assertion names what is missing).
  const missing = () => {
    const names = receiver.spans.filter((s) => s.traceId === traceId).map((s) => s.name);
    return expected.filter((n) => !names.some((name) => name === n || name.startsWith(`${n} `)));
  };
  await waitFor(
    'every span of the job in the trace',
    async () => {
      await tracing()!.flush();
      return missing().length === 0 ? true : undefined;
    },
    30_000,
    200,
  ).catch(() => undefined);
  const ofTrace = receiver.spans.filter((s) => s.traceId === traceId);
  assert.deepEqual(missing(), [], `spans of the trace: ${[...new Set(ofTrace.map((s) => s.name))].join(', ')}`);
  assert.ok(
    ofTrace.some((s) => s.name.startsWith('pg ') && String(s.attributes['db.statement']).length > 0),
    'Postgres statements are spans of the trace',
  );

  // One trace: no span about this job (by workflow id or job id) lives in another one.
  const aboutJob = (s: ReceivedSpan) => s.attributes.workflowId === jobId || s.attributes['mediagen.job_id'] === jobId;
  const elsewhere = receiver.spans.filter((s) => aboutJob(s) && s.traceId !== traceId);
  assert.deepEqual(
    elsewhere.map((s) => `${s.name} ${s.traceId}`),
    [],
  );

  // The request span is the trace's root (the client sent no traceparent) and names the job.
  const request = ofTrace.find((s) => s.name === 'POST /v1/images/generate')!;
  assert.equal(request.parentSpanId, '');
  assert.deepEqual(
    [
      request.attributes['mediagen.job_id'],
      request.attributes['mediagen.workspace_id'],
      request.attributes['mediagen.job_kind'],
      request.attributes['mediagen.model'],
    ],
    [jobId, t.workspaceId, 'image', 'nano-banana-2'],
  );
  // Parent links hold: every span but the root has its parent in the trace.
  const ids = new Set(ofTrace.map((s) => s.spanId));
  const orphans = ofTrace.filter((s) => s.parentSpanId !== '' && !ids.has(s.parentSpanId));
  assert.deepEqual(
    orphans.map((s) => s.name),
    [],
  );

  // Logs: every gateway line of the request, and the job's activity lines.
  const requestLines = gatewayLines.filter((l) => l.requestId !== undefined && l.requestId === r.headers.get('x-request-id'));
  assert.ok(requestLines.length > 0, 'the request wrote a log line');
  for (const l of requestLines) assert.equal(l.trace_id, traceId, JSON.stringify(l));
  // The SDK's own "Activity started" line is written before any interceptor sees the task's
  // headers (shared/tracing.ts): every other line of an activity names the trace.
  const jobLines = sdkLines.filter((e) => e.meta?.workflowId === jobId && e.meta?.activityType !== undefined && e.message !== 'Activity started');
  assert.ok(
    jobLines.some((e) => e.meta?.activityType !== undefined),
    'activities of the job wrote log lines',
  );
  const untraced = jobLines.filter((e) => e.meta?.trace_id !== traceId).map((e) => `${e.message} ${String(e.meta?.activityType ?? e.meta?.workflowType)}`);
  assert.deepEqual(untraced, []);
});
