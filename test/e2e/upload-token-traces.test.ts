// An upload's media link is its credential: no exported span and no log line may hold its token.
// A job runs on a multipart upload and a direct upload with tracing on (a loopback OTLP receiver)
// and every log line of the gateway, the workers and the Temporal SDK kept; the links are fetched,
// one upload is deleted and its link fetched again; then every exported byte and every line is
// scanned for the tokens (and for the job's media prefix token). And a client's `traceparent` is a
// link of the request span, not its parent, unless the gateway trusts inbound context.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';
import { createTenant, createTestDatabase, testConfig, waitFor, type TestDatabase } from '../support/stack.js';
import { api, startWorkers, waitForJobStatus, type Workers } from '../support/services.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.js';
import { completedDirectUpload, multipartUpload, uploadTokenOf } from '../support/uploads.js';
import { renderImage, renderVideo } from '../../activities/providers/local/media.js';
import { startTracing, tracing } from '../../shared/tracing.js';
import { createGateway, type Gateway } from '../../api/gateway.js';
import type { Config } from '../../shared/config.js';

let tdb: TestDatabase;
let receiver: OtlpReceiver;
let config: Config;
let gateway: Gateway;
let trusting: Gateway;
let workers: Workers;
const gatewayLines: string[] = [];
const workerLines: string[] = [];
const sdkLines: LogEntry[] = [];

/** A pino destination keeping every line as written. */
const collect = (into: string[]) =>
  new Writable({
    write(chunk: Buffer, _enc, done) {
      into.push(
        ...chunk
          .toString('utf8')
          .split('\n')
          .filter((l) => l.trim()),
      );
      done();
    },
  });

before(async () => {
  Runtime.install({ logger: new DefaultLogger('DEBUG', (entry) => void sdkLines.push(entry)) });
  [tdb, receiver] = await Promise.all([createTestDatabase(), startOtlpReceiver()]);
  config = testConfig(tdb.url, {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    LOG_LEVEL: 'debug',
    RECONCILE_INTERVAL_MS: '3600000',
    RATE_LIMIT_GENERATE_PER_MIN: '1000',
  });
  assert.ok(await startTracing(config, 'mediagen-test'));
  gateway = createGateway({ ...config, HOST: '127.0.0.1', PORT: 0 }, { processExtras: false, logDestination: collect(gatewayLines) });
  trusting = createGateway(
    { ...config, HOST: '127.0.0.1', PORT: 0, TRACE_TRUST_INBOUND: true },
    { processExtras: false, logDestination: collect(gatewayLines) },
  );
  await Promise.all([gateway.start(), trusting.start()]);
  workers = await startWorkers(config, gateway.db, 'all', { logDestination: collect(workerLines) });
});

after(async () => {
  await workers?.stop();
  await trusting?.stop({ graceMs: 0 });
  await gateway?.stop({ graceMs: 0 });
  await tracing()?.shutdown();
  await receiver?.close();
  await tdb?.drop();
});

/** Flushes until `check` holds over the received spans (or the wait ends and the assertion names it). */
async function spansUntil(what: string, check: (spans: ReceivedSpan[]) => boolean): Promise<void> {
  await waitFor(
    what,
    async () => {
      await tracing()!.flush();
      return check(receiver.spans) || undefined;
    },
    30_000,
    200,
  );
}

