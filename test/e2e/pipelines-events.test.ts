// A pipeline's live events on the real stack (gateway over HTTP, the parent workflow and its step
// jobs on Temporal, Postgres, MinIO, the local renderer): GET /v1/pipelines/{id}/events sends the
// pipeline record at every change of the pipeline, its steps and their jobs' progress, with ids
// that grow, and ends after the terminal record; Last-Event-ID resumes without a repeat; auth and
// scoping are GET's. The TypeScript client's mg.pipelines.wait follows that stream (and polls where a
// gateway has none), and the CLI's `mediagen pipelines run FILE --wait` follows a pipeline to its end
// as a separate process, exiting 6 when it failed.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MediaGenClient, MediaGenError, type Pipeline } from '@mediagen/client';
import { createTenant, type Tenant } from '../support/stack.js';
import { api, startService, type InProcessGateway as Gateway, type Service } from '../support/services.js';
import { Holds } from '../support/holds.js';
import { imageStep, videoStep } from '../support/pipeline-steps.js';
import { openEventStream, type SseEvent, type SseStream } from '../support/sse.js';

const cli = fileURLToPath(new URL('../../../client/bin/mediagen.js', import.meta.url));

let suite: Service;
let gw: Gateway;
let t: Tenant;
let other: Tenant;
let dir: string;
const holds = new Holds();

before(async () => {
  suite = await startService(
    {
      // Long enough for the renderer to report percents, each written: a step's progress is an event.
      LOCAL_RENDER_LATENCY_MS: '2500',
      PROGRESS_WRITE_INTERVAL_MS: '0',
      LOCAL_RENDER_FAULTS: 'true',
      SSE_HEARTBEAT_MS: '200',
      RECONCILE_INTERVAL_MS: '3600000',
      RATE_LIMIT_GENERATE_PER_MIN: '1000',
      RATE_LIMIT_POLL_PER_MIN: '100000',
    },
    { workers: { activityInterceptors: [holds.activityInterceptor] } },
  );
  ({ gw } = suite);
  [t, other] = [await createTenant(suite.tdb.db, 10_000), await createTenant(suite.tdb.db, 1000)];
  dir = await mkdtemp(join(tmpdir(), 'pipeline-events-'));
});

