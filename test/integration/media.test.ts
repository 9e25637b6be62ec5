// GET /media/uploads/...: ranges are read from the store as ranges (evidence: the bytes the store
// handed over), uploads are Cache-Control: private, and each client address has a request limit.
// The upload has its record (the route serves an upload only while its record is live).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Readable, Transform } from 'node:stream';
import type { Server } from 'node:http';
import { createStorage, type Storage } from '../../shared/storage.js';
import { MB } from '../../shared/media/type.js';
import { randomToken } from '../../shared/ids.js';
import { serveMediaRoute } from './gateway-harness.js';
import { createClientLimiter, mediaPath } from '../../api/routes/media.js';
import { createTenant, createTestDatabase, requireStackEnv, testConfig, type TestDatabase } from '../support/stack.js';
import { insertUploadRow } from '../support/fixtures.js';

const MEDIA_LIMIT = 8;

describe('GET /media/uploads', () => {
  let server: Server;
  let base: string;
  let storage: Storage;
  let tdb: TestDatabase;
  /** Bytes the store has streamed to the route so far. */
  let bytesFromStore = 0;
  const uploadId = `upl_${randomToken(10)}`;
  let key: string;
  const size = 50 * MB;

  const counted = (stream: Readable): Readable =>
    stream.pipe(
      new Transform({
        transform(chunk: Buffer, _enc, cb) {
          bytesFromStore += chunk.length;
          cb(null, chunk);
        },
      }),
    );

  before(async () => {
    requireStackEnv();
    tdb = await createTestDatabase();
    const tenant = await createTenant(tdb.db);
    key = `uploads/${tenant.workspaceId}/${uploadId}/big.mp4`;
    const config = testConfig(tdb.url, { MEDIA_RATE_LIMIT_PER_MIN: String(MEDIA_LIMIT) });
    const real = createStorage(config);
    storage = {
      ...real,
      bucket: real.bucket,
      getStream: async (k) => counted(await real.getStream(k)),
      getRange: async (k, offset, length) => counted(await real.getRange(k, offset, length)),
    };
    // 50 MB, with a recognisable last byte.
    const body = Buffer.alloc(size);
    body[size - 1] = 0x7a;
    await real.putStream(key, Readable.from([body]), 'video/mp4');
    await insertUploadRow(tdb.db, tenant, { id: uploadId, key, type: 'video', size });
    ({ server, base } = await serveMediaRoute(storage, config, tdb.db));
  });

  after(async () => {
    server?.closeAllConnections();
    server?.close();
    if (key) await storage?.remove(key).catch(() => undefined);
    await tdb?.drop();
  });

  test('Range: bytes=0-0 on a 50 MB upload answers one byte and reads one byte from the store', async () => {
    const before = bytesFromStore;
    const res = await fetch(`${base}${mediaPath(key)}`, { headers: { Range: 'bytes=0-0' } });
    assert.equal(res.status, 206);
    assert.equal(res.headers.get('content-range'), `bytes 0-0/${size}`);
    assert.equal(res.headers.get('content-length'), '1');
    assert.equal(Buffer.from(await res.arrayBuffer()).length, 1);
    assert.equal(bytesFromStore - before, 1);
  });

  test('a suffix range reads only the suffix', async () => {
    const before = bytesFromStore;
    const res = await fetch(`${base}${mediaPath(key)}`, { headers: { Range: 'bytes=-2' } });
    assert.equal(res.status, 206);
    assert.deepEqual([...Buffer.from(await res.arrayBuffer())], [0, 0x7a]);
    assert.equal(bytesFromStore - before, 2);
  });

  test('uploads are Cache-Control: private', async () => {
    const res = await fetch(`${base}${mediaPath(key)}`, { method: 'HEAD' });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('cache-control') ?? '', /^private\b/);
  });

  test('each client address gets a limited number of requests per minute, then 429 rate_limited', async () => {
    let refused: Response | undefined;
    for (let i = 0; i <= MEDIA_LIMIT + 1 && !refused; i++) {
      const res = await fetch(`${base}${mediaPath(key)}`, { method: 'HEAD' });
      if (res.status === 429) refused = res;
      else assert.equal(res.status, 200);
    }
    assert.ok(refused, 'a request past the limit is refused');
    assert.ok(Number(refused.headers.get('retry-after')) >= 1);
    assert.equal(refused.headers.get('ratelimit-limit'), String(MEDIA_LIMIT));
    const get = await fetch(`${base}${mediaPath(key)}`, { headers: { Range: 'bytes=0-0' } });
    assert.equal(get.status, 429);
    const body = (await get.json()) as { error: { code: string }; retry_after_ms: number };
    assert.equal(body.error.code, 'rate_limited');
    assert.ok(body.retry_after_ms >= 1);
  });
});

describe('createClientLimiter', () => {
  test('counts per client, refuses past the limit and opens a new window after it ends', () => {
    let now = 0;
    const limiter = createClientLimiter(2, 60_000, () => now);
    assert.equal(limiter.take('a').allowed, true);
    assert.equal(limiter.take('a').allowed, true);
    const third = limiter.take('a');
    assert.equal(third.allowed, false);
    assert.equal(third.resetMs, 60_000);
    assert.equal(limiter.take('b').allowed, true, 'another client has its own window');
    now = 60_000;
    assert.equal(limiter.take('a').allowed, true);
  });
});
