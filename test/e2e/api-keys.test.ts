// Scoped API keys on the real stack, over HTTP (docs/api/api-keys.md): a key limited to `read` is
// refused (403 key_scope_denied) by every create endpoint the served document lists and answered by
// every read; a key limited to one model is refused another at create and in the dry run; an expired
// key answers 401 and one used from outside its allowed_ips 403 (loopback only); a member key
// cannot mint, and a key cannot mint more than it has; a revocation by DELETE holds at once on a
// second gateway; every act is audited; bad input is a 4xx.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { MediaGenClient, MediaGenError } from '@mediagen/client';
import { createGateway, type Gateway } from '../../api/gateway.js';
import { createTenant, createTestDatabase, testConfig, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, assertApiError } from '../support/services.js';
import { imageBody } from '../support/job-helpers.js';
import { addMember, createApiKey } from '../../db/repos/workspaces.js';

let tdb: TestDatabase;
let gw: Gateway;
let gw2: Gateway;
let t: Tenant;

before(async () => {
  tdb = await createTestDatabase();
  const config = testConfig(tdb.url, { RATE_LIMIT_GENERATE_PER_MIN: '10000', RATE_LIMIT_POLL_PER_MIN: '100000' });
  gw = createGateway({ ...config, HOST: '127.0.0.1', PORT: 0 }, { db: tdb.db, processExtras: false });
  await gw.start();
  gw2 = createGateway({ ...config, HOST: '127.0.0.1', PORT: 0 }, { db: tdb.db, processExtras: false });
  await gw2.start();
  t = await createTenant(tdb.db, 1000);
});

after(async () => {
  await gw2?.stop({ graceMs: 0 });
  await gw?.stop({ graceMs: 0 });
  await tdb?.drop();
});

/** Mints a key with the tenant's full owner key (or `by`): its answer's data. */
async function mint(body: Record<string, unknown>, by = t.apiKey) {
  const r = await api(gw.baseUrl, by).post('/v1/api-keys', { name: 'scoped', ...body });
  assert.equal(r.status, 200, r.text);
  return r.body.data as { id: string; key: string; scopes: string[]; allowed_models: string[] | null; budgets: Array<{ limit: number; scope_id: string }> };
}

const del = (key: string, id: string, base = gw.baseUrl) => api(base, key).call('DELETE', `/v1/api-keys/${id}`);

function assertScopeDenied(r: { status: number; body: any; text: string }, rule: string, what: string) {
  assert.equal(r.status, 403, `${what}: ${r.text}`);
  assert.equal(r.body.error.code, 'key_scope_denied', `${what}: ${r.text}`);
  assert.equal(r.body.rule, rule, `${what}: ${r.text}`);
}

interface DocOperation {
  'x-scope'?: string;
  security?: unknown;
}

/** The served document's operations: method, path (parameters as written) and scope. */
async function servedOperations() {
  const r = await fetch(`${gw.baseUrl}/v1/openapi.json`);
  const doc = (await r.json()) as { paths: Record<string, Record<string, DocOperation>> };
  const ops: Array<{ method: string; path: string; scope: string | undefined }> = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) if (['get', 'post', 'put', 'delete'].includes(method)) ops.push({ method, path, scope: op['x-scope'] });
  }
  return ops;
}

