// Every stream of an upload has an owner: against a real gateway process (`node dist/api/server.js`,
// so the last-resort handler is installed) on the real stack, 1,000 requests in a row of each hostile
// multipart shape, on a first upload and on an Idempotency-Key replay of a stored one (wrong part
// name, two files, a field after the file, a truncated body, a client that aborts once it has the
// 400, a body that stalls until the minimum-rate cut). After each run the same process serves, no
// error reached the last resort, and its heap after full collections is back within 10% of where it
// was after a warm-up of the same requests. The heap is read from the process itself
// (test/support/heap-probe.ts, SIGUSR2).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createTenant, createTestDatabase, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { call, spawnGateway, type Gateway } from '../integration/gateway-harness.js';
import { renderImagePng } from '../../activities/providers/local/png.js';

const ROUNDS = 1_000;
const WARM_UP = 150;
const PARALLEL = 10;
/** A stalled body is cut after one window below this rate. */
const MIN_BYTES_PER_SEC = 1_000_000;
const RATE_WINDOW_MS = 200;
const probe = pathToFileURL(fileURLToPath(new URL('../support/heap-probe.js', import.meta.url))).href;

type Shape = 'wrong field name' | 'two files' | 'field after file' | 'truncated body' | 'client abort after the 400' | 'slow body cut';
const SHAPES: Shape[] = ['wrong field name', 'two files', 'field after file', 'truncated body', 'client abort after the 400', 'slow body cut'];

const BOUNDARY = 'hostile-boundary-7f3a';
const field = (name: string, value: string) => Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
const filePart = (name: string, bytes: Buffer) =>
  Buffer.concat([
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"; filename="picture.png"\r\nContent-Type: image/png\r\n\r\n`),
    bytes,
    Buffer.from('\r\n'),
  ]);
const closing = Buffer.from(`--${BOUNDARY}--\r\n`);

interface Sent {
  /** What is written at once. */
  body: Buffer;
  /** Content-Length declared (more than body when the client stalls or aborts mid-body). */
  length: number;
  /** Destroy the socket as soon as the status line has arrived, while the body is still unsent. */
  abortOnAnswer?: boolean;
}

function shapeOf(shape: Shape, projectId: string, png: Buffer): Sent {
  const pid = field('project_id', projectId);
  switch (shape) {
    case 'wrong field name': {
      const body = Buffer.concat([pid, filePart('upload', png), closing]);
      return { body, length: body.length };
    }
    case 'two files': {
      const body = Buffer.concat([pid, filePart('file', png), filePart('file', png), closing]);
      return { body, length: body.length };
    }
    case 'field after file': {
      const body = Buffer.concat([pid, filePart('file', png), field('extra', 'x'), closing]);
      return { body, length: body.length };
    }
    case 'truncated body': {
      // Cut inside the file part: no closing boundary ever comes, though every declared byte does.
      const body = Buffer.concat([pid, filePart('file', png)]).subarray(0, pid.length + 200);
      return { body, length: body.length };
    }
    case 'client abort after the 400': {
      const body = Buffer.concat([pid, filePart('upload', png)]);
      return { body, length: body.length + 4 * 1024 * 1024, abortOnAnswer: true };
    }
    case 'slow body cut': {
      const body = Buffer.concat([pid, filePart('file', png)]).subarray(0, pid.length + 300);
      return { body, length: body.length + 4 * 1024 * 1024 };
    }
  }
}

/** One raw HTTP request on its own socket; resolves with the answer's status once the whole answer (or the close) has arrived. */
function send(baseUrl: string, apiKey: string, sent: Sent, idempotencyKey?: string): Promise<number> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const s = net.connect({ host: url.hostname, port: Number(url.port) });
    let buf = Buffer.alloc(0);
    let status = 0;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      s.destroy();
      if (status) resolve(status);
      else reject(new Error(`no answer: ${buf.toString('utf8', 0, 200)}`));
    };
    s.on('error', () => finish());
    s.on('close', finish);
    s.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const end = buf.indexOf('\r\n\r\n');
      if (end === -1) return;
      const head = buf.toString('latin1', 0, end);
      status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
      if (sent.abortOnAnswer) return finish();
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? NaN);
      if (Number.isFinite(length) && buf.length >= end + 4 + length) finish();
    });
    s.once('connect', () => {
      s.write(
        `POST /v1/upload HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${apiKey}\r\n` +
          (idempotencyKey ? `Idempotency-Key: ${idempotencyKey}\r\n` : '') +
          `Content-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: ${sent.length}\r\n\r\n`,
      );
      s.write(sent.body);
    });
  });
}

