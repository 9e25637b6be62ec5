// The event stream's costs and lifecycle, on the real Postgres with the gateway over HTTP and the
// job rows moved by the repository functions the activities use (no workers needed):
//   - opening a stream is one request of the polling class, however many events it then carries;
//   - many streams on one job cost one row read per change, not one per stream;
//   - every kind streams the record its status endpoint answers; a Last-Event-ID the job never
//     reached gets the current record; a client that leaves is let go;
//   - a gateway asked to stop ends its open streams instead of waiting on them, and refuses new
//     ones with 503;
//   - its refusals (400, 401, 404, 429) match the OpenAPI document.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, createTestDatabase, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { call, spawnGateway, startInProcessGateway, type Gateway } from './gateway-harness.js';
import { openEventStream, type SseStream } from '../support/sse.js';
import { documentValidator } from '../support/openapi.js';
import type { App } from '../../api/app.js';
import { newId } from '../../shared/ids.js';
import * as jobsRepo from '../../db/repos/jobs.js';
// The job service's status moves, in a transaction of the test's own.
import * as jobMoves from '../../jobs/index.js';
import * as progressRepo from '../../db/repos/job-progress.js';
import type { JobKind } from '../../db/schema.js';

let tdb: TestDatabase;
let tight: Gateway & { app: App };
let roomy: Gateway & { app: App };

before(async () => {
  tdb = await createTestDatabase();
  // Two polls a minute: every lease is then a single token, so the count is exact.
  tight = await startInProcessGateway(tdb.db, tdb.url, { RATE_LIMIT_POLL_PER_MIN: '2', SSE_HEARTBEAT_MS: '60000' });
  roomy = await startInProcessGateway(tdb.db, tdb.url, { RATE_LIMIT_POLL_PER_MIN: '100000', SSE_HEARTBEAT_MS: '60000' });
});

after(async () => {
  await tight?.close();
  await roomy?.close();
  await tdb?.drop();
});

async function insertJob(owner: Tenant, kind: JobKind, model: string, params: Record<string, unknown>): Promise<string> {
  const id = newId(kind.slice(0, 3));
  await tdb.db.transaction().execute((tx) =>
    jobsRepo.insertJobWithCharge(tx, {
      id,
      kind,
      workspaceId: owner.workspaceId,
      projectId: owner.projectId,
      apiKeyId: owner.apiKeyId,
      model,
      params: { ...params, provider: 'local' },
      price: 4,
    }),
  );
  return id;
}

const insertImageJob = (owner: Tenant) => insertJob(owner, 'image', 'nano-banana-2', { prompt: 'streamed', aspect_ratio: '1:1', count: 1 });

/**
 * Waits until the gateway knows the key (its creation's NOTIFY reached the key listener,
 * api/auth.ts), probing an unknown route: 401 before, 404 after, and no rate-limit token spent.
 */
async function known(base: string, owner: Tenant): Promise<void> {
  await waitFor('the new key to be known', async () => (await call(base, 'GET', '/v1/no-such-route', { key: owner.apiKey })).status === 404);
}

async function open(base: string, owner: Tenant, id: string, kindBase = '/v1/images'): Promise<SseStream> {
  await known(base, owner);
  const s = await openEventStream(base, `${kindBase}/${id}/events`, { authorization: `Bearer ${owner.apiKey}` });
  assert.equal(s.status, 200, s.body);
  return s;
}

const phases = (s: SseStream) => s.events.map((e) => JSON.parse(e.data).progress?.phase ?? JSON.parse(e.data).status);

