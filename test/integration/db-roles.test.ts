// The app role of db/roles.ts on the real Postgres: a login role given only what
// `admin migrate --app-role` grants is no superuser, can create nothing (no DDL), cannot mint API
// keys, add members or write webhook secrets, trims the audit log only through its retention
// function, writes usage rollups only through their triggers and fold function, and still serves the gateway: a gateway connected as that role authenticates,
// rate-limits, records key use and writes upload rows over HTTP.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { sql } from 'kysely';
import { createTenant, createTestDatabase, insertImageJob, testConfig, waitFor, type TestDatabase } from '../support/stack.js';
import { api, startGateway, type InProcessGateway } from '../support/services.js';
import { appAppendOnlyTables, appReadOnlyTables, grantAppRole } from '../../db/roles.js';
import { createDb, type Database } from '../../db/index.js';
import { randomToken } from '../../shared/ids.js';
import { createHash } from 'node:crypto';
import { sweepAuditEvents } from '../../db/repos/audit.js';
import { foldUsageDeltas } from '../../db/repos/usage.js';

let tdb: TestDatabase;
let role: string;
let appUrl: string;
let appDb: Database;

before(async () => {
  tdb = await createTestDatabase();
  role = `app_${randomToken(8)
    .toLowerCase()
    .replace(/[^a-z0-9]/g, 'x')}`;
  const password = randomToken(16);
  await sql`create role ${sql.id(role)} login nosuperuser nocreatedb nocreaterole password ${sql.lit(password)}`.execute(tdb.db);
  await grantAppRole(tdb.db, role);
  const u = new URL(tdb.url);
  u.username = role;
  u.password = password;
  appUrl = u.toString();
  appDb = createDb(appUrl, 4);
});

after(async () => {
  await appDb?.destroy();
  if (tdb && role) {
    await sql`revoke all on all tables in schema public from ${sql.id(role)}`.execute(tdb.db);
    await sql`revoke all on all sequences in schema public from ${sql.id(role)}`.execute(tdb.db);
    await sql`revoke usage on schema public from ${sql.id(role)}`.execute(tdb.db);
  }
  await tdb?.drop();
  if (role) {
    const c = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await c.connect();
    await c.query(`drop role if exists ${role}`).finally(() => c.end());
  }
});

const refused = /permission denied/;

