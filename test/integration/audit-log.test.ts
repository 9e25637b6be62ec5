// The audit log on a real database and gateway: every administrative act, done the way operators
// and customers do it (the admin CLI as a process, DELETE through the gateway), writes exactly one
// event with who did it and what changed (never a secret); GET /v1/audit-events shows a workspace's
// events only to that workspace's owner keys (another workspace's owner sees none of them, a key
// whose creator is a member gets 403 owner_key_required, also once its owner creator is demoted),
// with filters and cursor pages; `audit list` prints the same; retention removes old events only,
// never one younger than 30 days.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { createTenant, createTestDatabase, insertImageJob, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { call, startInProcessGateway, type InProcessGateway } from './gateway-harness.js';
import { addMember } from '../../db/repos/workspaces.js';
import { sweepAuditEvents } from '../../db/repos/audit.js';

const adminJs = fileURLToPath(new URL('../../admin/main.js', import.meta.url));
const mediagenJs = fileURLToPath(new URL('../../../client/bin/mediagen.js', import.meta.url));
let tdb: TestDatabase;
let gw: InProcessGateway;
let a: Tenant;
let b: Tenant;
let env: NodeJS.ProcessEnv;

interface Event {
  id: string;
  action: string;
  actor: string;
  target_type: string | null;
  target_id: string | null;
  details: Record<string, unknown>;
  created_at: string;
}

