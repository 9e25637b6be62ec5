// GET /v1/{kind}/{id}/events over HTTP on the real stack: a job's changes arrive as server-sent
// `status` events in order and the stream ends after the terminal one; Last-Event-ID resumes
// without replaying; auth and scoping are the status endpoint's; a quiet stream gets heartbeats;
// the gateway's LISTEN connection comes back after it is killed and the stream still gets every
// change. Jobs are held at startGenerating (a real activity interceptor) where a test needs a
// job that stays pending until it says so.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createTenant, createTestDatabase, testConfig, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, startGateway, startWorkers, type InProcessGateway as Gateway, type Workers } from '../support/services.js';
import { Holds } from '../support/holds.js';
import { openEventStream, type SseEvent, type SseStream } from '../support/sse.js';
import { JOB_EVENTS_LISTENER_NAME } from '../../api/job-events.js';

let tdb: TestDatabase;
let gw: Gateway;
let workers: Workers;
let t: Tenant;
let other: Tenant;
let config: ReturnType<typeof testConfig>;
const holds = new Holds();
const HEARTBEAT_MS = 200;

before(async () => {
  tdb = await createTestDatabase();
  config = testConfig(tdb.url, {
    // Long enough for the provider to report percents, which are all written.
    LOCAL_RENDER_LATENCY_MS: '5000',
    PROGRESS_WRITE_INTERVAL_MS: '0',
    LOCAL_RENDER_FAULTS: 'true',
    SSE_HEARTBEAT_MS: String(HEARTBEAT_MS),
    RATE_LIMIT_POLL_PER_MIN: '100000',
    RATE_LIMIT_GENERATE_PER_MIN: '1000',
  });
  gw = await startGateway(config, tdb.db);
  workers = await startWorkers(config, tdb.db, 'all', { activityInterceptors: [holds.activityInterceptor] });
  [t, other] = [await createTenant(tdb.db, 1000), await createTenant(tdb.db, 1000)];
});

after(async () => {
  await workers?.stop();
  await gw?.close();
  await tdb?.drop();
});

