// The client's pure parts: the event-stream parser (any chunking), job-id kinds, and the CLI's
// exit codes and overall percent; waitForJob over the event stream and its polling fallback.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSseParser, kindOfJobId, MediaGenClient, MediaGenError } from '@mediagen/client';
import { exitCodeFor, overallPercent } from '@mediagen/client/cli';

const stream =
  ': heartbeat\n\nid: 1\nevent: status\ndata: {"status":"pending"}\n\nid: 2\r\nevent: status\r\ndata: {"status":\r\ndata: "completed"}\r\n\r\nevent: ignored-without-data\n\n';

test('the SSE parser yields whole events whatever the chunk boundaries, skipping comments', () => {
  const expected = [
    { event: 'status', data: '{"status":"pending"}', id: '1' },
    { event: 'status', data: '{"status":\n"completed"}', id: '2' },
  ];
  for (const size of [1, 2, 7, stream.length]) {
    const parse = createSseParser();
    const events = [];
    for (let i = 0; i < stream.length; i += size) events.push(...parse(stream.slice(i, i + size)));
    assert.deepEqual(events, expected, `chunks of ${size}`);
  }
});

test('job ids name their kind by prefix', () => {
  assert.equal(kindOfJobId('img_abc'), 'images');
  assert.equal(kindOfJobId('vid_abc'), 'videos');
  assert.equal(kindOfJobId('rpl_abc'), 'replace-actors');
  assert.equal(kindOfJobId('tlk_abc'), 'talking-actors');
  assert.equal(kindOfJobId('file_abc'), null);
});

test('the CLI maps answers to its documented exit codes', () => {
  const e = (status: number, code: string, body: unknown = null) => new MediaGenError({ status, code, message: code, body });
  assert.equal(exitCodeFor(e(400, 'invalid_request')), 2);
  assert.equal(exitCodeFor(e(404, 'not_found')), 3);
  assert.equal(exitCodeFor(e(401, 'unauthorized')), 4);
  assert.equal(exitCodeFor(e(403, 'forbidden')), 4);
  assert.equal(exitCodeFor(e(402, 'insufficient_credits')), 5);
  assert.equal(exitCodeFor(e(409, 'generation_failed', { status: 'failed' })), 6);
  assert.equal(exitCodeFor(e(409, 'not_ready', { status: 'generating' })), 1);
  assert.equal(exitCodeFor(e(429, 'rate_limited')), 1);
  assert.equal(exitCodeFor(new Error('boom')), 1);
});

test('the progress bar percent only grows through the phases', () => {
  const job = (status: string, phase?: string, percent: number | null = null) =>
    ({ status, ...(phase ? { progress: { phase, attempt: 1, percent, queue_position: null } } : {}) }) as never;
  const seq = [
    job('pending'),
    job('generating', 'queued'),
    job('generating', 'submitting'),
    job('generating', 'generating', 0),
    job('generating', 'generating', 50),
    job('generating', 'storing_outputs'),
    job('completed'),
  ];
  const p = seq.map(overallPercent);
  assert.deepEqual(
    p,
    [...p].sort((a, b) => a - b),
  );
  assert.equal(p[0], 0);
  assert.equal(p.at(-1), 100);
});

// waitForJob over the event stream, with a fetch that answers as the gateway's events endpoint does
// (GET /v1/{kind}/{id}/events, text/event-stream): no network, the client's own code end to end.
const base = 'http://gateway.invalid';
const record = (status: string, phase: string | null = null, percent: number | null = null) => ({
  id: 'img_1',
  status,
  progress: phase ? { phase, attempt: 1, percent, queue_position: null } : null,
  error: status === 'failed' ? { code: 'generation_failed', message: 'the provider refused' } : null,
});
const sse = (events: { id: number; job: unknown }[]) => events.map((e) => `id: ${e.id}\nevent: status\ndata: ${JSON.stringify(e.job)}\n\n`).join('');

interface Call {
  path: string;
  lastEventId: string | null;
  auth: string | null;
}

