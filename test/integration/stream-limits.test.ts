// What one client can hold open on a gateway (api/stream-limits.ts, api/routes/events.ts), on the
// real Postgres with the gateway over HTTP and job rows moved by the repository functions:
//   - open event streams are capped per API key and per workspace: past the cap a 429
//     `too_many_streams` names it, and a closed stream frees its place;
//   - revoking a key ends its open streams, and so does the key's expiry;
//   - a client that does not read is disconnected, not buffered for;
//   - the gateway holds at most GATEWAY_MAX_CONNECTIONS sockets.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { createTenant, createTestDatabase, insertImageJob, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { call, startInProcessGateway, type InProcessGateway } from './gateway-harness.js';
import { openEventStream, type SseStream } from '../support/sse.js';
import { createApiKey, revokeApiKey } from '../../db/repos/workspaces.js';
// The job service's status moves, in a transaction of the test's own.
import * as jobMoves from '../../jobs/index.js';
import * as progressRepo from '../../db/repos/job-progress.js';

let tdb: TestDatabase;
let gw: InProcessGateway;

before(async () => {
  tdb = await createTestDatabase();
  gw = await startInProcessGateway(tdb.db, tdb.url, {
    RATE_LIMIT_POLL_PER_MIN: '100000',
    SSE_HEARTBEAT_MS: '60000',
    SSE_MAX_STREAMS_PER_KEY: '2',
    SSE_MAX_STREAMS_PER_WORKSPACE: '3',
    SSE_DRAIN_TIMEOUT_MS: '300',
    GATEWAY_MAX_CONNECTIONS: '40',
  });
});

after(async () => {
  await gw?.close();
  await tdb?.drop();
});

const streams = () => gw.app.streams;

async function known(key: string): Promise<void> {
  await waitFor('the new key to be known', async () => (await call(gw.baseUrl, 'GET', '/v1/no-such-route', { key })).status === 404);
}

async function stream(key: string, jobId: string): Promise<SseStream> {
  return openEventStream(gw.baseUrl, `/v1/images/${jobId}/events`, { authorization: `Bearer ${key}` });
}

async function openOk(key: string, jobId: string): Promise<SseStream> {
  const s = await stream(key, jobId);
  assert.equal(s.status, 200, s.body);
  await s.waitForEvents(1);
  return s;
}

async function secondKey(t: Tenant): Promise<string> {
  const k = await createApiKey(tdb.db, { workspaceId: t.workspaceId, name: 'second', actorEmail: t.ownerEmail });
  await known(k.key);
  return k.key;
}

describe('event stream caps', () => {
  test('past the per-key cap a stream is refused with 429 too_many_streams naming the cap; closing one frees its place', async () => {
    const t = await createTenant(tdb.db);
    await known(t.apiKey);
    const job = await insertImageJob(tdb.db, t);
    const a = await openOk(t.apiKey, job.id);
    const b = await openOk(t.apiKey, job.id);
    const refused = await stream(t.apiKey, job.id);
    assert.equal(refused.status, 429);
    const body = JSON.parse(refused.body);
    assert.equal(body.error.code, 'too_many_streams');
    assert.match(body.error.message, /per-key cap \(2\)/);
    assert.ok(Number(refused.headers['retry-after']) > 0);
    assert.ok(body.retry_after_ms > 0);
    a.close();
    await waitFor('the closed stream to free its place', () => streams().open({ apiKeyId: t.apiKeyId }) === 1);
    const c = await openOk(t.apiKey, job.id);
    b.close();
    c.close();
    await waitFor('every stream to end', () => streams().open({ workspaceId: t.workspaceId }) === 0);
  });

  test('keys of one workspace share the per-workspace cap; another workspace is not affected', async () => {
    const t = await createTenant(tdb.db);
    await known(t.apiKey);
    const key2 = await secondKey(t);
    const other = await createTenant(tdb.db);
    await known(other.apiKey);
    const job = await insertImageJob(tdb.db, t);
    const otherJob = await insertImageJob(tdb.db, other);
    const held = [await openOk(t.apiKey, job.id), await openOk(t.apiKey, job.id), await openOk(key2, job.id)];
    const refused = await stream(key2, job.id);
    assert.equal(refused.status, 429);
    assert.equal(JSON.parse(refused.body).error.code, 'too_many_streams');
    assert.match(JSON.parse(refused.body).error.message, /per-workspace cap \(3\)/);
    const theirs = await openOk(other.apiKey, otherJob.id);
    for (const s of [...held, theirs]) s.close();
    await waitFor('every stream to end', () => streams().open() === 0);
  });

  test("revoking a key ends its open streams at once; the workspace's other key keeps its stream", async () => {
    const t = await createTenant(tdb.db);
    await known(t.apiKey);
    const key2 = await secondKey(t);
    const job = await insertImageJob(tdb.db, t);
    const revoked = [await openOk(t.apiKey, job.id), await openOk(t.apiKey, job.id)];
    const kept = await openOk(key2, job.id);
    await revokeApiKey(tdb.db, { workspaceId: t.workspaceId, keyId: t.apiKeyId, actorEmail: t.ownerEmail });
    for (const s of revoked) await s.waitForEnd(10_000);
    assert.equal(streams().open({ apiKeyId: t.apiKeyId }), 0);
    assert.equal(streams().open({ workspaceId: t.workspaceId }), 1);
    await progressRepo.setJobPhase(tdb.db, job.id, 'fetching_inputs', 1);
    await kept.waitForEvents(2);
    kept.close();
    await waitFor('every stream to end', () => streams().open() === 0);
  });
});