const record = (e: SseEvent) => JSON.parse(e.data) as Record<string, any>;
const auth = (tenant: Tenant, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${tenant.apiKey}`, ...extra });

async function createImage(tenant: Tenant, prompt: string): Promise<string> {
  const r = await api(gw.baseUrl, tenant.apiKey).post('/v1/images/generate', {
    project_id: tenant.projectId,
    prompt,
    model: 'nano-banana-2',
    aspect_ratio: '1:1',
    count: 1,
  });
  assert.equal(r.status, 200, r.text);
  return r.body.data.id as string;
}

/** A job held pending (its workflow waits before startGenerating) and a function that lets it run. */
async function heldJob(tenant: Tenant, prompt: string): Promise<{ id: string; release(): void }> {
  const hold = holds.activity('startGenerating', 'before');
  const id = await createImage(tenant, prompt);
  assert.equal(await hold.reached, id);
  return { id, release: hold.release };
}

async function stream(tenant: Tenant, id: string, headers: Record<string, string> = {}): Promise<SseStream> {
  const s = await openEventStream(gw.baseUrl, `/v1/images/${id}/events`, auth(tenant, headers));
  assert.equal(s.status, 200);
  return s;
}

describe('job event stream', () => {
  test('an SSE client sees pending → generating (with progress) → completed in order, each the GET record, and the stream closes', async () => {
    const job = await heldJob(t, 'a live fox');
    const s = await stream(t, job.id);
    assert.match(String(s.headers['content-type']), /^text\/event-stream/);
    const [first] = await s.waitForEvents(1);
    assert.equal(first!.event, 'status');
    // The record the status endpoint answers, but for the place in the workspace's share: the
    // status endpoint counts it when asked, an event carries what the row holds (the provider's
    // own position once it reports one).
    const polled = await api(gw.baseUrl, t.apiKey).get(`/v1/images/${job.id}`);
    assert.equal(polled.body.data.progress.queue_position, 1);
    assert.equal(record(first!).progress.queue_position, null);
    const withoutPosition = (r: Record<string, any>) => ({ ...r, progress: { ...r.progress, queue_position: undefined } });
    assert.deepEqual(withoutPosition(record(first!)), withoutPosition(polled.body.data));
    assert.equal(record(first!).status, 'pending');
    assert.equal(record(first!).progress.phase, 'queued');

    job.release();
    const events = await s.waitForEnd();
    const records = events.map(record);
    const statuses = records.map((r) => r.status).filter((st, i, all) => st !== all[i - 1]);
    assert.deepEqual(statuses, ['pending', 'generating', 'completed']);
    assert.ok(
      records.some((r) => r.status === 'generating' && r.progress.phase === 'generating' && typeof r.progress.percent === 'number'),
      `a generating event carries the provider's percent: ${JSON.stringify(records.map((r) => r.progress))}`,
    );
    const ids = events.map((e) => Number(e.id));
    assert.ok(
      ids.every((id, i) => Number.isInteger(id) && (i === 0 || id > ids[i - 1]!)),
      `ids grow: ${ids.join(', ')}`,
    );
    const last = records.at(-1)!;
    assert.equal(last.status, 'completed');
    assert.equal(last.progress, undefined);
    assert.deepEqual(last, (await api(gw.baseUrl, t.apiKey).get(`/v1/images/${job.id}`)).body.data);
  });

  test('a reconnect with Last-Event-ID does not replay what the client already had', async () => {
    const job = await heldJob(t, 'resume me');
    const s1 = await stream(t, job.id);
    const [pending] = await s1.waitForEvents(1);
    s1.close();

    // Nothing changed since that id: no event, only heartbeats, until the job moves.
    const s2 = await stream(t, job.id, { 'last-event-id': pending!.id! });
    await s2.waitForComments(1);
    assert.equal(s2.events.length, 0, 'the event the client had is not sent again');
    job.release();
    const resumed = (await s2.waitForEnd()).map(record);
    assert.ok(resumed.length >= 2);
    assert.ok(
      resumed.every((r) => r.status !== 'pending'),
      'nothing before the reconnect is replayed',
    );
    assert.equal(resumed.at(-1)!.status, 'completed');
    const lastId = s2.events.at(-1)!.id!;

    // Terminal and already seen: the stream ends at once, empty.
    const s3 = await stream(t, job.id, { 'last-event-id': lastId });
    assert.deepEqual(await s3.waitForEnd(), []);
    // From an older id: only the current record, then the end.
    const s4 = await stream(t, job.id, { 'last-event-id': s2.events[0]!.id! });
    const latest = await s4.waitForEnd();
    assert.equal(latest.length, 1);
    assert.equal(latest[0]!.id, lastId);
    assert.equal(record(latest[0]!).status, 'completed');
  });

  test('a quiet stream gets a `: ping` comment every SSE_HEARTBEAT_MS', async () => {
    const job = await heldJob(t, 'quiet');
    const s = await stream(t, job.id);
    await s.waitForEvents(1);
    const pings = await s.waitForComments(2);
    assert.deepEqual(pings, ['ping', 'ping']);
    assert.equal(s.events.length, 1, 'heartbeats are comments, not events');
    job.release();
    await s.waitForEnd();
  });

  test('a failed job ends the stream with the failed record', async () => {
    const id = await createImage(t, 'doomed [fail:terminal]');
    const s = await stream(t, id);
    const records = (await s.waitForEnd()).map(record);
    const last = records.at(-1)!;
    assert.equal(last.status, 'failed');
    assert.equal(last.error.code, 'generation_failed');
    assert.ok(records.slice(0, -1).every((r) => r.status === 'pending' || r.status === 'generating'));
    assert.deepEqual(last, (await api(gw.baseUrl, t.apiKey).get(`/v1/images/${id}`)).body.data);
  });

  test("401 without a key, 404 for another workspace's job, an unknown id or another kind, 400 for a malformed Last-Event-ID", async () => {
    const job = await heldJob(t, 'private');
    const noKey = await api(gw.baseUrl).get(`/v1/images/${job.id}/events`);
    assert.equal(noKey.status, 401);
    assert.equal(noKey.body.error.code, 'unauthorized');
    for (const path of [`/v1/images/${job.id}/events`, '/v1/images/img_unknown/events']) {
      const r = await api(gw.baseUrl, other.apiKey).get(path);
      assert.equal(r.status, 404, path);
      assert.equal(r.body.error.code, 'not_found');
    }
    const wrongKind = await api(gw.baseUrl, t.apiKey).get(`/v1/videos/${job.id}/events`);
    assert.equal(wrongKind.status, 404);
    const bad = await api(gw.baseUrl, t.apiKey).call('GET', `/v1/images/${job.id}/events`, undefined, { 'last-event-id': 'abc' });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'invalid_request');
    job.release();
    await stream(t, job.id).then((s) => s.waitForEnd());
  });

  test('at shutdown a gateway ends its open streams with a reconnect hint, and clients resume on another gateway', async () => {
    const job = await heldJob(t, 'a kite, the gateway redeployed');
    const leaving = await startGateway(config, tdb.db);
    let stopped = false;
    try {
      const s = await openEventStream(leaving.baseUrl, `/v1/images/${job.id}/events`, auth(t));
      assert.equal(s.status, 200);
      const [first] = await s.waitForEvents(1);
      const stopping = leaving.service.stop({ graceMs: 5000 }).then(() => (stopped = true));
      await s.waitForEnd();
      assert.ok(
        s.comments.some((c) => /shutting down; reconnect with Last-Event-ID/.test(c)),
        JSON.stringify(s.comments),
      );
      await stopping;
      // The client comes back on the other gateway from where it was.
      const again = await openEventStream(gw.baseUrl, `/v1/images/${job.id}/events`, auth(t, { 'last-event-id': first!.id! }));
      job.release();
      const records = (await again.waitForEnd()).map(record);
      assert.equal(records.at(-1)!.status, 'completed');
    } finally {
      job.release();
      if (!stopped) await leaving.close().catch(() => undefined);
    }
  });

  test('when its LISTEN connection is killed the gateway reconnects, and open streams still get every change', async () => {
    const job = await heldJob(t, 'listener lost');
    const s = await stream(t, job.id);
    await s.waitForEvents(1);
    const listenerPids = async () =>
      (
        await sql<{
          pid: number;
        }>`select pid from pg_stat_activity where application_name = ${JOB_EVENTS_LISTENER_NAME} and datname = current_database()`.execute(tdb.db)
      ).rows.map((r) => r.pid);
    const [old] = await waitFor('the listener', async () => ((await listenerPids()).length === 1 ? await listenerPids() : undefined));
    await sql`select pg_terminate_backend(${old})`.execute(tdb.db);
    // Changed while the listener is (most likely) still reconnecting: only the re-read after
    // reconnecting can tell the stream.
    await sql`update jobs set phase = 'fetching_inputs' where id = ${job.id}`.execute(tdb.db);
    const fresh = await waitFor('a new listener', async () => {
      const pids = await listenerPids();
      return pids.length === 1 && pids[0] !== old ? pids[0] : undefined;
    });
    assert.notEqual(fresh, old);
    const [, moved] = await s.waitForEvents(2);
    assert.equal(record(moved!).progress.phase, 'fetching_inputs');
    job.release();
    const records = (await s.waitForEnd()).map(record);
    assert.equal(records.at(-1)!.status, 'completed');
  });
});
