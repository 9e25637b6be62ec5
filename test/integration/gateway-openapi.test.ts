// GET /v1/openapi.json: an OpenAPI 3.1 document, served without a key, that real answers of the
// live gateway validate against (JSON Schema 2020-12 via ajv).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, createTenant, type TestDatabase, type Tenant } from '../support/stack.js';
import { call, insertCatalog, spawnGateway, type Gateway } from './gateway-harness.js';
import { allOperations } from '../../api/openapi.js';
import { documentValidator } from '../support/openapi.js';

describe('gateway OpenAPI document', () => {
  let tdb: TestDatabase;
  let gw: Gateway;
  let small: Gateway;
  let t: Tenant;
  let doc: any;
  let assertMatchesDocument: ReturnType<typeof documentValidator>;

  before(async () => {
    tdb = await createTestDatabase();
    // Separate gateway processes, as deployed (and their Temporal calls end with them).
    [gw, small] = await Promise.all([spawnGateway(tdb.url), spawnGateway(tdb.url, { RATE_LIMIT_POLL_PER_MIN: '1' })]);
    t = await createTenant(tdb.db);
    await insertCatalog(tdb.db, 4);
    const res = await call(gw.baseUrl, 'GET', '/v1/openapi.json');
    assert.equal(res.status, 200, res.text);
    doc = res.body;
    assertMatchesDocument = documentValidator(doc);
  });

  after(async () => {
    await small?.close();
    await gw?.close();
    await tdb?.drop();
  });

  test('is an OpenAPI 3.1 document served without a key, with bearer security', () => {
    assert.equal(doc.openapi, '3.1.0');
    assert.equal(doc.info.version, '1.0.0');
    assert.deepEqual(doc.components.securitySchemes.bearerAuth, {
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'mg_live_<key id>_<secret>',
      description: 'Workspace API key',
    });
    // The key scope an operation needs is its security requirement's role (OpenAPI 3.1 allows roles for any scheme).
    assert.deepEqual(doc.paths['/v1/actors'].get.security, [{ bearerAuth: ['read'] }]);
    assert.deepEqual(doc.paths['/healthz'].get.security, []);
  });

  test('covers every operation of every router, with its errors', () => {
    const ops = allOperations();
    for (const op of ops) {
      const template = op.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
      const described = doc.paths[template]?.[op.method];
      assert.ok(described, `${op.method} ${template}`);
      for (const status of op.errors) assert.ok(described.responses[String(status)], `${op.method} ${template} lists ${status}`);
      if (op.rateClass) {
        for (const status of ['200', '401', '429']) assert.ok(described.responses[status], `${op.method} ${template} lists ${status}`);
        assert.ok(described.responses['429'].headers['Retry-After']);
      }
    }
    for (const path of ['/v1/projects', '/v1/actors', '/v1/voices', '/healthz', '/readyz', '/v1/openapi.json']) assert.ok(doc.paths[path], path);
    assert.equal(doc.paths['/metrics'], undefined, '/metrics is not on the API port');
    const actorParams = doc.paths['/v1/actors'].get.parameters.map((p: { name: string }) => p.name).sort();
    assert.deepEqual(actorParams, ['age', 'cursor', 'gender', 'is_pro', 'limit', 'skin_tone']);
  });

  test('describes the error body, retry_after_ms on 429 and status on 409', () => {
    assert.ok(doc.components.schemas.Error.properties.error.properties.code.enum.includes('rate_limited'));
    const rate = JSON.stringify(doc.components.schemas.RateLimitError);
    assert.match(rate, /"required":\["retry_after_ms"\]/);
    const conflict = JSON.stringify(doc.components.schemas.ConflictError);
    assert.match(conflict, /not_ready/);
    assert.match(conflict, /"required":\["status"\]/);
  });

  test('live discovery answers validate against it', async () => {
    for (const path of ['/v1/projects', '/v1/actors', '/v1/voices']) {
      const res = await call(gw.baseUrl, 'GET', `${path}?limit=2`, { key: t.apiKey });
      assert.equal(res.status, 200);
      assert.ok(res.body.data.length > 0);
      assertMatchesDocument('get', path, res);
    }
    const filtered = await call(gw.baseUrl, 'GET', '/v1/actors?gender=female&is_pro=true', { key: t.apiKey });
    assertMatchesDocument('get', '/v1/actors', filtered);
  });

  test('live error answers validate against it: 400, 401, 404, 429', async () => {
    assertMatchesDocument('get', '/v1/actors', await call(gw.baseUrl, 'GET', '/v1/actors?gender=robot', { key: t.apiKey }));
    assertMatchesDocument('get', '/v1/voices', await call(gw.baseUrl, 'GET', '/v1/voices'));
    assertMatchesDocument('get', '/v1/projects', await call(gw.baseUrl, 'GET', '/v1/projects', { authorization: 'Bearer nope' }));
    const other = await createTenant(tdb.db);
    assert.equal((await call(small.baseUrl, 'GET', '/v1/voices', { key: other.apiKey })).status, 200);
    const limited = await call(small.baseUrl, 'GET', '/v1/voices', { key: other.apiKey });
    assert.equal(limited.status, 429);
    assertMatchesDocument('get', '/v1/voices', limited);
    if (doc.paths['/v1/images/{id}']?.get) {
      const missing = await call(gw.baseUrl, 'GET', '/v1/images/img_doesnotexist', { key: t.apiKey });
      assertMatchesDocument('get', '/v1/images/{id}', missing);
    }
  });

  test('live health answers validate against it', async () => {
    assertMatchesDocument('get', '/healthz', await call(gw.baseUrl, 'GET', '/healthz'));
    assertMatchesDocument('get', '/readyz', await call(gw.baseUrl, 'GET', '/readyz'));
    assertMatchesDocument('get', '/v1/openapi.json', await call(gw.baseUrl, 'GET', '/v1/openapi.json'));
  });

  test('live image job answers validate against it (create, status, url not ready)', async (ctx) => {
    if (!doc.paths['/v1/images/generate']?.post) return ctx.skip('image routes not present');
    const body = JSON.stringify({ project_id: t.projectId, prompt: 'a red square', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });
    const created = await call(gw.baseUrl, 'POST', '/v1/images/generate', { key: t.apiKey, body, contentType: 'application/json' });
    assert.equal(created.status, 200, created.text);
    assertMatchesDocument('post', '/v1/images/generate', created);
    const bad = await call(gw.baseUrl, 'POST', '/v1/images/generate', {
      key: t.apiKey,
      body: JSON.stringify({ ...JSON.parse(body), model: 'dall-e-1' }),
      contentType: 'application/json',
    });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'invalid_model');
    assertMatchesDocument('post', '/v1/images/generate', bad);
    const forbidden = await call(gw.baseUrl, 'POST', '/v1/images/generate', {
      key: (await createTenant(tdb.db)).apiKey,
      body,
      contentType: 'application/json',
    });
    assert.equal(forbidden.status, 403, forbidden.text);
    assertMatchesDocument('post', '/v1/images/generate', forbidden);
    if (created.status !== 200) return;
    const id = created.body.data.id as string;
    assertMatchesDocument('get', '/v1/images/{id}', await call(gw.baseUrl, 'GET', `/v1/images/${id}`, { key: t.apiKey }));
    const url = await call(gw.baseUrl, 'GET', `/v1/images/${id}/url`, { key: t.apiKey });
    if (url.status === 409) assert.equal(typeof url.body.status, 'string');
    assertMatchesDocument('get', '/v1/images/{id}/url', url);
  });
});
