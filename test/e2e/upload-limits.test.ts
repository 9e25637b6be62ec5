// Multipart upload limits on the real stack (Postgres, MinIO), over HTTP to real gateways:
// - one API key runs at most UPLOAD_MAX_CONCURRENT_PER_KEY uploads at once: the next answers 429
//   rate_limited with retry_after_ms, while another key uploads fine, and a freed slot is usable;
//   the slots are the fleet's (rows in Postgres): ones another gateway holds count here too;
// - an upload trickled below UPLOAD_MIN_BYTES_PER_SEC is cut with 408 request_timeout and leaves no
//   object, no incomplete storage upload and no row; an upload at a normal pace is not cut.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createTenant, createTestDatabase, testConfig, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { startGateway, type InProcessGateway } from '../support/services.js';
import { openUpload, storedUploadsOf } from '../support/upload-requests.js';
import { renderImagePng } from '../../activities/providers/local/png.js';
import type { Config } from '../../shared/config.js';

const MAX_PER_KEY = 2;
const MIN_BYTES_PER_SEC = 4_096;
const RATE_WINDOW_MS = 1_000;

describe('multipart upload limits', () => {
  let tdb: TestDatabase;
  let concurrencyConfig: Config;
  let rateConfig: Config;
  let capped: InProcessGateway;
  let paced: InProcessGateway;
  let a: Tenant;
  let b: Tenant;
  let png: Buffer;

  before(async () => {
    tdb = await createTestDatabase();
    const common = { RATE_LIMIT_GENERATE_PER_MIN: '10000' };
    concurrencyConfig = testConfig(tdb.url, { ...common, UPLOAD_MAX_CONCURRENT_PER_KEY: String(MAX_PER_KEY), UPLOAD_MIN_BYTES_PER_SEC: '0' });
    rateConfig = testConfig(tdb.url, { ...common, UPLOAD_MIN_BYTES_PER_SEC: String(MIN_BYTES_PER_SEC), UPLOAD_RATE_WINDOW_MS: String(RATE_WINDOW_MS) });
    capped = await startGateway(concurrencyConfig, tdb.db);
    paced = await startGateway(rateConfig, tdb.db);
    a = await createTenant(tdb.db);
    b = await createTenant(tdb.db);
    png = await renderImagePng('upload limits', 256, 256);
  });

  after(async () => {
    await capped?.close();
    await paced?.close();
    await tdb?.drop();
  });

  const upload = async (gw: InProcessGateway, t: Tenant) => {
    const u = openUpload(gw.baseUrl, t.apiKey, t.projectId, { fileName: 'picture.png', mime: 'image/png' });
    u.finish(png);
    return u.answer;
  };

  test(`a key's upload beyond ${MAX_PER_KEY} at once answers 429 with retry_after_ms; another key uploads meanwhile; a freed slot is usable`, async (ctx) => {
    // Two uploads of key A, held open after the first bytes of the file. The held uploads take their
    // slots once authenticated, so a third sent meanwhile may take one first and a held one be refused:
    // then the attempt starts over, until both held uploads hold their slots and a third is refused.
    type Answer = Awaited<ReturnType<typeof upload>>;
    let held: ReturnType<typeof openUpload>[] = [];
    let refused: Answer | undefined;
    for (let attempt = 1; !refused; attempt++) {
      assert.ok(attempt <= 5, 'the held uploads never both held their slots');
      held = [0, 1].map(() => openUpload(capped.baseUrl, a.apiKey, a.projectId, { fileName: 'picture.png', mime: 'image/png' }));
      const answered = held.map(() => false);
      held.forEach(
        (h, i) =>
          void h.answer.then(
            () => (answered[i] = true),
            () => (answered[i] = true),
          ),
      );
      for (const h of held) h.write(png.subarray(0, 64));
      const outcome = await waitFor(
        "key A's third upload to be refused, or a held one answered",
        async () => {
          if (answered.some(Boolean)) return 'retry' as const;
          const r = await upload(capped, a);
          return r.status === 429 ? r : undefined;
        },
        10_000,
        50,
      );
      if (outcome === 'retry') {
        for (const h of held) h.destroy();
        // Their slots are freed when their connections close: wait until a plain upload passes.
        await waitFor('the slots to be free', async () => (await upload(capped, a)).status === 200);
      } else {
        refused = outcome;
        ctx.diagnostic(`both held uploads held their slots on attempt ${attempt}`);
      }
    }
    try {
      assert.equal(refused.body.error.code, 'rate_limited');
      assert.match(refused.body.error.message, new RegExp(`at most ${MAX_PER_KEY} uploads`));
      assert.ok(Number.isInteger(refused.body.retry_after_ms) && refused.body.retry_after_ms > 0, JSON.stringify(refused.body));
      assert.equal(refused.headers['retry-after'], String(Math.ceil(refused.body.retry_after_ms / 1000)));

      const other = await upload(capped, b);
      assert.equal(other.status, 200, JSON.stringify(other.body));

      // The held ones complete normally...
      for (const h of held) h.finish(png.subarray(64));
      for (const h of held) assert.equal((await h.answer).status, 200);
    } finally {
      for (const h of held) h.destroy();
    }
    // ...and their slots are free again.
    const again = await upload(capped, a);
    assert.equal(again.status, 200, JSON.stringify(again.body));
  });

  test("the cap is the fleet's: slots another gateway holds (rows in Postgres) refuse this gateway's upload; a freed or expired one is taken", async () => {
    const fleet = await createTenant(tdb.db);
    // Another gateway's two uploads of this key, streaming now.
    await sql`insert into upload_slots (api_key_id, slot, holder, expires_at)
      select ${fleet.apiKeyId}, s, 'another-gateway', now() + interval '1 minute' from generate_series(0, ${MAX_PER_KEY - 1}::int) s`.execute(tdb.db);
    const refused = await upload(capped, fleet);
    assert.equal(refused.status, 429, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, 'rate_limited');
    // One finished there; the other's gateway died (its lease ran out).
    await sql`delete from upload_slots where api_key_id = ${fleet.apiKeyId} and slot = 0`.execute(tdb.db);
    await sql`update upload_slots set expires_at = now() - interval '1 second' where api_key_id = ${fleet.apiKeyId}`.execute(tdb.db);
    const first = await upload(capped, fleet);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    await waitFor('the finished upload to free its slot', async () => {
      const r = await sql<{
        n: number;
      }>`select count(*)::int as n from upload_slots where api_key_id = ${fleet.apiKeyId} and holder <> 'another-gateway'`.execute(tdb.db);
      return r.rows[0]!.n === 0;
    });
  });

  test(`an upload trickled below ${MIN_BYTES_PER_SEC} bytes/s is cut with 408 and leaves nothing behind; one at a normal pace is not`, async () => {
    const slow = await createTenant(tdb.db);
    const u = openUpload(paced.baseUrl, slow.apiKey, slow.projectId, { fileName: 'picture.png', mime: 'image/png' });
    const started = performance.now();
    let sent = 0;
    // 100 bytes every 100 ms: about 1 KB/s, a quarter of the minimum.
    const trickle = setInterval(() => {
      if (sent + 100 >= png.length) return;
      u.write(png.subarray(sent, sent + 100));
      sent += 100;
    }, 100);
    let answer;
    try {
      answer = await u.answer;
    } finally {
      clearInterval(trickle);
      u.destroy();
    }
    const ms = performance.now() - started;
    console.log(
      `[upload-limits] trickled upload cut after ${ms.toFixed(0)} ms, ${sent} bytes of the file sent: ${answer.status} ${JSON.stringify(answer.body)}`,
    );
    assert.equal(answer.status, 408, JSON.stringify(answer.body));
    assert.equal(answer.body.error.code, 'request_timeout');
    assert.match(answer.body.error.message, new RegExp(`${MIN_BYTES_PER_SEC} bytes/s`));
    assert.ok(sent < png.length, 'cut before the file was complete');
    // Storage and the database were cleaned before the answer; the aborted storage upload may take a moment.
    await waitFor(
      'nothing stored for the cut upload',
      async () => {
        const s = await storedUploadsOf(rateConfig, tdb.db, slow.workspaceId);
        return s.objects.length === 0 && s.incomplete.length === 0 && s.rows === 0 ? s : undefined;
      },
      10_000,
    );

    const normal = await upload(paced, slow);
    assert.equal(normal.status, 200, JSON.stringify(normal.body));
  });
});