describe('scopes', () => {
  test('a key limited to read is refused by every create endpoint of the served document and answered by every read', async () => {
    const reader = await mint({ scopes: ['read'] });
    assert.deepEqual(reader.scopes, ['read']);
    const ops = await servedOperations();
    const writes = ops.filter((o) => o.scope !== undefined && o.scope !== 'read');
    const reads = ops.filter((o) => o.scope === 'read');
    assert.ok(writes.length >= 12 && reads.length >= 20, `the document lists the operations (${writes.length} writes, ${reads.length} reads)`);
    for (const op of writes) {
      const path = op.path.replace(/\{\w+\}/g, 'x_unknown');
      const r = await api(gw.baseUrl, reader.key).call(op.method.toUpperCase(), path, op.method === 'get' ? undefined : {});
      assertScopeDenied(r, op.scope!, `${op.method.toUpperCase()} ${op.path}`);
      assert.match(r.body.error.message, new RegExp(`lacks the ${op.scope} scope`));
    }
    // Reads without a path parameter answer 200; those naming a resource get past the scope to their own 404.
    const streams = new Set(['/v1/events']);
    for (const op of reads) {
      const ctl = new AbortController();
      const path = op.path.replace(/\{\w+\}/g, 'x_unknown');
      const res = await fetch(`${gw.baseUrl}${path}`, { headers: { authorization: `Bearer ${reader.key}` }, signal: ctl.signal });
      const text = streams.has(op.path) || res.headers.get('content-type')?.includes('event-stream') ? '' : await res.text();
      ctl.abort();
      if (op.path.includes('{')) assert.equal(res.status, 404, `GET ${op.path}: ${text}`);
      else assert.equal(res.status, 200, `GET ${op.path}: ${text}`);
    }
  });

  test('a key with every scope but admin may not manage keys; a key cannot mint one with more than it has', async () => {
    const worker = await mint({ scopes: ['read', 'generate', 'uploads'] });
    assertScopeDenied(await api(gw.baseUrl, worker.key).post('/v1/api-keys', { name: 'x', scopes: ['read'] }), 'admin', 'POST by a key without admin');
    assertScopeDenied(await api(gw.baseUrl, worker.key).get('/v1/api-keys'), 'admin', 'GET by a key without admin');
    const admin = await mint({ scopes: ['read', 'admin'], allowed_kinds: ['image'] });
    const more = await api(gw.baseUrl, admin.key).post('/v1/api-keys', { name: 'x', scopes: ['read', 'generate'] });
    assertScopeDenied(more, 'generate', 'a scope the minting key lacks');
    assertScopeDenied(
      await api(gw.baseUrl, admin.key).post('/v1/api-keys', { name: 'x', scopes: ['read'], allowed_kinds: ['video'] }),
      'allowed_kinds',
      'a wider kind',
    );
    const child = await mint({ scopes: ['read'] }, admin.key);
    const listed = await api(gw.baseUrl, t.apiKey).get('/v1/api-keys');
    const row = listed.body.data.find((k: { id: string }) => k.id === child.id);
    assert.deepEqual(row.allowed_kinds, ['image'], 'a rule left out is inherited');
    assert.equal(row.key, undefined, 'the list never shows a secret');
    assert.ok(
      listed.body.data.every((k: Record<string, unknown>) => !JSON.stringify(k).includes('mg_live_')),
      'no secret in the list',
    );
  });

  test('a member key cannot mint a key, an owner key or an admin one', async () => {
    const memberEmail = `member-${t.workspaceId}@example.test`;
    await addMember(tdb.db, t.workspaceId, memberEmail, 'owner');
    const memberKey = await createApiKey(tdb.db, { workspaceId: t.workspaceId, name: 'member', actorEmail: memberEmail });
    // Demoted before the key's first use: the gateway sees a member's key (full scopes, as a key from before scopes).
    await addMember(tdb.db, t.workspaceId, memberEmail, 'member');
    for (const scopes of [['admin'], ['read']]) {
      assertApiError(await api(gw.baseUrl, memberKey.key).post('/v1/api-keys', { name: 'escalate', scopes }), 403, 'owner_key_required');
    }
    assertApiError(await api(gw.baseUrl, memberKey.key).get('/v1/api-keys'), 403, 'owner_key_required');
    assertApiError(await del(memberKey.key, t.apiKeyId), 403, 'owner_key_required');
    const minted = await tdb.db.selectFrom('api_keys').select('id').where('created_by', '=', memberEmail).execute();
    assert.deepEqual(
      minted.map((k) => k.id),
      [memberKey.id],
      'nothing was minted for the member',
    );
    // Existing keys keep working: the member key creates and reads as before.
    assert.equal((await api(gw.baseUrl, memberKey.key).post('/v1/images/generate?dry_run=true', imageBody(t, 'member'))).status, 200);
  });
});