after(async () => {
  await suite?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const body = (tenant: Tenant, steps: unknown[]) => ({ project_id: tenant.projectId, steps });

const record = (e: SseEvent) => JSON.parse(e.data) as Pipeline;
const auth = (tenant: Tenant, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${tenant.apiKey}`, ...extra });
/** The record without what moves on its own (presigned URLs are signed afresh at each read). */
const stable = (p: Pipeline) => ({ ...p, steps: p.steps.map((s) => ({ ...s, outputs: s.outputs.map((o) => ({ ...o, url: undefined })) })) });

async function create(tenant: Tenant, steps: unknown[]): Promise<string> {
  const r = await api(gw.baseUrl, tenant.apiKey).post('/v1/pipelines', body(tenant, steps));
  assert.equal(r.status, 200, r.text);
  return r.body.data.id as string;
}

/** A pipeline whose first step's job is held before it generates, and the function that lets it go. */
async function heldPipeline(tenant: Tenant): Promise<{ id: string; release(): void }> {
  const hold = holds.activity('startGenerating', 'before');
  const id = await create(tenant, [imageStep(), videoStep()]);
  await hold.reached;
  return { id, release: hold.release };
}

async function stream(tenant: Tenant, id: string, headers: Record<string, string> = {}): Promise<SseStream> {
  const s = await openEventStream(gw.baseUrl, `/v1/pipelines/${id}/events`, auth(tenant, headers));
  assert.equal(s.status, 200, s.body);
  return s;
}

const ids = (events: SseEvent[]) => events.map((e) => Number(e.id));
const growing = (ns: number[]) => ns.every((n, i) => Number.isInteger(n) && (i === 0 || n > ns[i - 1]!));

describe('pipeline event stream', () => {
  test('image → video: every change arrives in order with growing ids, step progress included, and the stream ends with the completed record', async () => {
    const id = await create(t, [imageStep(), videoStep()]);
    const s = await stream(t, id);
    assert.match(String(s.headers['content-type']), /^text\/event-stream/);
    const events = await s.waitForEnd();
    assert.ok(
      events.every((e) => e.event === 'status'),
      'status events only',
    );
    assert.ok(growing(ids(events)), `ids grow: ${ids(events).join(', ')}`);
    const records = events.map(record);
    const ranks = { pending: 0, running: 1, completed: 2, failed: 2 } as const;
    assert.ok(
      records.every((r, i) => i === 0 || ranks[r.status] >= ranks[records[i - 1]!.status]),
      `the pipeline's status only moves forward: ${records.map((r) => r.status).join(' ')}`,
    );
    // Each step goes waiting → its job's statuses → completed, the second after the first.
    for (const step of [0, 1]) {
      const seen = records.map((r) => r.steps[step]!.status).filter((st, i, all) => st !== all[i - 1]);
      assert.equal(seen.at(-1), 'completed', `step ${step}: ${seen.join(' ')}`);
      assert.ok(seen.includes('generating'), `step ${step} was seen generating: ${seen.join(' ')}`);
    }
    assert.ok(
      records.some((r) => r.steps[1]!.status === 'generating' && typeof r.steps[1]!.progress?.percent === 'number'),
      `the video step's percent reached the stream: ${JSON.stringify(records.map((r) => r.steps[1]!.progress))}`,
    );
    assert.ok(
      records.some((r) => r.steps[0]!.status === 'completed' && r.steps[0]!.outputs.length === 1 && r.steps[1]!.status !== 'completed'),
      "the first step's stored output is an event of its own, before the second step ends",
    );
    const last = records.at(-1)!;
    assert.equal(last.status, 'completed');
    assert.equal(records.filter((r) => r.status === 'completed').length, 1, 'the terminal record is sent once, last');
    const got = await api(gw.baseUrl, t.apiKey).get(`/v1/pipelines/${id}`);
    assert.deepEqual(stable(last), stable(got.body.data), 'the last event is the record GET answers');
  });

  test('a reconnect with Last-Event-ID repeats nothing; from the terminal id the stream ends at once, from an older one it sends only the current record', async () => {
    const held = await heldPipeline(t);
    const s1 = await stream(t, held.id);
    const [first] = await s1.waitForEvents(1);
    s1.close();

    // Nothing changed since: only heartbeats until the pipeline moves.
    const s2 = await stream(t, held.id, { 'last-event-id': first!.id! });
    await s2.waitForComments(2);
    assert.equal(s2.events.length, 0, 'the event the client had is not sent again');
    held.release();
    const resumed = await s2.waitForEnd();
    assert.ok(resumed.length >= 2);
    assert.ok(
      ids(resumed).every((n) => n > Number(first!.id)),
      `only newer ids: ${first!.id} then ${ids(resumed).join(', ')}`,
    );
    assert.ok(growing(ids(resumed)));
    assert.equal(record(resumed.at(-1)!).status, 'completed');
    const lastId = resumed.at(-1)!.id!;

    const s3 = await stream(t, held.id, { 'last-event-id': lastId });
    assert.deepEqual(await s3.waitForEnd(), []);
    const s4 = await stream(t, held.id, { 'last-event-id': first!.id! });
    const latest = await s4.waitForEnd();
    assert.equal(latest.length, 1);
    assert.equal(latest[0]!.id, lastId);
  });

  test('a canceled pipeline ends the stream with its failed record, the running step canceled and the rest skipped', async () => {
    const held = await heldPipeline(t);
    const s = await stream(t, held.id);
    await s.waitForEvents(1);
    const canceled = await api(gw.baseUrl, t.apiKey).post(`/v1/pipelines/${held.id}/cancel`, {});
    assert.equal(canceled.status, 200, canceled.text);
    held.release();
    const last = record((await s.waitForEnd()).at(-1)!);
    assert.equal(last.status, 'failed');
    assert.equal(last.error?.code, 'canceled');
    assert.equal(last.steps[0]!.status, 'failed');
    assert.equal(last.steps[1]!.status, 'skipped');
  });

  test("401 without a key, 404 for another workspace's pipeline or an unknown id, 400 for a malformed Last-Event-ID", async () => {
    const held = await heldPipeline(t);
    try {
      const noKey = await api(gw.baseUrl).get(`/v1/pipelines/${held.id}/events`);
      assert.equal(noKey.status, 401);
      assert.equal(noKey.body.error.code, 'unauthorized');
      for (const path of [`/v1/pipelines/${held.id}/events`, '/v1/pipelines/pl_unknown/events']) {
        const r = await api(gw.baseUrl, other.apiKey).get(path);
        assert.equal(r.status, 404, path);
        assert.equal(r.body.error.code, 'not_found');
      }
      const bad = await api(gw.baseUrl, t.apiKey).call('GET', `/v1/pipelines/${held.id}/events`, undefined, { 'last-event-id': 'abc' });
      assert.equal(bad.status, 400);
      assert.equal(bad.body.error.code, 'invalid_request');
      const doc = await api(gw.baseUrl).get('/v1/openapi.json');
      assert.ok(doc.body.paths['/v1/pipelines/{id}/events']?.get, 'the document lists the stream');
    } finally {
      held.release();
    }
    await stream(t, held.id).then((s) => s.waitForEnd());
  });
});