describe('hostile multipart uploads against a gateway process with the last resort installed', () => {
  let tdb: TestDatabase;
  let t: Tenant;
  let png: Buffer;
  let gw: Gateway & { child: import('node:child_process').ChildProcess; output: () => string };
  const replayKey = 'hostile-replay-key';

  before(async () => {
    tdb = await createTestDatabase();
    t = await createTenant(tdb.db);
    png = await renderImagePng('hostile uploads', 64, 64);
    gw = await spawnGateway(tdb.url, {
      NODE_OPTIONS: `--expose-gc --import=${probe}`,
      RATE_LIMIT_GENERATE_PER_MIN: '1000000',
      RATE_LIMIT_POLL_PER_MIN: '1000000',
      UPLOAD_MAX_CONCURRENT_PER_KEY: String(PARALLEL * 4),
      UPLOAD_MIN_BYTES_PER_SEC: String(MIN_BYTES_PER_SEC),
      UPLOAD_RATE_WINDOW_MS: String(RATE_WINDOW_MS),
    });
    // The upload the replays repeat.
    const ok = await send(
      gw.baseUrl,
      t.apiKey,
      (() => {
        const body = Buffer.concat([field('project_id', t.projectId), filePart('file', png), closing]);
        return { body, length: body.length };
      })(),
      replayKey,
    );
    assert.equal(ok, 200, 'the upload the replays repeat is stored');
  });

  after(async () => {
    await gw?.close();
    await tdb?.drop();
  });

  let probes = 0;
  async function heapUsed(): Promise<number> {
    const want = ++probes;
    gw.child.kill('SIGUSR2');
    const line = await waitFor('the heap probe to answer', () => [...gw.output().matchAll(/^heap-probe (.*)$/gm)][want - 1]?.[1], 10_000, 20);
    const m = JSON.parse(line) as { heapUsed?: number; error?: string };
    assert.ok(m.heapUsed, `heap probe: ${line}`);
    return m.heapUsed;
  }

  async function run(sent: Sent, n: number, key: string | undefined): Promise<Map<number, number>> {
    const statuses = new Map<number, number>();
    for (let i = 0; i < n; i += PARALLEL) {
      const batch = await Promise.all(Array.from({ length: Math.min(PARALLEL, n - i) }, () => send(gw.baseUrl, t.apiKey, sent, key)));
      for (const s of batch) statuses.set(s, (statuses.get(s) ?? 0) + 1);
    }
    return statuses;
  }

  const expected: Record<Shape, { first: number; replay: number }> = {
    'wrong field name': { first: 400, replay: 422 },
    'two files': { first: 400, replay: 422 },
    'field after file': { first: 400, replay: 422 },
    'truncated body': { first: 400, replay: 422 },
    'client abort after the 400': { first: 400, replay: 422 },
    'slow body cut': { first: 408, replay: 408 },
  };

  for (const replay of [false, true]) {
    for (const shape of SHAPES) {
      const path = replay ? 'an Idempotency-Key replay' : 'a first upload';
      test(`${ROUNDS} × ${shape}, on ${path}: each answered ${replay ? expected[shape].replay : expected[shape].first}, same process serving, heap back within 10%`, async () => {
        const sent = shapeOf(shape, t.projectId, png);
        const key = replay ? replayKey : undefined;
        const want = replay ? expected[shape].replay : expected[shape].first;
        const pid = gw.child.pid;
        await run(sent, WARM_UP, key);
        const baseline = await heapUsed();
        const statuses = await run(sent, ROUNDS, key);
        assert.deepEqual([...statuses], [[want, ROUNDS]], `every request answered ${want}`);
        // Connections still being drained or closed hold their buffers until they are gone: wait for that.
        let last = 0;
        await waitFor(
          'the heap to be back within 10% of its baseline',
          async () => {
            last = await heapUsed();
            return last <= baseline * 1.1;
          },
          30_000,
          500,
        ).catch((err: unknown) => {
          throw new Error(`heap ${mb(last)} after ${ROUNDS} requests against ${mb(baseline)} before: ${(err as Error).message}`);
        });
        console.log(`[hostile-uploads] ${shape} (${path}): ${ROUNDS} × ${want}; heap ${mb(baseline)} → ${mb(last)}`);
        assert.equal(gw.child.pid, pid);
        assert.equal(gw.child.exitCode, null, `the gateway exited:\n${gw.output().slice(-2000)}`);
        const r = await call(gw.baseUrl, 'GET', '/v1/models', { key: t.apiKey });
        assert.equal(r.status, 200, r.text);
        assert.doesNotMatch(gw.output(), /uncaught error|"level":(50|60)/, 'nothing reached the last resort');
      });
    }
  }
});

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
