// `workspace allow-high-priority` of the admin CLI, run as a process against a real database: it
// turns the workspace setting on and off (--off), and an unknown workspace is not found (exit 3).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createTenant, createTestDatabase, type Tenant, type TestDatabase } from '../support/stack.js';
import { highPriorityAllowed } from '../../db/repos/workspace-priority.js';

const adminJs = fileURLToPath(new URL('../../admin/main.js', import.meta.url));
let tdb: TestDatabase;
let t: Tenant;
let env: NodeJS.ProcessEnv;

const admin = (...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
  new Promise((resolve) => {
    execFile(process.execPath, [adminJs, ...args], { env, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });

before(async () => {
  tdb = await createTestDatabase();
  t = await createTenant(tdb.db);
  // Only what the CLI needs: no S3 or Temporal variables, so nothing else can be reached.
  env = { PATH: process.env.PATH, DATABASE_URL: tdb.url };
});

after(async () => {
  await tdb?.drop();
});

test('allow-high-priority turns the setting on, --off turns it off again', async () => {
  assert.equal(await highPriorityAllowed(tdb.db, t.workspaceId), false, 'off by default');

  const on = await admin('workspace', 'allow-high-priority', '--workspace', t.workspaceId, '--json');
  assert.equal(on.code, 0, on.stderr);
  assert.deepEqual(JSON.parse(on.stdout), { workspace_id: t.workspaceId, high_priority_allowed: true });
  assert.equal(await highPriorityAllowed(tdb.db, t.workspaceId), true);

  const off = await admin('workspace', 'allow-high-priority', '--workspace', t.workspaceId, '--off');
  assert.equal(off.code, 0, off.stderr);
  assert.match(off.stdout, /may no longer create priority high jobs/);
  assert.equal(await highPriorityAllowed(tdb.db, t.workspaceId), false);
});

test('an unknown workspace is not found (exit 3); a missing --workspace is a usage error (exit 2)', async () => {
  const missing = await admin('workspace', 'allow-high-priority', '--workspace', 'ws_nope');
  assert.equal(missing.code, 3, missing.stderr);
  assert.match(missing.stderr, /workspace ws_nope not found/);
  assert.equal((await admin('workspace', 'allow-high-priority')).code, 2);
});