/** A fetch answering each path from a queue of responders, recording each call. */
function fakeGateway(routes: Record<string, (() => Response)[]>) {
  const calls: Call[] = [];
  const fetchImpl: typeof fetch = async (input, init) => {
    const url = new URL(String(input));
    const headers = new Headers(init?.headers);
    calls.push({ path: url.pathname, lastEventId: headers.get('last-event-id'), auth: headers.get('authorization') });
    const queue = routes[url.pathname];
    const next = queue && (queue.length > 1 ? queue.shift()! : queue[0]!);
    if (!next) return Response.json({ error: { code: 'not_found', message: `no route for GET ${url.pathname}` } }, { status: 404 });
    return next();
  };
  return { calls, fetchImpl };
}
const json =
  (body: unknown, status = 200) =>
  () =>
    Response.json(body, { status });
const sseResponse =
  (text: string, chunk = 5) =>
  () =>
    new Response(
      new ReadableStream<Uint8Array>({
        start(c) {
          const bytes = new TextEncoder().encode(text);
          for (let i = 0; i < bytes.length; i += chunk) c.enqueue(bytes.slice(i, i + chunk));
          c.close();
        },
      }),
      { headers: { 'content-type': 'text/event-stream; charset=utf-8' } },
    );
const urlAnswer = json({ data: { id: 'img_1', url: 'http://x/a.png', urls: ['http://x/a.png', 'http://x/b.png'] } });

test('waitForJob follows the event stream: progress in order, resumes with Last-Event-ID after a drop, no polling', async () => {
  const gw = fakeGateway({
    '/v1/images/img_1': [json({ data: record('pending') })],
    '/v1/images/img_1/events': [
      // The first connection drops after two events; the second resumes from id 2.
      sseResponse(
        sse([
          { id: 1, job: record('pending') },
          { id: 2, job: record('generating', 'generating', 40) },
        ]),
      ),
      sseResponse(
        sse([
          { id: 3, job: record('generating', 'storing_outputs') },
          { id: 4, job: record('completed', 'completed') },
        ]),
      ),
    ],
    '/v1/images/img_1/url': [urlAnswer],
  });
  const c = new MediaGenClient({ apiKey: 'mg_live_k', baseUrl: base, fetch: gw.fetchImpl });
  const seen: string[] = [];
  const r = await c.waitForJob({ kind: 'images', id: 'img_1' }, { onProgress: (j) => seen.push(`${j.status}/${j.progress?.phase ?? '-'}`) });
  assert.deepEqual(seen, ['pending/-', 'generating/generating', 'generating/storing_outputs', 'completed/completed']);
  assert.deepEqual(r.urls, ['http://x/a.png', 'http://x/b.png']);
  assert.equal(r.url, 'http://x/a.png');
  const events = gw.calls.filter((x) => x.path.endsWith('/events'));
  assert.deepEqual(
    events.map((x) => x.lastEventId),
    [null, '2'],
    'the reconnect says what it already had',
  );
  assert.ok(
    events.every((x) => x.auth === 'Bearer mg_live_k'),
    'the stream is authenticated like any call',
  );
  assert.equal(gw.calls.filter((x) => x.path === '/v1/images/img_1').length, 1, 'one status read, then only events');
});

test('waitForJob rejects with MediaGenError when the stream ends with a failed job', async () => {
  const gw = fakeGateway({
    '/v1/videos/vid_1': [json({ data: { ...record('generating', 'queued'), id: 'vid_1' } })],
    '/v1/videos/vid_1/events': [sseResponse(sse([{ id: 7, job: { ...record('failed'), id: 'vid_1' } }]))],
  });
  const c = new MediaGenClient({ apiKey: 'k', baseUrl: base, fetch: gw.fetchImpl });
  await assert.rejects(c.waitForJob({ kind: 'videos', id: 'vid_1' }), (err: unknown) => {
    assert.ok(err instanceof MediaGenError);
    assert.equal(err.code, 'generation_failed');
    assert.match(err.message, /the provider refused/);
    assert.equal((err.body as { status: string }).status, 'failed');
    return true;
  });
  assert.ok(!gw.calls.some((x) => x.path.endsWith('/url')), 'no URL asked for a failed job');
});

