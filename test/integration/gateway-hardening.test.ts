// Honest errors and headers: a database outage answers 503 service_unavailable with Retry-After on
// every authenticated operation (and /readyz names Postgres); an unexpected failure answers a
// clean 500; every answer carries nosniff and no-store; upload links come from PUBLIC_BASE_URL,
// never the Host header; metrics have their own port; presigned URLs are signed for the public
// endpoint and live 15 minutes by default.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { createTestDatabase, createTenant, testConfig, type TestDatabase, type Tenant } from '../support/stack.js';
import { call, startInProcessGateway, type Gateway } from './gateway-harness.js';
import { createDb, type Database } from '../../db/index.js';
import { allOperations } from '../../api/openapi.js';
import { documentValidator } from '../support/openapi.js';
import { serveApiMetrics } from '../../api/metrics.js';
import type { App } from '../../api/app.js';
import { createStorage } from '../../shared/storage.js';
import { renderImage } from '../../activities/providers/local/media.js';

/** A loopback port nothing listens on (bound, then closed): connections to it are refused. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

function assertOutage(res: { status: number; text: string; body: any; headers: Headers }, what: string) {
  assert.equal(res.status, 503, `${what}: ${res.text}`);
  assert.equal(res.body?.error?.code, 'service_unavailable', what);
  assert.ok(Number(res.headers.get('retry-after')) > 0, `${what}: Retry-After`);
  assert.doesNotMatch(res.text, /ECONNREFUSED|127\.0\.0\.1|postgres|\bat .+:\d+:\d+/i, `${what}: no internals`);
}

describe('Postgres unreachable', () => {
  let tdb: TestDatabase;
  let t: Tenant;
  let deadDb: Database;
  let gw: Gateway;

  before(async () => {
    tdb = await createTestDatabase();
    t = await createTenant(tdb.db); // a real key, which the gateway below cannot look up
    const dead = new URL(tdb.url);
    dead.port = String(await closedPort());
    deadDb = createDb(dead.toString(), 2);
    gw = await startInProcessGateway(deadDb, dead.toString());
  });

  after(async () => {
    await gw?.close();
    await deadDb?.destroy();
    await tdb?.drop();
  });

  test('every authenticated operation answers 503 service_unavailable with Retry-After, as documented', async () => {
    const doc = await call(gw.baseUrl, 'GET', '/v1/openapi.json');
    assert.equal(doc.status, 200, 'the document needs no database');
    const assertMatchesDocument = documentValidator(doc.body);
    const ops = allOperations().filter((op) => op.rateClass !== null);
    assert.ok(ops.length >= 15, `${ops.length} operations`);
    for (const op of ops) {
      const path = op.path.replace(/:(\w+)/g, 'x_$1');
      const body = op.method === 'post' ? '{}' : undefined;
      const res = await call(gw.baseUrl, op.method.toUpperCase(), path, { key: t.apiKey, body, contentType: body ? 'application/json' : undefined });
      assertOutage(res, `${op.method} ${path}`);
      assertMatchesDocument(op.method, op.path.replace(/:(\w+)/g, '{$1}'), res);
    }
  });

  test('/readyz says Postgres is the part that is down; /healthz still answers', async () => {
    const ready = await call(gw.baseUrl, 'GET', '/readyz');
    assert.equal(ready.status, 503);
    assert.deepEqual(ready.body, { status: 'not_ready', checks: { postgres: 'unavailable', temporal: 'ok', storage: 'ok' } });
    assert.equal((await call(gw.baseUrl, 'GET', '/healthz')).status, 200);
  });
});

describe('Temporal unreachable', () => {
  test('cancel answers 503 with Retry-After and leaves the job pending and charged (it cannot know whether a workflow runs)', async () => {
    const tdb = await createTestDatabase();
    const gw = await startInProcessGateway(tdb.db, tdb.url, { TEMPORAL_ADDRESS: `127.0.0.1:${await closedPort()}`, WORKFLOW_START_TIMEOUT_MS: '500' });
    try {
      const t = await createTenant(tdb.db, 100);
      const created = await call(gw.baseUrl, 'POST', '/v1/images/generate', {
        key: t.apiKey,
        body: JSON.stringify({ project_id: t.projectId, prompt: 'no temporal', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 }),
        contentType: 'application/json',
      });
      assert.equal(created.status, 200, created.text); // the reconciler starts it later
      const id = created.body.data.id as string;
      const canceled = await call(gw.baseUrl, 'POST', `/v1/images/${id}/cancel`, { key: t.apiKey });
      assertOutage(canceled, 'cancel');
      const row = await tdb.db.selectFrom('jobs').select(['status', 'workflow_started']).where('id', '=', id).executeTakeFirstOrThrow();
      assert.deepEqual(row, { status: 'pending', workflow_started: false });
      const ws = await tdb.db.selectFrom('workspaces').select('credits').where('id', '=', t.workspaceId).executeTakeFirstOrThrow();
      assert.equal(ws.credits, 96, 'still charged: the job will run once Temporal is back');
    } finally {
      await gw.close();
      await tdb.drop();
    }
  });
});

describe('answers and headers', () => {
  let tdb: TestDatabase;
  let t: Tenant;
  let gw: Gateway & { app: App };
  const publicBase = 'https://api.example.test';

  before(async () => {
    tdb = await createTestDatabase();
    t = await createTenant(tdb.db);
    gw = await startInProcessGateway(tdb.db, tdb.url, { PUBLIC_BASE_URL: publicBase });
  });

  after(async () => {
    await gw?.close();
    await tdb?.drop();
  });

  test('every answer carries X-Content-Type-Options: nosniff and Cache-Control: no-store', async () => {
    const answers = {
      '200 list': await call(gw.baseUrl, 'GET', '/v1/projects', { key: t.apiKey }),
      '401': await call(gw.baseUrl, 'GET', '/v1/projects'),
      '404 job': await call(gw.baseUrl, 'GET', '/v1/images/img_nope/url', { key: t.apiKey }),
      '404 route': await call(gw.baseUrl, 'GET', '/nowhere'),
      '400': await call(gw.baseUrl, 'POST', '/v1/images/generate', { key: t.apiKey, body: '{', contentType: 'application/json' }),
      healthz: await call(gw.baseUrl, 'GET', '/healthz'),
      openapi: await call(gw.baseUrl, 'GET', '/v1/openapi.json'),
    };
    for (const [what, res] of Object.entries(answers)) {
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff', what);
      assert.equal(res.headers.get('cache-control'), 'no-store', what);
    }
  });

  test('the upload path is built from PUBLIC_BASE_URL, never from the Host header', async () => {
    const png = await renderImage({ prompt: 'host header', width: 16, height: 16 });
    const tenant = await createTenant(tdb.db);
    const boundary = 'x-boundary-123';
    const body = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="project_id"\r\n\r\n${tenant.projectId}\r\n`),
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`),
      png,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const url = new URL(`${gw.baseUrl}/v1/upload`);
    const answer = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          headers: {
            host: 'evil.example',
            authorization: `Bearer ${tenant.apiKey}`,
            'content-type': `multipart/form-data; boundary=${boundary}`,
            'content-length': body.length,
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8').on('data', (d: string) => (text += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
    assert.equal(answer.status, 200, answer.text);
    const path = JSON.parse(answer.text).data.path as string;
    assert.ok(path.startsWith(`${publicBase}/media/`), path);
    assert.doesNotMatch(path, /evil\.example/);
  });

  test('/metrics is not served on the API port but on its own loopback port', async () => {
    const onApi = await call(gw.baseUrl, 'GET', '/metrics');
    assert.equal(onApi.status, 404);
    const server = await serveApiMetrics(gw.app.metrics, '127.0.0.1', 0);
    try {
      const { address, port } = server.address() as AddressInfo;
      assert.equal(address, '127.0.0.1');
      const res = await fetch(`http://127.0.0.1:${port}/metrics`);
      assert.equal(res.status, 200);
      assert.match(await res.text(), /^mediagen_http_requests_total\{/m);
      assert.equal((await fetch(`http://127.0.0.1:${port}/other`)).status, 404);
    } finally {
      server.close();
    }
  });

  test('an unexpected failure answers a clean 500 with a request id and nothing else', async () => {
    // A real fault: the table the route reads is gone (last test of this suite's database).
    await sql`drop table projects cascade`.execute(tdb.db);
    const res = await call(gw.baseUrl, 'GET', '/v1/projects', { key: t.apiKey });
    assert.equal(res.status, 500, res.text);
    assert.deepEqual(Object.keys(res.body), ['error']);
    assert.equal(res.body.error.code, 'internal_error');
    const requestId = res.headers.get('x-request-id');
    assert.ok(requestId);
    assert.equal(res.body.error.message, `internal error (request id ${requestId})`);
    assert.doesNotMatch(res.text, /relation|projects|select|does not exist|\bat .+:\d+:\d+/i);
    assert.equal(res.headers.get('cache-control'), 'no-store');
  });
});

describe('presigned URLs', () => {
  test('are signed for S3_PRESIGN_ENDPOINT when set, and live 15 minutes by default', async () => {
    const base = testConfig('postgres://unused@127.0.0.1:1/unused');
    assert.equal(base.PRESIGN_EXPIRY_SECONDS, 900);
    const internal = new URL(await createStorage(base).url('jobs/j/t/output-0.png'));
    assert.equal(internal.host, new URL(base.S3_ENDPOINT).host);
    assert.equal(internal.searchParams.get('X-Amz-Expires'), '900');

    const pub = testConfig('postgres://unused@127.0.0.1:1/unused', { S3_PRESIGN_ENDPOINT: 'https://media.example.test' });
    const signed = new URL(await createStorage(pub).url('jobs/j/t/output-0.png'));
    assert.equal(signed.origin, 'https://media.example.test');
    assert.equal(signed.pathname, `/${pub.S3_BUCKET}/jobs/j/t/output-0.png`);
    assert.equal(signed.searchParams.get('X-Amz-Expires'), '900');
    assert.ok(signed.searchParams.get('X-Amz-Signature'));
  });
});