describe('the app role', () => {
  test('is no superuser and may create nothing: no table, no function, no database, no role', async () => {
    const me = await sql<{
      rolsuper: boolean;
      rolcreatedb: boolean;
      rolcreaterole: boolean;
    }>`select rolsuper, rolcreatedb, rolcreaterole from pg_roles where rolname = current_user`.execute(appDb);
    assert.deepEqual(me.rows[0], { rolsuper: false, rolcreatedb: false, rolcreaterole: false });
    await assert.rejects(sql`create table evil (id int)`.execute(appDb), refused);
    await assert.rejects(sql`create function evil() returns int language sql as 'select 1'`.execute(appDb), refused);
    await assert.rejects(sql`alter table jobs add column evil int`.execute(appDb), /must be owner/);
    await assert.rejects(sql`drop table jobs`.execute(appDb), /must be owner/);
    await assert.rejects(sql`copy (select 1) to program 'true'`.execute(appDb), /permission denied|must be superuser|privileges/);
  });

  test('cannot mint API keys, add members or write webhook secrets; reads them', async () => {
    const t = await createTenant(tdb.db);
    await assert.rejects(
      sql`insert into api_keys (id, workspace_id, name, secret_hash, created_by) values ('k_evil', ${t.workspaceId}, 'evil', 'x', 'evil@example.test')`.execute(
        appDb,
      ),
      refused,
    );
    await assert.rejects(sql`update api_keys set revoked_at = null where workspace_id = ${t.workspaceId}`.execute(appDb), refused);
    await assert.rejects(
      sql`insert into workspace_members (workspace_id, email, role) values (${t.workspaceId}, 'evil@example.test', 'owner')`.execute(appDb),
      refused,
    );
    await assert.rejects(sql`delete from webhook_secrets`.execute(appDb), refused);
    const keys = await sql<{ id: string }>`select id from api_keys where workspace_id = ${t.workspaceId}`.execute(appDb);
    assert.equal(keys.rows.length, 1);
    await sql`update api_keys set last_used_at = now() where id = ${t.apiKeyId}`.execute(appDb);
  });

  test('mints and revokes keys only through mint_api_key / revoke_api_key_with_key, with a live owner admin key and its secret', async () => {
    const t = await createTenant(tdb.db);
    const secret = t.apiKey.split('_')[3]!;
    const mint = (actorSecret: string, id: string, scopes: string[], actorId = t.apiKeyId) =>
      sql`select * from mint_api_key(${actorId}, ${actorSecret}, ${id}, 'sha256:x', 'minted', ${scopes}::text[], null, null, null, null, null, null, null, null)`.execute(
        appDb,
      );
    const fn = /may not manage API keys|more than it has/;
    await assert.rejects(mint('wrong-secret', 'kfnwrong', ['read']), fn, 'a key id without its secret mints nothing');
    await mint(secret, 'kfnread', ['read']);
    const minted = await sql<{ created_by: string; scopes: string[] }>`select created_by, scopes from api_keys where id = 'kfnread'`.execute(tdb.db);
    assert.deepEqual(minted.rows, [{ created_by: t.ownerEmail, scopes: ['read'] }]);
    // A read-only key minted above holds no admin: it can mint nothing, and nothing wider than itself.
    await sql`update api_keys set secret_hash = ${`sha256:${createHash('sha256').update('s3cret').digest('hex')}`} where id = 'kfnread'`.execute(tdb.db);
    await assert.rejects(mint('s3cret', 'kfnchild', ['read'], 'kfnread'), fn);
    await assert.rejects(sql`select * from revoke_api_key_with_key('kfnread', 's3cret', ${t.apiKeyId})`.execute(appDb), fn);
    const revoked = await sql<{ revoked: boolean }>`select revoked from revoke_api_key_with_key(${t.apiKeyId}, ${secret}, 'kfnread')`.execute(appDb);
    assert.deepEqual(revoked.rows, [{ revoked: true }]);
    await assert.rejects(sql`update api_keys set revoked_at = now() where id = ${t.apiKeyId}`.execute(appDb), refused);
    await assert.rejects(
      sql`insert into budgets (id, workspace_id, scope, scope_id, period, limit_credits) values ('bud_x', ${t.workspaceId}, 'key', ${t.apiKeyId}, 'day', 1)`.execute(
        appDb,
      ),
      refused,
    );
  });

  test('appends to the audit log but cannot rewrite or erase it', async () => {
    const t = await createTenant(tdb.db);
    await sql`insert into audit_events (id, workspace_id, action, actor) values ('aud_app', ${t.workspaceId}, 'job.outputs_deleted', 'key:x')`.execute(appDb);
    await assert.rejects(sql`update audit_events set actor = 'someone else' where id = 'aud_app'`.execute(appDb), refused);
    await assert.rejects(sql`delete from audit_events where id = 'aud_app'`.execute(appDb), refused);
    const rows = await sql<{ actor: string }>`select actor from audit_events where id = 'aud_app'`.execute(appDb);
    assert.deepEqual(rows.rows, [{ actor: 'key:x' }]);
  });

  test('the credit ledger is insert-only; of a workspace only the balance may change, never its share, priority or name', async () => {
    const t = await createTenant(tdb.db);
    await sql`update workspaces set credits = credits - 1, updated_at = now() where id = ${t.workspaceId}`.execute(appDb);
    await sql`insert into credit_ledger (workspace_id, delta, reason, note) values (${t.workspaceId}, -1, 'deduct', 'app test')`.execute(appDb);
    await assert.rejects(sql`update credit_ledger set delta = 1000 where workspace_id = ${t.workspaceId}`.execute(appDb), refused);
    await assert.rejects(sql`delete from credit_ledger where workspace_id = ${t.workspaceId}`.execute(appDb), refused);
    await assert.rejects(sql`update workspaces set fair_share_weight = 100 where id = ${t.workspaceId}`.execute(appDb), refused);
    await assert.rejects(sql`update workspaces set high_priority_allowed = true where id = ${t.workspaceId}`.execute(appDb), refused);
    await assert.rejects(sql`update workspaces set name = 'taken' where id = ${t.workspaceId}`.execute(appDb), refused);
    await assert.rejects(sql`insert into workspaces (id, name, credits) values ('ws_evil', 'evil', 1000000)`.execute(appDb), refused);
    await assert.rejects(sql`delete from workspaces where id = ${t.workspaceId}`.execute(appDb), refused);
    await assert.rejects(sql`insert into projects (id, workspace_id, name) values ('prj_evil', ${t.workspaceId}, 'evil')`.execute(appDb), refused);
    await assert.rejects(sql`update projects set workspace_id = ${t.workspaceId}`.execute(appDb), refused);
    const ledger = await sql<{ delta: number }>`select delta from credit_ledger where workspace_id = ${t.workspaceId} and note = 'app test'`.execute(appDb);
    assert.deepEqual(ledger.rows, [{ delta: -1 }]);
  });

  test('holds exactly the documented grants on every table', async () => {
    const rows = await sql<{ table_name: string; privilege_type: string }>`
      select table_name, privilege_type from information_schema.role_table_grants
      where grantee = ${role} and table_schema = 'public' order by table_name, privilege_type`.execute(tdb.db);
    const tables = new Map<string, string[]>();
    for (const r of rows.rows) tables.set(r.table_name, [...(tables.get(r.table_name) ?? []), r.privilege_type]);
    for (const table of Object.keys(appReadOnlyTables)) assert.deepEqual(tables.get(table), ['SELECT'], `${table}: select only (updates by column)`);
    for (const table of appAppendOnlyTables) assert.deepEqual(tables.get(table), ['INSERT', 'SELECT'], `${table}: append-only`);
    const columnGrants = await sql<{ table_name: string; column_name: string }>`
      select table_name, column_name from information_schema.column_privileges
      where grantee = ${role} and table_schema = 'public' and privilege_type = 'UPDATE' order by table_name, column_name`.execute(tdb.db);
    const updatable = new Map<string, string[]>();
    for (const r of columnGrants.rows) {
      if (appReadOnlyTables[r.table_name] !== undefined) updatable.set(r.table_name, [...(updatable.get(r.table_name) ?? []), r.column_name]);
    }
    for (const [table, columns] of Object.entries(appReadOnlyTables))
      assert.deepEqual(updatable.get(table) ?? [], [...columns].sort(), `${table}: updatable columns`);
  });

  test('trims the audit log only through expire_audit_events, which spares the last 30 days', async () => {
    const t = await createTenant(tdb.db);
    await sql`
      insert into audit_events (id, workspace_id, action, actor, created_at) values
        ('aud_app_31d', ${t.workspaceId}, 'credits.granted', 'system:admin-cli', now() - interval '31 days'),
        ('aud_app_29d', ${t.workspaceId}, 'credits.granted', 'system:admin-cli', now() - interval '29 days')`.execute(tdb.db);
    assert.equal(await sweepAuditEvents(appDb, 1), 1, 'asked for 1 day, it keeps 30');
    const rows = await sql<{ id: string }>`select id from audit_events where id like 'aud_app_%' order by id`.execute(appDb);
    assert.deepEqual(
      rows.rows.map((r) => r.id),
      ['aud_app_29d'],
    );
  });

  test('writes usage rollups only through its jobs, its ledger rows and fold_usage_deltas, never directly', async () => {
    const t = await createTenant(tdb.db);
    await insertImageJob(appDb, t);
    const counted = await sql<{ n: number }>`select count(*)::int as n from usage_deltas where workspace_id = ${t.workspaceId}`.execute(appDb);
    assert.equal(counted.rows[0]!.n, 2, 'the job and its charge, counted by the triggers');
    assert.ok((await foldUsageDeltas(appDb)) > 0);
    const daily = await sql<{ spent: number; created: number }>`select spent, created from usage_daily where workspace_id = ${t.workspaceId}`.execute(appDb);
    assert.deepEqual(daily.rows, [{ spent: 1, created: 1 }]);
    for (const table of ['usage_daily', 'usage_deltas']) {
      const tb = sql.table(table);
      await assert.rejects(
        sql`insert into ${tb} (workspace_id, day, api_key_id, project_id, model, kind, spent) values (${t.workspaceId}, now(), '', ${t.projectId}, 'm', 'image', -1000)`.execute(
          appDb,
        ),
        refused,
      );
      await assert.rejects(sql`update ${tb} set spent = 0 where workspace_id = ${t.workspaceId}`.execute(appDb), refused);
      await assert.rejects(sql`delete from ${tb} where workspace_id = ${t.workspaceId}`.execute(appDb), refused);
    }
    await assert.rejects(sql`select usage_track_job()`.execute(appDb), /permission denied|trigger functions can only be called as triggers/);
  });

  test('serves a gateway over HTTP: authentication, rate limits, key use and upload rows', async () => {
    const t = await createTenant(tdb.db);
    let gw: InProcessGateway | null = null;
    try {
      gw = await startGateway(testConfig(appUrl, { HOST: '127.0.0.1' }), appDb);
      const c = api(gw.baseUrl, t.apiKey);
      await waitFor('the key to be known', async () => (await c.get('/v1/projects')).status === 200);
      const created = await c.post('/v1/uploads', { project_id: t.projectId, name: 'a.png', mime_type: 'image/png', size: 1000 });
      assert.equal(created.status, 200, created.text);
      const dry = await c.post('/v1/images/generate?dry_run=true', {
        project_id: t.projectId,
        prompt: 'a fox',
        model: 'nano-banana-2',
        aspect_ratio: '1:1',
        count: 1,
      });
      assert.equal(dry.status, 200, dry.text);
      // A real create charges: the balance update and the ledger insert the role keeps.
      const job = await c.post('/v1/images/generate', { project_id: t.projectId, prompt: 'a fox', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });
      assert.equal(job.status, 200, job.text);
    } finally {
      await gw?.close();
    }
  });
});