test('a gateway without event streams (404) is polled, and the client stops asking for streams', async () => {
  // Each job answers pending, then generating, then completed on its third and later reads.
  const reads = new Map<string, number>();
  const statusOf = (id: string) => () => {
    const n = (reads.get(id) ?? 0) + 1;
    reads.set(id, n);
    return Response.json({ data: { ...record(n === 1 ? 'pending' : n === 2 ? 'generating' : 'completed', n === 2 ? 'generating' : null, 10), id } });
  };
  const gw = fakeGateway({
    '/v1/talking-actors/tlk_1': [statusOf('tlk_1')],
    '/v1/talking-actors/tlk_2': [statusOf('tlk_2')],
    '/v1/talking-actors/tlk_1/url': [json({ data: { id: 'tlk_1', url: 'http://x/v.mp4' } })],
    '/v1/talking-actors/tlk_2/url': [json({ data: { id: 'tlk_2', url: 'http://x/w.mp4' } })],
  });
  const c = new MediaGenClient({ apiKey: 'k', baseUrl: base, fetch: gw.fetchImpl });
  const seen: string[] = [];
  const first = await c.waitForJob({ kind: 'talking-actors', id: 'tlk_1' }, { pollIntervalMs: 1, onProgress: (j) => seen.push(j.status) });
  assert.deepEqual(first.urls, ['http://x/v.mp4'], 'urls falls back to [url]');
  assert.deepEqual(seen, ['pending', 'generating', 'completed'], 'polling reports each change');
  assert.deepEqual(
    gw.calls.map((x) => x.path.replace('/v1/talking-actors/', '')),
    ['tlk_1', 'tlk_1/events', 'tlk_1', 'tlk_1', 'tlk_1/url'],
  );
  gw.calls.length = 0;
  await c.waitForJob({ kind: 'talking-actors', id: 'tlk_2' }, { pollIntervalMs: 1 });
  assert.deepEqual(
    gw.calls.map((x) => x.path.replace('/v1/talking-actors/', '')),
    ['tlk_2', 'tlk_2', 'tlk_2', 'tlk_2/url'],
    'no second try at a stream the gateway does not have',
  );
});

test('jobEvents yields each status event with its id; a body that is not an event stream is refused', async () => {
  const gw = fakeGateway({
    '/v1/replace-actors/generations/rpl_1/events': [
      sseResponse(': ping\n\n' + sse([{ id: 5, job: { ...record('completed'), id: 'rpl_1' } }]), 3),
      json({ data: {} }),
    ],
  });
  const c = new MediaGenClient({ apiKey: 'k', baseUrl: base, fetch: gw.fetchImpl });
  const got = [];
  for await (const ev of c.replaceActors.events('rpl_1')) got.push(ev);
  assert.deepEqual(
    got.map((e) => [e.id, e.job.status]),
    [['5', 'completed']],
  );
  await assert.rejects(
    (async () => {
      for await (const _ of c.replaceActors.events('rpl_1', { lastEventId: '5' })) void _;
    })(),
    (err: unknown) => err instanceof MediaGenError && err.code === 'invalid_response',
  );
  assert.equal(gw.calls.at(-1)?.lastEventId, '5');
});

test('a stream cut mid-way (fetch "terminated") is reopened with Last-Event-ID, not reported as a failure', async () => {
  const cut = () => {
    let pulls = 0;
    return new Response(
      // One event, then the connection drops (as undici reports a socket closed mid-body).
      new ReadableStream<Uint8Array>({
        pull(c) {
          if (pulls++ === 0) c.enqueue(new TextEncoder().encode(sse([{ id: 3, job: record('generating', 'generating', 20) }])));
          else c.error(new TypeError('terminated'));
        },
      }),
      { headers: { 'content-type': 'text/event-stream' } },
    );
  };
  const gw = fakeGateway({
    '/v1/images/img_1': [json({ data: record('pending') })],
    '/v1/images/img_1/events': [cut, sseResponse(sse([{ id: 4, job: record('completed', 'completed') }]))],
    '/v1/images/img_1/url': [urlAnswer],
  });
  const c = new MediaGenClient({ apiKey: 'k', baseUrl: base, fetch: gw.fetchImpl });
  const r = await c.waitForJob({ kind: 'images', id: 'img_1' });
  assert.equal(r.job.status, 'completed');
  assert.deepEqual(
    gw.calls.filter((x) => x.path.endsWith('/events')).map((x) => x.lastEventId),
    [null, '3'],
  );
  assert.equal(gw.calls.filter((x) => x.path === '/v1/images/img_1').length, 1, 'no polling');
});
