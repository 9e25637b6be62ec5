// Remote fetches against slow servers (loopback HTTPS only): a transfer below the minimum rate is
// cut, and one workspace cannot hold more than its share of a worker's fetch slots.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { fetchRemote, FetchError } from '../../shared/fetch-remote.js';
import { createWorkspaceFetchSlots, storeRemoteFile } from '../../activities/uploads.js';
import { createStorage } from '../../shared/storage.js';
import { MB } from '../../shared/media/type.js';
import { startHttpsTestServer, makeSampleMedia, type HttpsTestServer, type SampleMedia } from '../support/https-server.js';
import { testConfig, createTestDatabase, waitFor, type TestDatabase } from '../support/stack.js';
import { taskQueues } from '../../workflows/definitions.js';
import { parseRoles, roleName } from '../../worker/roles.js';

let remote: HttpsTestServer;
let media: SampleMedia;
/** Responses held open by /hold until the test lets them finish. */
const held: ServerResponse[] = [];

before(async () => {
  remote = await startHttpsTestServer();
  media = await makeSampleMedia();
  // 64 bytes every 50 ms (~1.3 KB/s), for as long as the client stays.
  remote.route('/trickle', (_q, r) => {
    r.writeHead(200, { 'content-type': 'application/octet-stream' });
    const t = setInterval(() => (r.destroyed ? clearInterval(t) : r.write(Buffer.alloc(64))), 50);
    r.on('close', () => clearInterval(t));
  });
  remote.route('/fast', (_q, r) => {
    r.writeHead(200, { 'content-type': 'application/octet-stream' });
    r.end(Buffer.alloc(2 * MB));
  });
  remote.route('/silent', () => undefined); // accepts, never answers
  remote.route('/hold', (_q, r) => {
    r.writeHead(200, { 'content-type': 'image/png' });
    r.write(media['image/png']);
    held.push(r);
  });
  remote.file('/image.png', media['image/png'], 'image/png');
});

after(async () => {
  for (const r of held) r.end();
  await remote?.close();
});

const base = () => ({ maxBytes: 10 * MB, connectTimeoutMs: 5_000, totalTimeoutMs: 60_000, allowLoopbackOrigin: remote.origin, ca: remote.ca });

async function drain(url: string, opts: Parameters<typeof fetchRemote>[1]): Promise<number> {
  const res = await fetchRemote(url, opts);
  let n = 0;
  for await (const chunk of res.stream) n += (chunk as Buffer).length;
  return n;
}

describe('minimum transfer rate', () => {
  test('a body trickling below the minimum rate is cut with a clear failure, long before the total timeout', async () => {
    await assert.rejects(
      drain(`${remote.origin}/trickle`, { ...base(), minBytesPerSecond: 8 * 1024, minRateWindowMs: 300 }),
      (err: unknown) => err instanceof FetchError && err.kind === 'failed' && /slower than 8192 bytes\/s over 300 ms/.test(err.message),
    );
  });

  test('a server that never answers is cut by the same rule (headers count)', async () => {
    await assert.rejects(
      fetchRemote(`${remote.origin}/silent`, { ...base(), minBytesPerSecond: 1024, minRateWindowMs: 300 }),
      (err: unknown) => err instanceof FetchError && /slower than/.test(err.message),
    );
  });

  test('a fast transfer passes under the same setting, and the check is off at 0', async () => {
    // A window long enough for a busy machine's TLS handshake; 2 MB arrive well within it.
    assert.equal(await drain(`${remote.origin}/fast`, { ...base(), minBytesPerSecond: 8 * 1024, minRateWindowMs: 2_000 }), 2 * MB);
    // 0 disables it: the trickle is then only bounded by the total timeout.
    await assert.rejects(drain(`${remote.origin}/trickle`, { ...base(), totalTimeoutMs: 600, minBytesPerSecond: 0 }), /longer than 600 ms/);
  });
});

describe('per-workspace fetch slots', () => {
  let tdb: TestDatabase;
  before(async () => {
    tdb = await createTestDatabase();
  });
  after(async () => {
    await tdb?.drop();
  });

  test("slots are counted per workspace across workers, given back on release (once), and a dead worker's slot frees when its lease runs out", async () => {
    // Two fetch workers of one fleet: each has its own slots object on the one database.
    const one = createWorkspaceFetchSlots(tdb.db, 2, 60_000);
    const two = createWorkspaceFetchSlots(tdb.db, 2, 60_000);
    const a1 = (await one.tryAcquire('ws_a'))!;
    const a2 = (await two.tryAcquire('ws_a'))!;
    assert.ok(a1 !== null && a2 !== null);
    assert.equal(await one.tryAcquire('ws_a'), null, 'the cap holds across the fleet');
    assert.equal(await two.tryAcquire('ws_a'), null);
    assert.ok(await two.tryAcquire('ws_b'), 'another workspace is not affected');
    await a1();
    await a1();
    const a3 = await two.tryAcquire('ws_a');
    assert.ok(a3, 'a released slot is free to any worker');
    assert.equal(await one.tryAcquire('ws_a'), null, 'a double release does not free two slots');
    // A worker killed mid-fetch never releases: its slot is taken over once its lease has run out.
    const dying = createWorkspaceFetchSlots(tdb.db, 1, 300);
    const successor = createWorkspaceFetchSlots(tdb.db, 1, 60_000);
    assert.ok(await dying.tryAcquire('ws_c'));
    assert.equal(await successor.tryAcquire('ws_c'), null, 'held while its lease runs');
    await waitFor("the dead holder's lease to run out", async () => (await successor.tryAcquire('ws_c')) !== null, 10_000, 20);
    await a2();
    await a3!();
  });

  test('a workspace at its cap gets a transient refusal while other workspaces fetch; the slot frees when its fetch ends', async () => {
    const config = testConfig(tdb.url, { FETCH_ALLOW_LOOPBACK_ORIGIN: remote.origin, FETCH_EXTRA_CA_FILE: remote.caFile });
    const deps = { storage: createStorage(config), config, fetchSlots: createWorkspaceFetchSlots(tdb.db, 1, 60_000) };
    const limits = { image: 10 * MB };
    const holding = storeRemoteFile(deps, `${remote.origin}/hold`, limits, () => 'tmp/fetch-limits/held.png', 'ws_busy');
    await waitFor('the held fetch to start', () => held.length === 1, 10_000, 20);
    await assert.rejects(
      storeRemoteFile(deps, `${remote.origin}/image.png`, limits, () => 'tmp/fetch-limits/refused.png', 'ws_busy'),
      (err: unknown) => err instanceof FetchError && err.kind === 'unavailable' && /too many remote fetches of this workspace/.test(err.message),
    );
    const other = await storeRemoteFile(deps, `${remote.origin}/image.png`, limits, () => 'tmp/fetch-limits/other.png', 'ws_other');
    assert.equal(other.type.mime, 'image/png');
    held[0]!.end();
    await holding;
    const again = await storeRemoteFile(deps, `${remote.origin}/image.png`, limits, () => 'tmp/fetch-limits/again.png', 'ws_busy');
    assert.equal(again.type.mime, 'image/png');
    for (const k of ['held', 'other', 'again']) await deps.storage.remove(`tmp/fetch-limits/${k}.png`);
  });
});

describe('the fetch task queue', () => {
  test('remote fetches have their own queue and worker role, part of "all"', () => {
    assert.equal(taskQueues('media').fetch, 'media-fetch');
    assert.deepEqual(parseRoles('fetch').map(roleName), ['fetch']);
    assert.ok(parseRoles('all').map(roleName).includes('fetch'));
  });
});