describe('key expiry', () => {
  test("a key's open stream ends when the key expires, and a reconnect is refused 401; a key without expiry keeps its stream", async () => {
    const t = await createTenant(tdb.db);
    await known(t.apiKey);
    const job = await insertImageJob(tdb.db, t);
    // A second key that expires in 5 s, set before the gateway first reads it.
    const k = await createApiKey(tdb.db, { workspaceId: t.workspaceId, name: 'expiring', actorEmail: t.ownerEmail });
    const expiresAt = Date.now() + 5_000;
    await tdb.db
      .updateTable('api_keys')
      .set({ expires_at: new Date(expiresAt) })
      .where('id', '=', k.id)
      .execute();
    await known(k.key);
    const expiring = await openOk(k.key, job.id);
    const kept = await openOk(t.apiKey, job.id);
    await expiring.waitForEnd(30_000);
    assert.ok(Date.now() >= expiresAt, 'not before its expiry');
    assert.equal(streams().open({ apiKeyId: k.id }), 0);
    const refused = await stream(k.key, job.id);
    assert.equal(refused.status, 401, refused.body);
    assert.match(JSON.parse(refused.body).error.message, /expired/);
    await progressRepo.setJobPhase(tdb.db, job.id, 'fetching_inputs', 1);
    await kept.waitForEvents(2);
    kept.close();
    await waitFor('every stream to end', () => streams().open() === 0);
  });
});

describe('backpressure', () => {
  test('a client that does not read is disconnected once its socket is full, not buffered for', async () => {
    const t = await createTenant(tdb.db);
    await known(t.apiKey);
    // The largest record an image job has: a prompt of 4,000 characters.
    const job = await insertImageJob(tdb.db, t, { prompt: 'x'.repeat(4_000) });
    // Generating, so each provider percent is a change the stream sends.
    await tdb.db.transaction().execute((tx) => jobMoves.claimJob(tx, job.id, 'run-1'));
    await progressRepo.setJobPhase(tdb.db, job.id, 'generating', 1);
    const url = new URL(gw.baseUrl);
    const socket = net.connect(Number(url.port), url.hostname);
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    let closedByServer = false;
    socket.on('close', () => (closedByServer = true));
    socket.on('error', () => undefined);
    socket.write(`GET /v1/images/${job.id}/events HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${t.apiKey}\r\nAccept: text/event-stream\r\n\r\n`);
    // Read nothing from here on.
    socket.pause();
    await waitFor('the stream to open', () => streams().open({ apiKeyId: t.apiKeyId }) === 1);
    const server = gw.app;
    let percent = 0;
    // Each change is one ~4 KB event; the socket buffers fill, then the gateway must let go.
    await waitFor(
      'the gateway to close the stream of a client that does not read',
      async () => {
        if (streams().open({ apiKeyId: t.apiKeyId }) === 0) return true;
        percent = (percent % 99) + 1;
        await progressRepo.recordPollProgress(tdb.db, job.id, { percent, queuePosition: null, attempt: 1 }, 0);
        return false;
      },
      120_000,
      1,
    );
    assert.equal(server.jobEvents.watchers(), 0, 'the job is no longer watched');
    // Reading what the kernel still holds reaches the gateway's end of the connection.
    socket.resume();
    await waitFor('the socket to be closed by the gateway', () => closedByServer, 10_000);
    socket.destroy();
  });
});

describe('connection ceiling', () => {
  test('past GATEWAY_MAX_CONNECTIONS sockets, a new connection is dropped unanswered; one freed, the next is served', async () => {
    // A gateway of its own, so no socket of another test counts.
    const small = await startInProcessGateway(tdb.db, tdb.url, { GATEWAY_MAX_CONNECTIONS: '5' });
    const url = new URL(small.baseUrl);
    const held: net.Socket[] = [];
    const connect = () =>
      new Promise<net.Socket>((resolve, reject) => {
        const s = net.connect(Number(url.port), url.hostname, () => resolve(s));
        s.once('error', reject);
      });
    /** One request on a fresh socket: the answer's first line, or '' when the socket is closed unanswered. */
    const probe = async () => {
      const s = await connect();
      return new Promise<string>((resolve) => {
        let data = '';
        s.on('data', (d) => (data += String(d)));
        s.once('close', () => resolve(data.split('\r\n')[0] ?? ''));
        s.on('error', () => undefined);
        s.write(`GET /healthz HTTP/1.1\r\nHost: ${url.host}\r\nConnection: close\r\n\r\n`);
      });
    };
    try {
      for (let i = 0; i < 5; i++) held.push(await connect());
      assert.equal(await probe(), '', 'the sixth connection is closed without an answer');
      held.pop()!.destroy();
      await waitFor('a freed socket to let the next client in', async () => (await probe()) === 'HTTP/1.1 200 OK', 10_000);
    } finally {
      for (const s of held) s.destroy();
      await small.close();
    }
  });
});