describe('event stream costs and lifecycle', () => {
  test('opening a stream counts once in the polling rate class, however many events it carries', async () => {
    const owner = await createTenant(tdb.db, 100);
    const id = await insertImageJob(owner);
    const s = await open(tight.baseUrl, owner, id);
    await s.waitForEvents(1);
    // One change at a time (a burst of changes may reach a stream as its latest state only).
    await progressRepo.setJobPhase(tdb.db, id, 'fetching_inputs', 1);
    await s.waitForEvents(2);
    await tdb.db.transaction().execute((tx) => jobMoves.claimJob(tx, id, 'run-1'));
    await s.waitForEvents(3);
    await progressRepo.setJobPhase(tdb.db, id, 'generating', 1);
    await s.waitForEvents(4);
    await progressRepo.recordPollProgress(tdb.db, id, { percent: 40, queuePosition: null, attempt: 1 }, 0);
    const events = await s.waitForEvents(5);
    assert.deepEqual(phases(s), ['queued', 'fetching_inputs', 'fetching_inputs', 'generating', 'generating']);
    assert.equal(JSON.parse(events[2]!.data).status, 'generating');
    assert.equal(JSON.parse(events[4]!.data).progress.percent, 40);
    // A stream with five events spent one of the two polls: one more request passes, then 429.
    assert.equal((await call(tight.baseUrl, 'GET', `/v1/images/${id}`, { key: owner.apiKey })).status, 200);
    const refused = await call(tight.baseUrl, 'GET', `/v1/images/${id}/events`, { key: owner.apiKey });
    assert.equal(refused.status, 429);
    assert.equal(refused.body.error.code, 'rate_limited');
    s.close();
  });

  test('twenty streams on one job cost one row read per change, and every stream gets every change', async () => {
    const owner = await createTenant(tdb.db, 100);
    const id = await insertImageJob(owner);
    const streams: SseStream[] = [];
    for (let i = 0; i < 20; i++) streams.push(await open(roomy.baseUrl, owner, id));
    await Promise.all(streams.map((s) => s.waitForEvents(1)));
    const hub = roomy.app.jobEvents;
    assert.equal(hub.watchers(), 20);
    // Reads made when the listener connected are counted by then.
    await waitFor('the listener', () => hub.listening());
    const before = hub.reads();
    await progressRepo.setJobPhase(tdb.db, id, 'fetching_inputs', 1);
    await Promise.all(streams.map((s) => s.waitForEvents(2)));
    await tdb.db.transaction().execute((tx) => jobMoves.claimJob(tx, id, 'run-1'));
    await Promise.all(streams.map((s) => s.waitForEvents(3)));
    await tdb.db
      .transaction()
      .execute((tx) => jobMoves.completeJob(tx, id, [{ key: `jobs/${id}/x/output-0.png`, content_type: 'image/png', size: 1 }], 'run-1'));
    await Promise.all(streams.map((s) => s.waitForEnd()));
    assert.equal(hub.reads() - before, 3, 'one read per change for all twenty streams');
    for (const s of streams)
      assert.deepEqual(
        s.events.map((e) => JSON.parse(e.data).status),
        ['pending', 'pending', 'generating', 'completed'],
      );
    await waitFor('the streams to be let go', () => hub.watchers() === 0);
  });

  test('every kind streams its own record, the one its status endpoint answers', async () => {
    const owner = await createTenant(tdb.db, 100);
    const video = { prompt: 'clip', aspect_ratio: '16:9', duration: 4, resolution: '720p' };
    const cases: [string, string][] = [
      ['/v1/images', await insertImageJob(owner)],
      ['/v1/videos', await insertJob(owner, 'video', 'veo-3.1', video)],
      ['/v1/replace-actors/generations', await insertJob(owner, 'replace_actor', 'replace-actor', video)],
      ['/v1/talking-actors', await insertJob(owner, 'talking_actor', 'talking-actor', { actor_id: 'act_1', voice_id: 'voice_1', script: 'hello' })],
    ];
    for (const [base, id] of cases) {
      const s = await open(roomy.baseUrl, owner, id, base);
      const [first] = await s.waitForEvents(1);
      s.close();
      const polled = await call(roomy.baseUrl, 'GET', `${base}/${id}`, { key: owner.apiKey });
      assert.equal(polled.status, 200, polled.text);
      // The status endpoint also counts a waiting job's place in its workspace's share; an event
      // carries the stored position (docs/api/status-and-events.md).
      const withoutPosition = (r: Record<string, any>) => ({ ...r, progress: { ...r.progress, queue_position: undefined } });
      assert.deepEqual(withoutPosition(JSON.parse(first!.data)), withoutPosition(polled.body.data), base);
    }
  });

  test("a Last-Event-ID the job never reached (another job's) gets the current record at once", async () => {
    const owner = await createTenant(tdb.db, 100);
    const id = await insertImageJob(owner);
    await known(roomy.baseUrl, owner);
    const s = await openEventStream(roomy.baseUrl, `/v1/images/${id}/events`, { authorization: `Bearer ${owner.apiKey}`, 'last-event-id': '999' });
    assert.equal(s.status, 200);
    const [first] = await s.waitForEvents(1);
    assert.equal(first!.id, '1');
    assert.equal(JSON.parse(first!.data).status, 'pending');
    s.close();
  });

  test('a client that goes away is let go at once', async () => {
    const owner = await createTenant(tdb.db, 100);
    const id = await insertImageJob(owner);
    const hub = roomy.app.jobEvents;
    await waitFor('no streams from earlier tests', () => hub.watchers() === 0);
    const s = await open(roomy.baseUrl, owner, id);
    await s.waitForEvents(1);
    assert.equal(hub.watchers(), 1);
    s.close();
    await waitFor('the stream to be let go', () => hub.watchers() === 0);
  });

  test('refusals match the OpenAPI document: 400, 401, 404, 429', async () => {
    const doc = (await call(roomy.baseUrl, 'GET', '/v1/openapi.json')).body;
    const matches = documentValidator(doc);
    const template = '/v1/images/{id}/events';
    const op = doc.paths[template].get;
    assert.ok(op.responses['200'].content['text/event-stream']);
    assert.deepEqual(
      op.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`),
      ['path:id', 'header:Last-Event-ID'],
    );
    for (const status of ['401', '404', '429', '503']) assert.ok(op.responses[status], status);

    const owner = await createTenant(tdb.db, 100);
    const other = await createTenant(tdb.db, 100);
    const id = await insertImageJob(owner);
    matches('get', template, await call(roomy.baseUrl, 'GET', `/v1/images/${id}/events`));
    // The rate-limit budget is shared by every gateway: the tight one gets a key of its own.
    const third = await createTenant(tdb.db, 100);
    await Promise.all([known(roomy.baseUrl, owner), known(roomy.baseUrl, other), known(tight.baseUrl, third)]);
    const foreign = await call(roomy.baseUrl, 'GET', `/v1/images/${id}/events`, { key: other.apiKey });
    assert.equal(foreign.status, 404);
    matches('get', template, foreign);
    const unknown = await call(roomy.baseUrl, 'GET', '/v1/images/img_unknown/events', { key: owner.apiKey });
    assert.equal(unknown.status, 404);
    const bad = await fetch(`${roomy.baseUrl}/v1/images/${id}/events`, { headers: { authorization: `Bearer ${owner.apiKey}`, 'last-event-id': '-1' } });
    const badText = await bad.text();
    assert.equal(bad.status, 400);
    matches('get', template, { status: bad.status, headers: bad.headers, text: badText, body: JSON.parse(badText) });
    // Spend the tight gateway's two polls, then a refusal.
    for (let i = 0; i < 2; i++) assert.equal((await call(tight.baseUrl, 'GET', `/v1/images/${id}`, { key: third.apiKey })).status, 404);
    const limited = await call(tight.baseUrl, 'GET', `/v1/images/${id}/events`, { key: third.apiKey });
    assert.equal(limited.status, 429);
    matches('get', template, limited);
  });

  test('once the gateway has begun shutting down, a new stream is refused with 503 and Retry-After', async () => {
    const closing = await startInProcessGateway(tdb.db, tdb.url, { RATE_LIMIT_POLL_PER_MIN: '1000' });
    try {
      const owner = await createTenant(tdb.db, 100);
      const id = await insertImageJob(owner);
      const s = await open(closing.baseUrl, owner, id);
      await s.waitForEvents(1);
      await closing.app.closeStreams();
      await s.waitForEnd(5_000);
      const refused = await call(closing.baseUrl, 'GET', `/v1/images/${id}/events`, { key: owner.apiKey });
      assert.equal(refused.status, 503);
      assert.equal(refused.body.error.code, 'service_unavailable');
      assert.equal(refused.headers.get('retry-after'), '1');
    } finally {
      await closing.close();
    }
  });

  test('a gateway process told to stop ends its open streams instead of waiting on them', async () => {
    const gateway = await spawnGateway(tdb.url, { SSE_HEARTBEAT_MS: '60000', RATE_LIMIT_POLL_PER_MIN: '1000' });
    try {
      const owner = await createTenant(tdb.db, 100);
      const id = await insertImageJob(owner);
      const s = await open(gateway.baseUrl, owner, id);
      await s.waitForEvents(1);
      const exited = new Promise<number | null>((r) => gateway.child.once('exit', (code) => r(code)));
      gateway.child.kill('SIGTERM');
      // Well before the gateway's 10 s grace period would cut the connection itself.
      await s.waitForEnd(5_000);
      assert.equal(await exited, 0);
      assert.match(gateway.output(), /"msg":"stopped"/);
    } finally {
      await gateway.close();
    }
  });
});