describe('rules', () => {
  test('a key limited to one model is refused another at create and in the dry run', async () => {
    const k = await mint({ scopes: ['read', 'generate'], allowed_models: ['nano-banana-2'] });
    const other = { ...imageBody(t, 'other model'), model: 'gpt-image-1.5' };
    const before = await tdb.db
      .selectFrom('jobs')
      .select(sql<number>`count(*)::int`.as('n'))
      .where('workspace_id', '=', t.workspaceId)
      .executeTakeFirstOrThrow();
    assertScopeDenied(await api(gw.baseUrl, k.key).post('/v1/images/generate', other), 'allowed_models', 'create');
    const dry = await api(gw.baseUrl, k.key).post('/v1/images/generate?dry_run=true', other);
    assertScopeDenied(dry, 'allowed_models', 'dry run');
    assert.match(dry.body.error.message, /may not use model gpt-image-1\.5: its allowed_models are nano-banana-2/);
    const ok = await api(gw.baseUrl, k.key).post('/v1/images/generate?dry_run=true', imageBody(t, 'allowed'));
    assert.equal(ok.status, 200, ok.text);
    const after = await tdb.db
      .selectFrom('jobs')
      .select(sql<number>`count(*)::int`.as('n'))
      .where('workspace_id', '=', t.workspaceId)
      .executeTakeFirstOrThrow();
    assert.equal(after.n, before.n, 'nothing was created');
  });

  test("a key limited to images is refused a batch whose pipeline item has a video step, naming the step's kind", async () => {
    const k = await mint({ scopes: ['read', 'generate'], allowed_kinds: ['image'] });
    const still = { id: 'still', kind: 'image', body: { prompt: 'a still', model: 'nano-banana-2', aspect_ratio: '16:9', count: 1 } };
    const clip = {
      id: 'clip',
      kind: 'video',
      body: { prompt: 'a pan', model: 'seedance-1.5', resolution: '480p', duration: 4, start_frame_file_id: { from: 'still', output: 0 } },
    };
    const batch = (steps: unknown[]) => ({ project_id: t.projectId, items: [{ custom_id: 'promo', kind: 'pipeline', body: { steps } }] });
    for (const path of ['/v1/batches', '/v1/batches?dry_run=true']) {
      const r = await api(gw.baseUrl, k.key).post(path, batch([still, clip]));
      assertScopeDenied(r, 'allowed_kinds', path);
      assert.match(r.body.error.message, /video/);
    }
    // Its image steps alone are within the key's kinds (the item's own kind, pipeline, is not a rule's).
    const ok = await api(gw.baseUrl, k.key).post('/v1/batches?dry_run=true', batch([still]));
    assert.equal(ok.status, 200, ok.text);
  });

  test('an expired key answers 401 on every gateway', async () => {
    const k = await mint({ scopes: ['read'], expires_at: new Date(Date.now() + 3_000).toISOString() });
    assert.equal((await api(gw.baseUrl, k.key).get('/v1/balance')).status, 200, 'usable before its expiry');
    // Cached on gw by now: the expiry is checked on the cached key too.
    await waitFor('the key to expire', async () => (await api(gw.baseUrl, k.key).get('/v1/balance')).status === 401, 15_000);
    const r = await api(gw2.baseUrl, k.key).get('/v1/balance');
    assertApiError(r, 401, 'unauthorized');
    assert.match(r.body.error.message, /expired/);
  });

  test('a key is refused from outside its allowed_ips and answered from inside (loopback)', async () => {
    const outside = await mint({ scopes: ['read'], allowed_ips: ['192.0.2.0/24', '2001:db8::/32'] });
    const r = await api(gw.baseUrl, outside.key).get('/v1/balance');
    assertScopeDenied(r, 'allowed_ips', 'a key whose networks exclude 127.0.0.1');
    const inside = await mint({ scopes: ['read'], allowed_ips: ['127.0.0.1/8'] });
    const listed = (await api(gw.baseUrl, t.apiKey).get('/v1/api-keys')).body.data.find((k: { id: string }) => k.id === inside.id);
    assert.deepEqual(listed.allowed_ips, ['127.0.0.0/8'], 'stored as the network');
    assert.equal((await api(gw.baseUrl, inside.key).get('/v1/balance')).status, 200);
    assertScopeDenied(await api(gw.baseUrl, inside.key).post('/v1/api-keys', { name: 'x', scopes: ['read'] }), 'admin', 'its scopes still apply');
  });

  test('an inline budget is a budget of the new key', async () => {
    const k = await mint({ scopes: ['read', 'generate'], budget: { limit: 1, period: 'day' } });
    assert.equal(k.budgets.length, 1);
    const budgets = (await api(gw.baseUrl, t.apiKey).get('/v1/budgets')).body.data as Array<{ scope: string; scope_id: string; limit: number }>;
    assert.ok(budgets.some((b) => b.scope === 'key' && b.scope_id === k.id && b.limit === 1));
    const r = await api(gw.baseUrl, k.key).post('/v1/images/generate', imageBody(t, 'over budget'));
    assertApiError(r, 402, 'budget_exceeded');
  });

  test('bad input is a 400', async () => {
    const c = api(gw.baseUrl, t.apiKey);
    for (const body of [
      { name: 'x', scopes: ['everything'] },
      { name: 'x', scopes: [] },
      { name: '', scopes: ['read'] },
      { name: 'x', scopes: ['read'], allowed_ips: ['10.0.0.0/33'] },
      { name: 'x', scopes: ['read'], allowed_models: ['no-such-model'] },
      { name: 'x', scopes: ['read'], expires_at: '2001-01-01T00:00:00Z' },
      { name: 'x', scopes: ['read'], budget: { limit: 0, period: 'day' } },
      { name: 'x', scopes: ['read'], extra: true },
    ]) {
      assertApiError(await c.post('/v1/api-keys', body), 400, 'invalid_request');
    }
    assertApiError(await del(t.apiKey, 'k_unknown'), 404, 'not_found');
  });
});