describe('mg.pipelines.wait', () => {
  /** A client whose requests are recorded (method and path), through a fetch that may refuse event streams. */
  const recordingClient = (tenant: Tenant, opts: { noStreams?: boolean } = {}) => {
    const calls: string[] = [];
    const mg = new MediaGenClient({
      apiKey: tenant.apiKey,
      baseUrl: gw.baseUrl,
      fetch: async (input, init) => {
        const url = new URL(String(input));
        calls.push(`${init?.method ?? 'GET'} ${url.pathname}`);
        if (opts.noStreams && url.pathname.endsWith('/events'))
          return new Response(JSON.stringify({ error: { code: 'not_found', message: 'no such route' } }), {
            status: 404,
            headers: { 'content-type': 'application/json' },
          });
        return fetch(input, init);
      },
    });
    return { mg, calls };
  };

  test('follows the event stream to the completed record, reporting each state; one GET, then only the stream', async () => {
    const { mg, calls } = recordingClient(t);
    const created = (await mg.pipelines.create(body(t, [imageStep(), videoStep()]) as never)).data as Pipeline;
    const updates: Pipeline[] = [];
    const done = await mg.pipelines.wait(created.id, { onUpdate: (p) => updates.push(p), timeout: 120_000 });
    assert.equal(done.status, 'completed');
    assert.ok(done.steps.every((s) => s.status === 'completed' && s.outputs.length === 1));
    assert.ok(updates.length >= 4, `several states reported: ${updates.length}`);
    assert.ok(updates.some((p) => p.steps[1]!.progress !== null));
    assert.equal(calls.filter((c) => c === `GET /v1/pipelines/${created.id}`).length, 1, calls.join('\n'));
    assert.ok(calls.includes(`GET /v1/pipelines/${created.id}/events`));
  });

  test('polls GET where the gateway has no event stream; a failed pipeline is answered, not thrown', async () => {
    const { mg, calls } = recordingClient(t, { noStreams: true });
    const created = (await mg.pipelines.create(body(t, [imageStep('doomed [fail:terminal]'), videoStep()]) as never)).data as Pipeline;
    const done = await mg.pipelines.wait(created.id, { pollIntervalMs: 100 });
    assert.equal(done.status, 'failed');
    assert.equal(done.steps[0]!.status, 'failed');
    assert.equal(done.steps[1]!.status, 'waiting');
    assert.ok(calls.filter((c) => c === `GET /v1/pipelines/${created.id}`).length >= 2, 'it polled');
  });

  test('timeout rejects with MediaGenError timeout while the pipeline goes on', async () => {
    const held = await heldPipeline(t);
    try {
      const { mg } = recordingClient(t);
      await assert.rejects(mg.pipelines.wait(held.id, { timeout: 300 }), (err: unknown) => err instanceof MediaGenError && err.code === 'timeout');
    } finally {
      held.release();
    }
    const { mg } = recordingClient(t);
    assert.equal((await mg.pipelines.wait(held.id)).status, 'completed');
  });
});