test('no exported span and no log line holds an upload token (multipart and direct uploads, a job on them, the links fetched, one deleted)', async () => {
  const t = await createTenant(tdb.db);
  const c = api(gateway.baseUrl, t.apiKey);
  const png = await renderImage({ prompt: 'a character to trace', width: 320, height: 320 });
  const dir = await mkdtemp(join(tmpdir(), 'traces-'));
  let mp4: Buffer;
  try {
    await renderVideo({ prompt: 'motion to trace', width: 320, height: 568, durationSeconds: 2, outPath: join(dir, 'v.mp4') });
    mp4 = await readFile(join(dir, 'v.mp4'));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const multipart = await multipartUpload(gateway.baseUrl, t.apiKey, t.projectId, { name: 'character.png', mime: 'image/png', bytes: png });
  assert.equal(multipart.status, 200, multipart.text);
  const image = multipart.body.data;
  const video = await completedDirectUpload(gateway.baseUrl, t.apiKey, t.projectId, { name: 'motion.mp4', mime: 'video/mp4', bytes: mp4 });
  const tokens = [uploadTokenOf(image.path), uploadTokenOf(video.path)];
  for (const tok of tokens) assert.match(tok, /^[0-9a-z]{24}$/, 'the token is what the test thinks it is');

  assert.equal((await fetch(image.path)).status, 200);
  assert.equal((await fetch(video.path, { headers: { Range: 'bytes=0-9' } })).status, 206);
  const created = await c.post('/v1/replace-actors/generations', { project_id: t.projectId, image_file_id: image.id, video_file_id: video.id, duration: 3 });
  assert.equal(created.status, 200, created.text);
  const job = await waitForJobStatus(c, `/v1/replace-actors/generations/${created.body.data.id}`, ['completed', 'failed']);
  assert.equal(job.status, 'completed', JSON.stringify(job.error));
  const jobToken = gateway.storage.jobMediaPrefix(job.id).split('/')[2]!;
  assert.equal((await c.get(`/v1/replace-actors/generations/${job.id}/url`)).status, 200);
  assert.equal((await c.call('DELETE', `/v1/uploads/${image.id}`)).status, 200);
  assert.equal((await fetch(image.path)).status, 410);

  // The scan means something only if the paths and keys reached the spans (redacted).
  const mediaPath = (s: ReceivedSpan) => String(s.attributes['url.path'] ?? '');
  const storageKey = (s: ReceivedSpan) => String(s.attributes['mediagen.storage.key'] ?? '');
  await spansUntil('the media requests, the upload and output writes and the job run among the exported spans', (spans) => {
    const media = spans.filter((s) => mediaPath(s).startsWith(`/media/uploads/${t.workspaceId}/`));
    return (
      media.some((s) => mediaPath(s).includes(image.id)) &&
      media.some((s) => mediaPath(s).includes(video.id)) &&
      spans.some((s) => storageKey(s).startsWith(`uploads/${t.workspaceId}/${image.id}/`)) &&
      spans.some((s) => storageKey(s).startsWith(`jobs/${job.id}/`)) &&
      spans.some((s) => s.name === 'RunWorkflow:replaceActorGeneration' || (s.name.startsWith('RunWorkflow:') && s.attributes.workflowId === job.id))
    );
  });
  const media = receiver.spans.filter((s) => mediaPath(s).startsWith('/media/uploads/'));
  assert.ok(
    media.every((s) => /\/\[redacted\]\.(png|mp4)$/.test(mediaPath(s))),
    media.map(mediaPath).join(', '),
  );
  assert.ok(receiver.spans.some((s) => storageKey(s) === `uploads/${t.workspaceId}/${image.id}/[redacted].png`));
  assert.ok(receiver.spans.some((s) => storageKey(s).startsWith(`jobs/${job.id}/[redacted]/`)));

  const secrets = [...tokens, jobToken];
  for (const secret of secrets) {
    const inSpans = receiver.bodies.filter((b) => b.includes(secret)).length;
    assert.equal(inSpans, 0, `${inSpans} exported span batches hold a token`);
    assert.deepEqual(
      gatewayLines.filter((l) => l.includes(secret)),
      [],
      'gateway log lines',
    );
    assert.deepEqual(
      workerLines.filter((l) => l.includes(secret)),
      [],
      'worker log lines',
    );
    assert.deepEqual(
      sdkLines
        .filter((e) => JSON.stringify({ m: e.message, meta: e.meta }, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v)).includes(secret))
        .map((e) => e.message),
      [],
      'Temporal SDK log lines',
    );
  }
  assert.ok(receiver.bodies.length > 0 && gatewayLines.length > 0 && workerLines.length > 0 && sdkLines.length > 0, 'spans and logs were captured');
});

test("a client's traceparent is a link of the request span, not its parent; a gateway that trusts inbound context adopts it", async () => {
  const t = await createTenant(tdb.db);
  const callerTrace = randomBytes(16).toString('hex');
  const callerSpan = randomBytes(8).toString('hex');
  const traceparent = `00-${callerTrace}-${callerSpan}-01`;
  const call = (gw: Gateway) => fetch(`${gw.baseUrl}/v1/projects`, { headers: { authorization: `Bearer ${t.apiKey}`, traceparent } });

  const linked = await call(gateway);
  assert.equal(linked.status, 200);
  const ownTrace = linked.headers.get('x-trace-id') ?? '';
  assert.match(ownTrace, /^[0-9a-f]{32}$/);
  assert.notEqual(ownTrace, callerTrace, 'the request starts its own trace');

  const adopted = await call(trusting);
  assert.equal(adopted.status, 200);
  assert.equal(adopted.headers.get('x-trace-id'), callerTrace, 'a trusting gateway continues the caller trace');

  const requestSpan = (traceId: string) => receiver.spans.find((s) => s.traceId === traceId && s.name === 'GET /v1/projects');
  await spansUntil('both request spans', () => Boolean(requestSpan(ownTrace) && requestSpan(callerTrace)));
  const own = requestSpan(ownTrace)!;
  assert.equal(own.parentSpanId, '', 'a root span');
  assert.deepEqual(own.links, [{ traceId: callerTrace, spanId: callerSpan }]);
  const trusted = requestSpan(callerTrace)!;
  assert.equal(trusted.parentSpanId, callerSpan);
  assert.deepEqual(trusted.links, []);
});