describe('revocation and audit', () => {
  test('a DELETE revokes the key at once on a second gateway; both acts are audited', async () => {
    const k = await mint({ scopes: ['read'] });
    // gw2 caches the key.
    assert.equal((await api(gw2.baseUrl, k.key).get('/v1/balance')).status, 200);
    assert.equal((await api(gw2.baseUrl, k.key).get('/v1/balance')).status, 200);
    const r = await del(t.apiKey, k.id);
    assert.equal(r.status, 200, r.text);
    assert.ok(r.body.data.revoked_at);
    assertApiError(await api(gw2.baseUrl, k.key).get('/v1/balance'), 401, 'unauthorized');
    assertApiError(await api(gw2.baseUrl, k.key).get('/v1/images/x_unknown'), 401, 'unauthorized');
    const again = await del(t.apiKey, k.id);
    assert.equal(again.status, 200, 'revoking a revoked key answers it unchanged');
    assert.equal(again.body.data.revoked_at, r.body.data.revoked_at);
    const events = await tdb.db
      .selectFrom('audit_events')
      .select(['action', 'actor'])
      .where('workspace_id', '=', t.workspaceId)
      .where('target_id', '=', k.id)
      .orderBy('created_at')
      .execute();
    assert.deepEqual(events, [
      { action: 'api_key.created', actor: `key:${t.apiKeyId}` },
      { action: 'api_key.revoked', actor: `key:${t.apiKeyId}` },
    ]);
  });
});

describe('clients', () => {
  test('the TypeScript client and `mediagen keys` create, list and revoke keys; a read key is refused by name', async () => {
    const mg = new MediaGenClient({ apiKey: t.apiKey, baseUrl: gw.baseUrl });
    const made = (await mg.apiKeys.create({ name: 'from the client', scopes: ['read'] })).data;
    assert.match(made.key, /^mg_live_/);
    const reader = new MediaGenClient({ apiKey: made.key, baseUrl: gw.baseUrl });
    await assert.rejects(reader.apiKeys.list(), (err: unknown) => err instanceof MediaGenError && err.status === 403 && err.code === 'key_scope_denied');
    assert.ok((await mg.apiKeys.list()).data.some((k) => k.id === made.id));
    assert.ok((await mg.apiKeys.revoke(made.id)).data.revoked_at);

    const env = { MEDIAGEN_API_KEY: t.apiKey, MEDIAGEN_BASE_URL: gw.baseUrl };
    const created = await mediagen(['keys', 'create', 'from the cli', '--scopes', 'read,generate', '--models', 'nano-banana-2', '--json'], env);
    assert.equal(created.code, 0, created.stderr);
    const k = JSON.parse(created.stdout).data as { id: string; key: string; allowed_models: string[] };
    assert.deepEqual(k.allowed_models, ['nano-banana-2']);
    const human = await mediagen(['keys', 'list'], env);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, new RegExp(`${k.id}\\s+from the cli\\s+read,generate\\s+nano-banana-2`));
    assert.ok(!human.stdout.includes(k.key.split('_')[3]!), 'no secret listed');
    assert.equal((await mediagen(['keys', 'create', 'x', '--scopes', 'everything'], env)).code, 2, 'a usage error');
    const revoked = await mediagen(['keys', 'revoke', k.id], env);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.match(revoked.stdout, new RegExp(`revoked ${k.id}`));
    assertApiError(await api(gw.baseUrl, k.key).get('/v1/balance'), 401, 'unauthorized');
  });
});

const cli = fileURLToPath(new URL('../../../client/bin/mediagen.js', import.meta.url));

/** Runs the CLI: its exit code and output. */
function mediagen(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}
