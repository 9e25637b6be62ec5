// Malformed input, unknown routes and wrong methods get clean 4xx answers in the error shape;
// health endpoints live outside /v1 and need no key.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, createTenant, type TestDatabase, type Tenant } from '../support/stack.js';
import { call, spawnGateway, startInProcessGateway, type Gateway, type HttpAnswer } from './gateway-harness.js';

function assertCleanError(res: HttpAnswer, status: number, code: string) {
  assert.equal(res.status, status, res.text);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  assert.deepEqual(Object.keys(res.body.error).sort(), ['code', 'message']);
  assert.equal(res.body.error.code, code);
  assert.doesNotMatch(res.text, /node_modules|\bat .+:\d+:\d+|Error:/, 'no stack trace');
}

describe('gateway error answers', () => {
  let tdb: TestDatabase;
  let gw: Gateway;
  let t: Tenant;

  before(async () => {
    tdb = await createTestDatabase();
    gw = await startInProcessGateway(tdb.db, tdb.url, { RATE_LIMIT_GENERATE_PER_MIN: '1000' });
    t = await createTenant(tdb.db);
  });

  after(async () => {
    await gw?.close();
    await tdb?.drop();
  });

  const jsonRoutes = ['/v1/images/generate', '/v1/upload-from-url'];

  for (const path of jsonRoutes) {
    test(`POST ${path}: malformed JSON → 400 invalid_request`, async () => {
      const res = await call(gw.baseUrl, 'POST', path, { key: t.apiKey, body: '{"project_id": ', contentType: 'application/json' });
      assertCleanError(res, 400, 'invalid_request');
    });

    test(`POST ${path}: wrong or missing content type → 400 invalid_request`, async () => {
      const body = JSON.stringify({ project_id: t.projectId });
      assertCleanError(await call(gw.baseUrl, 'POST', path, { key: t.apiKey, body, contentType: 'text/plain' }), 400, 'invalid_request');
      assertCleanError(await call(gw.baseUrl, 'POST', path, { key: t.apiKey, body, contentType: 'application/x-www-form-urlencoded' }), 400, 'invalid_request');
      assertCleanError(await call(gw.baseUrl, 'POST', path, { key: t.apiKey, body }), 400, 'invalid_request');
    });

    test(`POST ${path}: a JSON array or scalar instead of an object → 400 invalid_request`, async () => {
      for (const body of ['[]', '42', 'null', '"text"']) {
        assertCleanError(await call(gw.baseUrl, 'POST', path, { key: t.apiKey, body, contentType: 'application/json' }), 400, 'invalid_request');
      }
    });

    test(`POST ${path}: a body over 1 MB → 413 payload_too_large`, async () => {
      const body = JSON.stringify({ project_id: t.projectId, prompt: 'x'.repeat(1_100_000) });
      assertCleanError(await call(gw.baseUrl, 'POST', path, { key: t.apiKey, body, contentType: 'application/json' }), 413, 'payload_too_large');
    });
  }

  test('an empty JSON object on a generation route → 400 naming the missing fields', async () => {
    const res = await call(gw.baseUrl, 'POST', '/v1/images/generate', { key: t.apiKey, body: '{}', contentType: 'application/json' });
    assertCleanError(res, 400, 'invalid_request');
    assert.match(res.body.error.message, /project_id|prompt|model/);
  });

  test('unknown routes → 404 not_found, under /v1 and outside it', async () => {
    assertCleanError(await call(gw.baseUrl, 'GET', '/v1/nothing-here', { key: t.apiKey }), 404, 'not_found');
    assertCleanError(await call(gw.baseUrl, 'POST', '/v1/actors/extra/segments', { key: t.apiKey }), 404, 'not_found');
    assertCleanError(await call(gw.baseUrl, 'GET', '/nothing-here'), 404, 'not_found');
    assertCleanError(await call(gw.baseUrl, 'GET', '/v2/actors'), 404, 'not_found');
  });

  test('wrong methods → clean 4xx', async () => {
    assertCleanError(await call(gw.baseUrl, 'DELETE', '/v1/projects', { key: t.apiKey }), 405, 'method_not_allowed');
    assertCleanError(await call(gw.baseUrl, 'PATCH', '/v1/voices', { key: t.apiKey }), 405, 'method_not_allowed');
    const getGenerate = await call(gw.baseUrl, 'GET', '/v1/images/generate', { key: t.apiKey });
    assert.ok(getGenerate.status >= 400 && getGenerate.status < 500, getGenerate.text);
    assert.equal(typeof getGenerate.body.error.code, 'string');
    // Every endpoint of ours answers a wrong method with 405 and the methods it does take.
    const putStatus = await call(gw.baseUrl, 'PUT', '/v1/images/abc', { key: t.apiKey });
    assertCleanError(putStatus, 405, 'method_not_allowed');
    assert.equal(putStatus.headers.get('allow'), 'GET, HEAD, DELETE');
    const getUpload = await call(gw.baseUrl, 'GET', '/v1/upload', { key: t.apiKey });
    assertCleanError(getUpload, 405, 'method_not_allowed');
    assert.equal(getUpload.headers.get('allow'), 'POST');
  });

  test('OPTIONS answers 204 with exactly the methods of the path, without a key', async () => {
    // /v1/images/generate also matches the pattern /v1/images/:id (GET): it must not be advertised.
    for (const [path, allow] of [
      ['/v1/images/generate', 'POST'],
      ['/v1/talking-actors/generate', 'POST'],
      ['/v1/images/img_x', 'GET, HEAD, DELETE'],
      ['/v1/images/img_x/cancel', 'POST'],
      ['/v1/uploads', 'POST'],
      ['/v1/uploads/upl_x', 'GET, HEAD, DELETE'],
      ['/v1/projects', 'GET, HEAD'],
    ]) {
      const res = await call(gw.baseUrl, 'OPTIONS', path!);
      assert.equal(res.status, 204, `${path}: ${res.text}`);
      assert.equal(res.headers.get('allow'), allow, path);
    }
  });

  test('NUL in a JSON string, a path or a query string → 400 invalid_request, never a 500', async () => {
    const body = JSON.stringify({ project_id: t.projectId, prompt: 'a\u0000b', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });
    const created = await call(gw.baseUrl, 'POST', '/v1/images/generate', { key: t.apiKey, body, contentType: 'application/json' });
    assertCleanError(created, 400, 'invalid_request');
    assert.match(created.body.error.message, /^prompt: .*NUL/);
    assertCleanError(await call(gw.baseUrl, 'GET', '/v1/images/img%00x', { key: t.apiKey }), 400, 'invalid_request');
    assertCleanError(await call(gw.baseUrl, 'GET', '/v1/uploads/x?live=%00', { key: t.apiKey }), 400, 'invalid_request');
  });

  test('every answer carries a distinct X-Request-Id', async () => {
    const a = await call(gw.baseUrl, 'GET', '/v1/actors', { key: t.apiKey });
    const b = await call(gw.baseUrl, 'GET', '/nothing-here');
    const ida = a.headers.get('x-request-id');
    const idb = b.headers.get('x-request-id');
    assert.ok(ida && idb && ida !== idb);
  });

  test('/healthz and /readyz answer without a key, outside /v1; /metrics is not on the API port', async () => {
    const health = await call(gw.baseUrl, 'GET', '/healthz');
    assert.equal(health.status, 200);
    assert.deepEqual(health.body, { status: 'ok' });
    const ready = await call(gw.baseUrl, 'GET', '/readyz');
    assert.equal(ready.status, 200, ready.text);
    assert.equal(ready.body.status, 'ready');
    assert.deepEqual(Object.keys(ready.body.checks).sort(), ['postgres', 'storage', 'temporal']);
    const metrics = await call(gw.baseUrl, 'GET', '/metrics');
    assert.equal(metrics.status, 404, 'metrics have their own port (API_METRICS_PORT)');
    assert.equal(metrics.body.error.code, 'not_found');
    // Under /v1 everything is authenticated, health included.
    assert.equal((await call(gw.baseUrl, 'GET', '/v1/healthz')).status, 401);
  });

  test('/readyz answers 503 naming the part that is down', async () => {
    // A separate process: its in-flight Temporal probe is simply dropped when it exits.
    const broken = await spawnGateway(tdb.url, { TEMPORAL_ADDRESS: '127.0.0.1:1' });
    try {
      const res = await call(broken.baseUrl, 'GET', '/readyz');
      assert.equal(res.status, 503);
      assert.equal(res.body.status, 'not_ready');
      assert.equal(res.body.checks.temporal, 'unavailable');
      assert.equal(res.body.checks.postgres, 'ok');
    } finally {
      await broken.close();
    }
  });
});
