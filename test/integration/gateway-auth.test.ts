// Authentication and workspace scoping over HTTP against a real gateway on the real stack.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, createTenant, insertImageJob, type TestDatabase, type Tenant } from '../support/stack.js';
import { generateApiKey } from '../../db/api-keys.js';
import { createProject, revokeApiKey } from '../../db/repos/workspaces.js';
import { call, startInProcessGateway, type Gateway } from './gateway-harness.js';

describe('gateway authentication', () => {
  let tdb: TestDatabase;
  let gw: Gateway;
  let a: Tenant;
  let b: Tenant;
  let revoked: Tenant;

  before(async () => {
    tdb = await createTestDatabase();
    gw = await startInProcessGateway(tdb.db, tdb.url);
    a = await createTenant(tdb.db);
    b = await createTenant(tdb.db);
    revoked = await createTenant(tdb.db);
    await revokeApiKey(tdb.db, { workspaceId: revoked.workspaceId, keyId: revoked.apiKeyId, actorEmail: revoked.ownerEmail });
  });

  after(async () => {
    await gw?.close();
    await tdb?.drop();
  });

  const routes = [
    { name: 'discovery', method: 'GET', path: '/v1/actors' },
    { name: 'status', method: 'GET', path: '/v1/images/img_doesnotexist' },
    { name: 'generation', method: 'POST', path: '/v1/images/generate' },
    { name: 'unknown route', method: 'GET', path: '/v1/no-such-route' },
  ];

  const failures: Array<{ name: string; authorization: () => string | undefined }> = [
    { name: 'missing header', authorization: () => undefined },
    { name: 'empty header', authorization: () => '' },
    { name: 'wrong scheme (Basic)', authorization: () => `Basic ${Buffer.from('user:pass').toString('base64')}` },
    { name: 'wrong scheme (Token)', authorization: () => `Token ${a.apiKey}` },
    { name: 'bearer without a key', authorization: () => 'Bearer' },
    { name: 'malformed key', authorization: () => 'Bearer not-a-key' },
    { name: 'truncated key', authorization: () => `Bearer ${a.apiKey.slice(0, -1)}` },
    { name: 'unknown key', authorization: () => `Bearer ${generateApiKey().key}` },
    { name: 'known key id with a wrong secret', authorization: () => `Bearer mg_live_${a.apiKeyId}_${generateApiKey().secret}` },
    { name: 'revoked key', authorization: () => `Bearer ${revoked.apiKey}` },
  ];

  for (const route of routes) {
    for (const failure of failures) {
      test(`${route.name} route (${route.method} ${route.path}): ${failure.name} → 401 unauthorized`, async () => {
        const authorization = failure.authorization();
        const res = await call(gw.baseUrl, route.method, route.path, {
          ...(authorization === undefined ? {} : { authorization }),
          ...(route.method === 'POST' ? { body: '{}', contentType: 'application/json' } : {}),
        });
        assert.equal(res.status, 401, res.text);
        assert.equal(res.body.error.code, 'unauthorized');
        assert.equal(typeof res.body.error.message, 'string');
        assert.ok(res.headers.get('x-request-id'), 'every answer carries a request id');
        // The presented key never comes back.
        if (authorization) assert.ok(!res.text.includes(authorization.replace(/^\S+\s*/, '') || '\u0000'), 'the key is not echoed');
      });
    }
  }

  test('a valid key reaches the routes; an unknown /v1 route is then 404 not_found', async () => {
    const ok = await call(gw.baseUrl, 'GET', '/v1/actors', { key: a.apiKey });
    assert.equal(ok.status, 200, ok.text);
    const missing = await call(gw.baseUrl, 'GET', '/v1/no-such-route', { key: a.apiKey });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.code, 'not_found');
  });

  test('the scheme name is case-insensitive (RFC 9110)', async () => {
    const res = await call(gw.baseUrl, 'GET', '/v1/voices', { authorization: `bearer ${a.apiKey}` });
    assert.equal(res.status, 200, res.text);
  });

  test('a key revoked after use fails on the very next request', async () => {
    const t = await createTenant(tdb.db);
    assert.equal((await call(gw.baseUrl, 'GET', '/v1/projects', { key: t.apiKey })).status, 200);
    assert.equal((await call(gw.baseUrl, 'GET', '/v1/actors', { key: t.apiKey })).status, 200);
    await revokeApiKey(tdb.db, { workspaceId: t.workspaceId, keyId: t.apiKeyId, actorEmail: t.ownerEmail });
    for (const path of ['/v1/projects', '/v1/actors', '/v1/voices']) {
      const res = await call(gw.baseUrl, 'GET', path, { key: t.apiKey });
      assert.equal(res.status, 401, `${path}: ${res.text}`);
      assert.equal(res.body.error.code, 'unauthorized');
    }
  });

  test('a key revoked after use fails the very next status poll, whose own statement reads the revocation', async () => {
    const t = await createTenant(tdb.db);
    const job = await insertImageJob(tdb.db, t);
    const poll = (path: string) => call(gw.baseUrl, 'GET', path, { key: t.apiKey });
    // Cached now: the next polls are answered without the key listener's sync round trip.
    assert.equal((await poll(`/v1/images/${job.id}`)).status, 200);
    assert.equal((await poll('/v1/images/img_doesnotexist')).status, 404);
    await revokeApiKey(tdb.db, { workspaceId: t.workspaceId, keyId: t.apiKeyId, actorEmail: t.ownerEmail });
    for (const path of [`/v1/images/${job.id}`, '/v1/images/img_doesnotexist', `/v1/videos/${job.id}`]) {
      const res = await poll(path);
      assert.equal(res.status, 401, `${path}: ${res.text}`);
      assert.equal(res.body.error.code, 'unauthorized');
    }
  });

  test("projects are scoped to the key's workspace", async () => {
    const extraA = await createProject(tdb.db, a.workspaceId, 'Second A project');
    const listA = await call(gw.baseUrl, 'GET', '/v1/projects', { key: a.apiKey });
    assert.equal(listA.status, 200);
    assert.deepEqual(
      listA.body.data.map((p: { id: string }) => p.id),
      [a.projectId, extraA.id],
    );
    assert.ok(listA.body.data.every((p: { workspace_id: string }) => p.workspace_id === a.workspaceId));
    const listB = await call(gw.baseUrl, 'GET', '/v1/projects', { key: b.apiKey });
    assert.deepEqual(
      listB.body.data.map((p: { id: string }) => p.id),
      [b.projectId],
    );
  });

  test("a cursor from another workspace's listing never reveals its projects", async () => {
    for (let i = 0; i < 3; i++) await createProject(tdb.db, b.workspaceId, `B ${i}`);
    const pageB = await call(gw.baseUrl, 'GET', '/v1/projects?limit=1', { key: b.apiKey });
    assert.ok(pageB.body.next_cursor);
    const withForeignCursor = await call(gw.baseUrl, 'GET', `/v1/projects?cursor=${pageB.body.next_cursor}`, { key: a.apiKey });
    assert.equal(withForeignCursor.status, 200);
    assert.ok(withForeignCursor.body.data.every((p: { workspace_id: string }) => p.workspace_id === a.workspaceId));
  });

  test('last_used_at is not written per request but recorded by the batched flush', async () => {
    const t = await createTenant(tdb.db);
    const own = await startInProcessGateway(tdb.db, tdb.url);
    try {
      for (let i = 0; i < 3; i++) assert.equal((await call(own.baseUrl, 'GET', '/v1/voices', { key: t.apiKey })).status, 200);
      const before = await tdb.db.selectFrom('api_keys').select('last_used_at').where('id', '=', t.apiKeyId).executeTakeFirstOrThrow();
      assert.equal(before.last_used_at, null, 'no write on the request path');
    } finally {
      await own.close(); // flushes pending last-use times
    }
    const afterClose = await tdb.db.selectFrom('api_keys').select('last_used_at').where('id', '=', t.apiKeyId).executeTakeFirstOrThrow();
    assert.ok(afterClose.last_used_at instanceof Date);
    assert.ok(Date.now() - afterClose.last_used_at.getTime() < 60_000);
  });
});