const admin = (...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
  new Promise((resolve) => {
    execFile(process.execPath, [adminJs, ...args], { env, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });

/** The customers' CLI, `mediagen`, against the in-process gateway with `key`. */
const mediagen = (key: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
  new Promise((resolve) => {
    const cliEnv = { PATH: process.env.PATH, MEDIAGEN_API_KEY: key, MEDIAGEN_BASE_URL: gw.baseUrl };
    execFile(process.execPath, [mediagenJs, ...args], { env: cliEnv, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });

async function adminOk(...args: string[]): Promise<string> {
  const r = await admin(...args);
  assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** Every event of the key's workspace, following next_cursor with small pages. */
async function allEvents(key: string, filter = ''): Promise<Event[]> {
  const events: Event[] = [];
  let cursor: string | null = null;
  do {
    const r = await call(gw.baseUrl, 'GET', `/v1/audit-events?limit=3${filter}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { key });
    assert.equal(r.status, 200, r.text);
    events.push(...(r.body.data as Event[]));
    cursor = r.body.next_cursor;
  } while (cursor);
  return events;
}

before(async () => {
  tdb = await createTestDatabase();
  gw = await startInProcessGateway(tdb.db, tdb.url);
  a = await createTenant(tdb.db, 100);
  b = await createTenant(tdb.db, 100);
  env = { ...process.env, DATABASE_URL: tdb.url, WEBHOOK_SECRETS_KEY: 'an operator key for the test' };
});

after(async () => {
  await gw?.close();
  await tdb?.drop();
});

describe('every administrative act', () => {
  test('writes exactly one audit event, visible only to its own workspace', async () => {
    const before = new Set((await tdb.db.selectFrom('audit_events').select('id').where('workspace_id', '=', a.workspaceId).execute()).map((e) => e.id));
    const ws = a.workspaceId;

    // The admin CLI, as operators run it.
    const created = JSON.parse(await adminOk('key', 'create', '--workspace', ws, '--name', 'ci', '--as', a.ownerEmail, '--json'));
    await adminOk('key', 'revoke', '--workspace', ws, '--key', created.id, '--as', a.ownerEmail);
    const rotated = JSON.parse(await adminOk('webhook', 'secret', 'rotate', '--workspace', ws, '--as', a.ownerEmail, '--json'));
    await adminOk('credits', 'grant', '--workspace', ws, '--amount', '25', '--reason', 'goodwill');
    await adminOk('credits', 'deduct', '--workspace', ws, '--amount', '5', '--reason', 'correction');
    await adminOk('workspace', 'set-share', '--workspace', ws, '--tier', 'priority');
    await adminOk('workspace', 'allow-high-priority', '--workspace', ws);
    await adminOk('member', 'add', '--workspace', ws, '--email', 'dev@example.test', '--role', 'member');
    await adminOk('member', 'add', '--workspace', ws, '--email', 'dev@example.test', '--role', 'owner');
    // The same role again changes nothing and records nothing.
    await adminOk('member', 'add', '--workspace', ws, '--email', 'dev@example.test', '--role', 'owner');
    await adminOk('member', 'remove', '--workspace', ws, '--email', 'dev@example.test');
    // A refused act records nothing: a deduction past the balance, removing the last owner.
    assert.equal((await admin('credits', 'deduct', '--workspace', ws, '--amount', '100000', '--reason', 'too much')).code, 5);
    assert.equal((await admin('member', 'remove', '--workspace', ws, '--email', a.ownerEmail)).code, 5);

    // A customer's DELETE of a finished job's outputs, twice (idempotent): one event.
    const job = await insertImageJob(tdb.db, a);
    await tdb.db
      .updateTable('jobs')
      .set({ status: 'completed', outputs: sql`'[]'::jsonb` })
      .where('id', '=', job.id)
      .execute();
    for (let i = 0; i < 2; i++) {
      const del = await call(gw.baseUrl, 'DELETE', `/v1/images/${job.id}`, { key: a.apiKey });
      assert.equal(del.status, 200, del.text);
    }

    const events = (await allEvents(a.apiKey)).filter((e) => !before.has(e.id));
    const byAction = (action: string) => events.filter((e) => e.action === action);
    const expected: Record<string, Partial<Event>> = {
      // An operator acting for an owner (--as) is shown as the operator, naming the owner.
      'api_key.created': { actor: `system:admin-cli for ${a.ownerEmail}`, target_type: 'api_key', target_id: created.id, details: { name: 'ci' } },
      'api_key.revoked': { actor: `system:admin-cli for ${a.ownerEmail}`, target_type: 'api_key', target_id: created.id, details: { name: 'ci' } },
      'webhook_secret.rotated': { actor: `system:admin-cli for ${a.ownerEmail}`, target_type: 'webhook_secret', target_id: rotated.id },
      'member.added': { actor: 'system:admin-cli', target_type: 'member', target_id: 'dev@example.test', details: { role: 'member' } },
      'member.role_changed': {
        actor: 'system:admin-cli',
        target_type: 'member',
        target_id: 'dev@example.test',
        details: { role: 'owner', previous_role: 'member' },
      },
      'member.removed': { actor: 'system:admin-cli', target_type: 'member', target_id: 'dev@example.test', details: { role: 'owner' } },
      'credits.granted': { actor: 'system:admin-cli', target_id: ws, details: { amount: 25, balance: 125, reason: 'goodwill' } },
      'credits.deducted': { actor: 'system:admin-cli', target_id: ws, details: { amount: 5, balance: 120, reason: 'correction' } },
      'workspace.share_changed': { actor: 'system:admin-cli', target_id: ws, details: { previous_weight: 1, weight: 3 } },
      'workspace.priority_changed': { actor: 'system:admin-cli', target_id: ws, details: { high_priority_allowed: true, previous: false } },
      'job.outputs_deleted': { actor: `key:${a.apiKeyId}`, target_type: 'job', target_id: job.id, details: { kind: 'image', outputs: 0 } },
    };
    assert.deepEqual(
      events.map((e) => e.action).sort(),
      Object.keys(expected).sort(),
      'one event per act, none for the refused deduction or removal, the unchanged role or the repeated DELETE',
    );
    for (const [action, want] of Object.entries(expected)) {
      const [e] = byAction(action);
      for (const [k, v] of Object.entries(want)) assert.deepEqual(e![k as keyof Event], v, `${action}.${k}`);
    }
    // No secret in any event: neither the API key nor the webhook secret.
    const text = JSON.stringify(events);
    assert.ok(!text.includes(created.key) && !text.includes(rotated.secret) && !text.includes(rotated.secret.slice(6)), 'no secret in the log');
    // Newest first, and the pages neither repeat nor skip an event.
    const times = events.map((e) => Date.parse(e.created_at));
    assert.deepEqual(
      times,
      [...times].sort((x, y) => y - x),
    );
    assert.equal(new Set(events.map((e) => e.id)).size, events.length);

    // Another workspace's owner key sees none of them.
    const other = await allEvents(b.apiKey);
    assert.ok(other.length > 0, "b's own events (its key, its initial credits)");
    assert.ok(
      other.every((e) => !events.some((x) => x.id === e.id) && e.target_id !== ws && e.target_id !== job.id),
      "no event of a's workspace in b's log",
    );
    const probe = await call(gw.baseUrl, 'GET', `/v1/audit-events?target_id=${job.id}`, { key: b.apiKey });
    assert.equal(probe.status, 200);
    assert.deepEqual(probe.body.data, [], "filtering by a's job id finds nothing from b");

    // Filters: action, target_id, from / to.
    const deleted = await allEvents(a.apiKey, '&action=job.outputs_deleted');
    assert.deepEqual(
      deleted.map((e) => e.target_id),
      [job.id],
    );
    const aboutKey = await allEvents(a.apiKey, `&target_id=${created.id}`);
    assert.deepEqual(aboutKey.map((e) => e.action).sort(), ['api_key.created', 'api_key.revoked']);
    const revokedAt = byAction('api_key.revoked')[0]!.created_at;
    const since = await allEvents(a.apiKey, `&from=${encodeURIComponent(revokedAt)}`);
    assert.ok(since.every((e) => e.created_at >= revokedAt) && since.some((e) => e.action === 'api_key.revoked'), 'from is inclusive');
    const until = await allEvents(a.apiKey, `&to=${encodeURIComponent(revokedAt)}`);
    assert.ok(until.every((e) => e.created_at < revokedAt) && until.some((e) => e.action === 'api_key.created'), 'to is exclusive');
  });
});

describe('who may read the log', () => {
  test('a key whose creator is a member gets 403 owner_key_required; an owner key loses access once its creator is demoted', async () => {
    const t = await createTenant(tdb.db, 0);
    const second = `second-${t.workspaceId}@example.test`;
    await addMember(tdb.db, t.workspaceId, second, 'owner');
    const key = JSON.parse(await adminOk('key', 'create', '--workspace', t.workspaceId, '--name', 'second', '--as', second, '--json'));
    const owned = await call(gw.baseUrl, 'GET', '/v1/audit-events', { key: key.key });
    assert.equal(owned.status, 200, owned.text);

    await adminOk('member', 'add', '--workspace', t.workspaceId, '--email', second, '--role', 'member');
    // The key cache keeps a key's owner flag for at most its TTL (5 s): then the demotion applies.
    const refused = await waitFor(
      "the demoted creator's key to be refused",
      async () => {
        const r = await call(gw.baseUrl, 'GET', '/v1/audit-events', { key: key.key });
        return r.status === 403 ? r : undefined;
      },
      20_000,
      250,
    );
    assert.equal(refused.body.error.code, 'owner_key_required');
    assert.match(refused.body.error.message, /owner key/);
    // The key itself still works elsewhere: only the audit log is owner-only.
    assert.equal((await call(gw.baseUrl, 'GET', '/v1/projects', { key: key.key })).status, 200);
    // The workspace's own owner key still reads it.
    assert.equal((await call(gw.baseUrl, 'GET', '/v1/audit-events', { key: t.apiKey })).status, 200);

    // The same through the mediagen CLI: the owner's key lists the events, the demoted key exits 4 saying why.
    const listed = await mediagen(t.apiKey, 'audit', '--action', 'api_key.created', '--json');
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual(
      JSON.parse(listed.stdout)
        .data.map((e: Event) => e.target_id)
        .sort(),
      [t.apiKeyId, key.id].sort(),
    );
    const denied = await mediagen(key.key, 'audit');
    assert.equal(denied.code, 4, denied.stderr);
    assert.match(denied.stderr, /owner key/);
  });

  test('bad filters and cursors are 400 invalid_request', async () => {
    for (const q of ['action=nope', 'from=yesterday', 'limit=0', 'limit=101', 'cursor=jobs.1.x', `to=${encodeURIComponent('2026-01-01T00:00:00')}`]) {
      const r = await call(gw.baseUrl, 'GET', `/v1/audit-events?${q}`, { key: a.apiKey });
      assert.equal(r.status, 400, `${q}: ${r.text}`);
      assert.equal(r.body.error.code, 'invalid_request', q);
    }
    const unauth = await call(gw.baseUrl, 'GET', '/v1/audit-events');
    assert.equal(unauth.status, 401);
    // Edges of the accepted range are answered, not failed.
    const edge = await call(
      gw.baseUrl,
      'GET',
      `/v1/audit-events?from=${encodeURIComponent('0000-01-01T00:00:00Z')}&to=${encodeURIComponent('9999-12-31T23:59:59Z')}`,
      {
        key: a.apiKey,
      },
    );
    assert.equal(edge.status, 200, edge.text);
  });
});

describe('admin audit list', () => {
  test('prints the workspace events newest first, filtered by action and limited', async () => {
    const out = JSON.parse(await adminOk('audit', 'list', '--workspace', a.workspaceId, '--action', 'api_key.created', '--limit', '1', '--json'));
    assert.equal(out.length, 1);
    assert.equal(out[0].action, 'api_key.created');
    const newest = await tdb.db
      .selectFrom('audit_events')
      .select('id')
      .where('workspace_id', '=', a.workspaceId)
      .where('action', '=', 'api_key.created')
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
    assert.equal(out[0].id, newest.id);
    const text = await adminOk('audit', 'list', '--workspace', a.workspaceId);
    assert.match(text, /credits\.granted/);
    assert.equal((await admin('audit', 'list', '--workspace', a.workspaceId, '--action', 'nope')).code, 2);
    assert.equal((await admin('audit', 'list', '--workspace', 'ws_nope')).code, 3);
  });
});

describe('retention', () => {
  test('removes events past the retention, oldest first, and never one younger than 30 days', async () => {
    const t = await createTenant(tdb.db, 0);
    const at = (days: number) => sql<Date>`now() - make_interval(days => ${days})`;
    for (const [id, days] of [
      ['aud_old_500', 500],
      ['aud_old_401', 401],
      ['aud_mid_40', 40],
      ['aud_new_10', 10],
    ] as const) {
      await tdb.db
        .insertInto('audit_events')
        .values({ id, workspace_id: t.workspaceId, action: 'credits.granted', actor: 'system:admin-cli', details: '{}', created_at: at(days) })
        .execute();
    }
    const left = async () =>
      (await tdb.db.selectFrom('audit_events').select('id').where('id', 'in', ['aud_old_500', 'aud_old_401', 'aud_mid_40', 'aud_new_10']).execute())
        .map((e) => e.id)
        .sort();
    assert.equal(await sweepAuditEvents(tdb.db, 400, 1), 1, 'a bounded batch');
    assert.deepEqual(await left(), ['aud_mid_40', 'aud_new_10', 'aud_old_401'], 'the oldest went first');
    assert.ok((await sweepAuditEvents(tdb.db, 400)) >= 1);
    assert.deepEqual(await left(), ['aud_mid_40', 'aud_new_10']);
    // Asked for 1 day, the function keeps 30: the 10-day-old event stays.
    await sweepAuditEvents(tdb.db, 1);
    assert.deepEqual(await left(), ['aud_new_10']);
  });
});