describe('mediagen pipelines', () => {
  interface Run {
    code: number | null;
    stdout: string;
    stderr: string;
  }
  const mediagen = (args: string[], tenant: Tenant, stdin?: string): Promise<Run> =>
    new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [cli, ...args], {
        env: { ...process.env, MEDIAGEN_API_KEY: tenant.apiKey, MEDIAGEN_BASE_URL: gw.baseUrl },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
      child.stdin.end(stdin ?? '');
    });

  test('run FILE --wait follows image → video to its end: step progress on stderr, the final record on stdout, exit 0', async () => {
    const file = join(dir, 'pipeline.json');
    await writeFile(file, JSON.stringify(body(t, [imageStep(), videoStep()])));
    const r = await mediagen(['--json', 'pipelines', 'run', file, '--wait'], t);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const p = JSON.parse(r.stdout) as Pipeline;
    assert.equal(p.status, 'completed');
    assert.ok(p.steps.every((s) => s.status === 'completed'));
    assert.match(r.stderr, new RegExp(`^${p.id}  created$`, 'm'));
    assert.match(r.stderr, /^ {2}clip {2}generating · generating \d+%/m, r.stderr);
    assert.match(r.stderr, /^ {2}still {2}completed/m);
    // A step never goes back: once generating, its next status is its end (a completed job's step
    // shows generating · checkpointing until it holds the outputs).
    for (const step of ['still', 'clip']) {
      const statuses = [...r.stderr.matchAll(new RegExp(`^ {2}${step} {2}(\\w+)`, 'gm'))].map((m) => m[1]);
      const from = statuses.indexOf('generating');
      assert.ok(from >= 0 && statuses.slice(from).every((st) => st === 'generating' || st === 'completed'), `${step}: ${statuses.join(' → ')}`);
    }
    assert.match(r.stderr, new RegExp(`^${p.id}  completed$`, 'm'));

    const receipt = await mediagen(['pipelines', 'receipt', p.id], t);
    assert.equal(receipt.code, 0, receipt.stderr);
    assert.match(receipt.stdout, new RegExp(`^${p.id}  completed · price ${p.price} · charged ${p.price}`, 'm'));
    const got = await mediagen(['pipelines', 'get', p.id], t);
    assert.equal(got.code, 0, got.stderr);
    assert.match(got.stdout, /^still +image +nano-banana-2 +completed/m);
    // A finished pipeline cannot be canceled: the API's 409, exit 1.
    const cancel = await mediagen(['pipelines', 'cancel', p.id], t);
    assert.equal(cancel.code, 1);
    assert.match(cancel.stderr, /409 not_cancelable/);
  });

  test('run - --wait reads stdin; a pipeline that fails exits 6 with its failed record; --dry-run quotes; resume --body runs the failed step again', async () => {
    const failing = JSON.stringify(body(t, [imageStep('doomed [fail:terminal]'), videoStep()]));
    const r = await mediagen(['--json', 'pipelines', 'run', '-', '--wait'], t, failing);
    assert.equal(r.code, 6, r.stdout + r.stderr);
    const p = JSON.parse(r.stdout) as Pipeline;
    assert.equal(p.status, 'failed');
    assert.match(r.stderr, /pipeline pl_\S+ failed: step "still" failed/);

    const quote = await mediagen(['--json', 'pipelines', 'run', '-', '--dry-run'], t, failing);
    assert.equal(quote.code, 0, quote.stderr);
    assert.deepEqual(
      (JSON.parse(quote.stdout) as { steps: { id: string }[] }).steps.map((s) => s.id),
      ['still', 'clip'],
    );

    const stepBody = join(dir, 'still.json');
    await writeFile(stepBody, JSON.stringify(imageStep('a lighthouse that renders').body));
    const resumed = await mediagen(['--json', 'pipelines', 'resume', p.id, '--body', stepBody, '--wait'], t);
    assert.equal(resumed.code, 0, resumed.stdout + resumed.stderr);
    assert.equal((JSON.parse(resumed.stdout) as Pipeline).status, 'completed');

    const notJson = await mediagen(['pipelines', 'run', '-'], t, '{ steps');
    assert.equal(notJson.code, 2);
    assert.match(notJson.stderr, /standard input is not JSON/);
  });
});
