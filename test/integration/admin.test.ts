// The admin CLI end to end: the built script run as a process against a real database, checking
// its output, its JSON and its exit codes (0 ok, 2 usage, 3 not found, 4 forbidden, 5 conflict).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createTestDatabase, type TestDatabase } from '../support/stack.js';
import { parseApiKey, secretMatches } from '../../db/api-keys.js';
import { sql } from 'kysely';
import { runAdmin } from '../../admin/main.js';

const adminJs = fileURLToPath(new URL('../../admin/main.js', import.meta.url));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

describe('admin CLI (node dist/admin/main.js)', () => {
  let t: TestDatabase;
  let env: NodeJS.ProcessEnv;

  const admin = (...args: string[]): Promise<Run> =>
    new Promise((resolve) => {
      execFile(process.execPath, [adminJs, ...args], { env, timeout: 60_000 }, (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
        resolve({ code, stdout, stderr });
      });
    });
  const json = async (...args: string[]) => {
    const r = await admin(...args, '--json');
    assert.equal(r.code, 0, `admin ${args.join(' ')} failed: ${r.stderr}`);
    return JSON.parse(r.stdout);
  };

  let workspaceId = '';
  const owner = 'Owner@Example.test';
  const member = 'member@example.test';

  before(async () => {
    t = await createTestDatabase();
    // Only what the CLI needs: no S3 or Temporal variables, so nothing else can be reached.
    env = { PATH: process.env.PATH, DATABASE_URL: t.url };
  });
  after(async () => {
    await t?.drop();
  });

  test('workspace create makes a workspace with its owner and initial credits', async () => {
    const ws = await json('workspace', 'create', '--name', 'Acme Studio', '--owner', owner, '--credits', '250');
    assert.match(ws.id, /^ws_/);
    assert.equal(ws.name, 'Acme Studio');
    assert.equal(ws.credits, 250);
    workspaceId = ws.id;
    const show = await json('workspace', 'show', '--workspace', workspaceId);
    assert.deepEqual(show.members, [{ email: 'owner@example.test', role: 'owner' }]);
    const ledger = await t.db.selectFrom('credit_ledger').selectAll().where('workspace_id', '=', workspaceId).execute();
    assert.deepEqual(
      ledger.map((l) => [l.delta, l.reason]),
      [[250, 'grant']],
    );
  });

  test('human output by default', async () => {
    const r = await admin('workspace', 'show', '--workspace', workspaceId);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /250 credits/);
    assert.match(r.stdout, /owner\s+owner@example\.test/);
  });

  test('member add adds a member', async () => {
    const m = await json('member', 'add', '--workspace', workspaceId, '--email', member, '--role', 'member');
    assert.deepEqual(m, { workspace_id: workspaceId, email: member, role: 'member' });
  });

  let keyId = '';
  test('an owner creates a key; the full key is printed once and only its hash is stored', async () => {
    const r = await admin('key', 'create', '--workspace', workspaceId, '--name', 'ci', '--as', owner);
    assert.equal(r.code, 0, r.stderr);
    const printed = /mg_live_\S+/.exec(r.stdout)?.[0];
    assert.ok(printed, 'the key is printed');
    const parsed = parseApiKey(printed);
    assert.ok(parsed);
    keyId = parsed.id;
    const row = await t.db.selectFrom('api_keys').selectAll().where('id', '=', keyId).executeTakeFirstOrThrow();
    assert.equal(row.created_by, 'owner@example.test');
    assert.ok(secretMatches(parsed.secret, row.secret_hash));
    assert.ok(!row.secret_hash.includes(parsed.secret), 'the secret is not stored in clear');

    const k2 = await json('key', 'create', '--workspace', workspaceId, '--name', 'second', '--as', owner);
    assert.ok(parseApiKey(k2.key));
  });

  test('a member may not create or revoke keys (exit 4); a non-member neither', async () => {
    const byMember = await admin('key', 'create', '--workspace', workspaceId, '--name', 'sneaky', '--as', member);
    assert.equal(byMember.code, 4);
    assert.match(byMember.stderr, /only workspace owners/);
    assert.doesNotMatch(byMember.stdout + byMember.stderr, /mg_live_/);

    const byStranger = await admin('key', 'create', '--workspace', workspaceId, '--name', 'x', '--as', 'nobody@example.test', '--json');
    assert.equal(byStranger.code, 4);
    assert.equal(JSON.parse(byStranger.stderr).error.code, 'forbidden');
    assert.match(byStranger.stderr, /not a member/);

    const revokeByMember = await admin('key', 'revoke', '--workspace', workspaceId, '--key', keyId, '--as', member);
    assert.equal(revokeByMember.code, 4);
    const keys = await t.db.selectFrom('api_keys').select('name').where('workspace_id', '=', workspaceId).execute();
    assert.deepEqual(keys.map((k) => k.name).sort(), ['ci', 'second']);
  });

  test('key list shows the keys without secrets', async () => {
    const list = await json('key', 'list', '--workspace', workspaceId);
    assert.deepEqual(
      list.map((k: { name: string; status: string }) => [k.name, k.status]),
      [
        ['ci', 'active'],
        ['second', 'active'],
      ],
    );
    const human = await admin('key', 'list', '--workspace', workspaceId);
    assert.equal(human.code, 0);
    assert.doesNotMatch(human.stdout, /mg_live_|sha256/);
    assert.match(human.stdout, new RegExp(`${keyId}\\s+active`));
  });

  test('an owner revokes a key; it is listed as revoked; revoking again is a conflict', async () => {
    const r = await json('key', 'revoke', '--workspace', workspaceId, '--key', keyId, '--as', owner);
    assert.deepEqual(r, { id: keyId, status: 'revoked' });
    const list = await json('key', 'list', '--workspace', workspaceId);
    const revoked = list.find((k: { id: string }) => k.id === keyId);
    assert.equal(revoked.status, 'revoked');
    assert.ok(revoked.revoked_at);
    const again = await admin('key', 'revoke', '--workspace', workspaceId, '--key', keyId, '--as', owner);
    assert.equal(again.code, 5);
    const unknown = await admin('key', 'revoke', '--workspace', workspaceId, '--key', 'nokeynokeynokey0', '--as', owner);
    assert.equal(unknown.code, 3);
  });

  test('a promoted member becomes an owner and may create keys', async () => {
    await json('member', 'add', '--workspace', workspaceId, '--email', member, '--role', 'owner');
    const k = await json('key', 'create', '--workspace', workspaceId, '--name', 'by-new-owner', '--as', member);
    assert.ok(parseApiKey(k.key));
  });

  test('credits grant and deduct write ledger entries; a deduction below zero is refused (exit 5)', async () => {
    const g = await json('credits', 'grant', '--workspace', workspaceId, '--amount', '100', '--reason', 'pilot bonus');
    assert.equal(g.credits, 350);
    const d = await json('credits', 'deduct', '--workspace', workspaceId, '--amount', '50', '--reason', 'manual correction');
    assert.equal(d.credits, 300);
    const tooMuch = await admin('credits', 'deduct', '--workspace', workspaceId, '--amount', '301', '--reason', 'oops');
    assert.equal(tooMuch.code, 5);
    assert.match(tooMuch.stderr, /cannot deduct 301 credits/);
    const ws = await t.db.selectFrom('workspaces').select('credits').where('id', '=', workspaceId).executeTakeFirstOrThrow();
    assert.equal(ws.credits, 300);
    const ledger = await t.db.selectFrom('credit_ledger').select(['delta', 'reason', 'note']).where('workspace_id', '=', workspaceId).orderBy('id').execute();
    assert.deepEqual(ledger.slice(1), [
      { delta: 100, reason: 'grant', note: 'pilot bonus' },
      { delta: -50, reason: 'deduct', note: 'manual correction' },
    ]);
    const zero = await admin('credits', 'grant', '--workspace', workspaceId, '--amount', '0', '--reason', 'x');
    assert.equal(zero.code, 2);
    const noReason = await admin('credits', 'grant', '--workspace', workspaceId, '--amount', '5');
    assert.equal(noReason.code, 2);
    assert.match(noReason.stderr, /missing --reason/);
  });

  test('projects are created and listed', async () => {
    const p1 = await json('project', 'create', '--workspace', workspaceId, '--name', 'Launch video');
    const p2 = await json('project', 'create', '--workspace', workspaceId, '--name', 'Ads');
    assert.match(p1.id, /^prj_/);
    const list = await json('project', 'list', '--workspace', workspaceId);
    assert.deepEqual(
      list.map((p: { id: string }) => p.id),
      [p1.id, p2.id],
    );
    const human = await admin('project', 'list', '--workspace', workspaceId);
    assert.match(human.stdout, /Launch video/);
  });

  test('misuse: unknown command or flag, missing flag, bad role are usage errors (exit 2)', async () => {
    const cases: string[][] = [
      [],
      ['frobnicate'],
      ['key', 'rotate', '--workspace', workspaceId],
      ['project', 'list', '--workspace', workspaceId, '--verbose'],
      ['project', 'create', '--workspace', workspaceId],
      ['member', 'add', '--workspace', workspaceId, '--email', 'a@b.test', '--role', 'admin'],
      ['member', 'add', '--workspace', workspaceId, '--email', 'not-an-email', '--role', 'member'],
      ['workspace', 'create', '--name', 'x', '--owner', 'a@b.test', '--credits', '-5'],
    ];
    const results = await Promise.all(cases.map((args) => admin(...args)));
    results.forEach((r, i) => {
      assert.equal(r.code, 2, `admin ${cases[i]!.join(' ')} → ${r.code}: ${r.stderr}`);
      assert.ok(r.stderr.length > 0);
    });
    const help = await admin('help');
    assert.equal(help.code, 0);
    assert.match(help.stdout, /key revoke --workspace W --key KEYID --as EMAIL/);
  });

  test('unknown workspace is not found (exit 3)', async () => {
    const cases: string[][] = [
      ['key', 'list', '--workspace', 'ws_nope'],
      ['project', 'create', '--workspace', 'ws_nope', '--name', 'x'],
      ['credits', 'grant', '--workspace', 'ws_nope', '--amount', '1', '--reason', 'x'],
      ['key', 'create', '--workspace', 'ws_nope', '--name', 'x', '--as', owner],
      ['member', 'add', '--workspace', 'ws_nope', '--email', 'a@b.test', '--role', 'member'],
    ];
    const results = await Promise.all(cases.map((args) => admin(...args, '--json')));
    results.forEach((r, i) => {
      assert.equal(r.code, 3, `admin ${cases[i]!.join(' ')} → ${r.code}: ${r.stderr}`);
      assert.equal(JSON.parse(r.stderr).error.code, 'not_found');
    });
  });

  test('a database that cannot be reached fails with exit 1 and no connection string in the output', async () => {
    const secretUrl = 'postgres://admin:s3cretpass@127.0.0.1:1/nowhere';
    const r = await new Promise<Run>((resolve) => {
      execFile(
        process.execPath,
        [adminJs, 'project', 'list', '--workspace', 'ws_x'],
        { env: { PATH: process.env.PATH, DATABASE_URL: secretUrl }, timeout: 60_000 },
        (err, stdout, stderr) => {
          resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
        },
      );
    });
    assert.equal(r.code, 1);
    assert.doesNotMatch(r.stdout + r.stderr, /s3cretpass/);
    const noUrl = await new Promise<Run>((resolve) => {
      execFile(
        process.execPath,
        [adminJs, 'project', 'list', '--workspace', 'ws_x'],
        { env: { PATH: process.env.PATH }, timeout: 60_000 },
        (err, stdout, stderr) => {
          resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
        },
      );
    });
    assert.equal(noUrl.code, 1);
    assert.match(noUrl.stderr, /DATABASE_URL is not set/);
  });

  test('migrate reports up to date on a migrated database', async () => {
    const r = await json('migrate');
    assert.deepEqual(r, { applied: [] });
  });

  test('migrate down without a terminal or --yes is refused (exit 2) and drops nothing', async () => {
    const r = await admin('migrate', 'down');
    assert.equal(r.code, 2);
    assert.match(r.stderr, /migrate down not confirmed: answer "yes" at the prompt, or pass --yes/);
    assert.ok(!r.stderr.includes(String(env.DATABASE_URL)), 'the connection string is not printed');
    const tables = await sql<{
      n: number;
    }>`select count(*)::int as n from information_schema.tables where table_schema = 'public' and table_name = 'jobs'`.execute(t.db);
    assert.equal(tables.rows[0]!.n, 1, 'the jobs table is still there');
  });

  test('runAdmin asks before migrate down, and --yes reverts every migration without asking', async () => {
    const scratch = await createTestDatabase();
    try {
      const questions: string[] = [];
      const no = await runAdmin(['migrate', 'down'], { DATABASE_URL: scratch.url }, { confirm: async (q) => (questions.push(q), false) });
      assert.equal(no.code, 2);
      assert.equal(questions.length, 1);
      assert.match(questions[0]!, /drops every table of database t_[0-9a-z]+ and all its data/);
      assert.ok(!questions[0]!.includes('postgres://'), 'the prompt names the database, not the connection string');
      const yes = await runAdmin(
        ['migrate', 'down', '--yes', '--json'],
        { DATABASE_URL: scratch.url },
        { confirm: async () => assert.fail('--yes must not ask') },
      );
      assert.equal(yes.code, 0, yes.stderr);
      assert.ok((JSON.parse(yes.stdout) as { reverted: string[] }).reverted.length > 0);
    } finally {
      await scratch.drop();
    }
  });
});
