// `workspace set-share` of the admin CLI, run as a process against a real database: a tier or a
// weight becomes the workspace's fair-share weight, `workspace show` prints it, the jobs created
// after it carry it, and a weight out of range or an unknown tier is refused with exit code 2.
// A job created while its workspace has fewer than BURST_JOBS in flight carries the weight times
// BURST_JOBS (its burst); from the BURST_JOBS-th job in flight on, the weight as set.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createTenant, createTestDatabase, insertImageJob, type Tenant, type TestDatabase } from '../support/stack.js';
import { BURST_JOBS } from '../../shared/task-priority.js';

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

const weightOf = async () =>
  (await tdb.db.selectFrom('workspaces').select('fair_share_weight').where('id', '=', t.workspaceId).executeTakeFirstOrThrow()).fair_share_weight;

before(async () => {
  tdb = await createTestDatabase();
  t = await createTenant(tdb.db);
  // Only what the CLI needs.
  env = { PATH: process.env.PATH, DATABASE_URL: tdb.url };
});

after(async () => {
  await tdb?.drop();
});

test('a new workspace has the standard share, and show prints it', async () => {
  const r = await admin('workspace', 'show', '--workspace', t.workspaceId);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /fair share 1 \(standard\)/);
  const json = JSON.parse((await admin('workspace', 'show', '--workspace', t.workspaceId, '--json')).stdout);
  assert.equal(json.fair_share_weight, 1);
});

test('a tier sets its weight, and jobs created afterwards carry it while earlier ones keep theirs', async () => {
  const before = await insertImageJob(tdb.db, t);
  const r = await admin('workspace', 'set-share', '--workspace', t.workspaceId, '--tier', 'priority', '--json');
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), { workspace_id: t.workspaceId, fair_share_weight: 3, tier: 'priority', previous_weight: 1 });
  assert.equal(await weightOf(), 3);
  const later = await insertImageJob(tdb.db, t);
  // Both pending: the workspace's first two jobs in flight, its burst.
  assert.equal(before.fairness_weight, 1 * BURST_JOBS);
  assert.equal(later.fairness_weight, 3 * BURST_JOBS);
  assert.match((await admin('workspace', 'show', '--workspace', t.workspaceId)).stdout, /fair share 3 \(priority\)/);

  const bulk = await admin('workspace', 'set-share', '--workspace', t.workspaceId, '--tier', 'bulk');
  assert.equal(bulk.code, 0, bulk.stderr);
  assert.match(bulk.stdout, /fair share 0\.5 \(bulk\) \(was 3 \(priority\)\)/);
});

test("a workspace's burst: its jobs carry weight times BURST_JOBS until BURST_JOBS are in flight, the weight as set from then, and again once they finish", async () => {
  const w = await createTenant(tdb.db);
  assert.equal((await admin('workspace', 'set-share', '--workspace', w.workspaceId, '--weight', '2')).code, 0);
  const burst = [];
  for (let i = 0; i < BURST_JOBS; i++) burst.push(await insertImageJob(tdb.db, w));
  assert.deepEqual(
    burst.map((j) => j.fairness_weight),
    burst.map(() => 2 * BURST_JOBS),
    'the first BURST_JOBS jobs in flight',
  );
  const beyond = await insertImageJob(tdb.db, w);
  assert.equal(beyond.fairness_weight, 2, 'with BURST_JOBS in flight, the weight as set');
  // Generating counts as in flight; finished jobs do not.
  await tdb.db.updateTable('jobs').set({ status: 'generating' }).where('id', '=', beyond.id).execute();
  assert.equal((await insertImageJob(tdb.db, w)).fairness_weight, 2, 'pending and generating jobs are in flight');
  await tdb.db.updateTable('jobs').set({ status: 'completed', finished_at: new Date() }).where('workspace_id', '=', w.workspaceId).execute();
  assert.equal((await insertImageJob(tdb.db, w)).fairness_weight, 2 * BURST_JOBS, 'finished jobs are not in flight');
  // Capped at the 1000 Temporal accepts.
  assert.equal((await admin('workspace', 'set-share', '--workspace', w.workspaceId, '--weight', '1000')).code, 0);
  assert.equal((await insertImageJob(tdb.db, w)).fairness_weight, 1000);
  // Another workspace's jobs in flight do not count.
  assert.equal((await insertImageJob(tdb.db, t)).fairness_weight, 0.5 * BURST_JOBS);
});

test('a weight from 0.001 to 1000 is set as given', async () => {
  for (const w of ['0.001', '2.5', '1000']) {
    const r = await admin('workspace', 'set-share', '--workspace', t.workspaceId, '--weight', w);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(await weightOf(), Number(w));
  }
  assert.match((await admin('workspace', 'show', '--workspace', t.workspaceId)).stdout, /fair share 1000\n/);
});

test('out of range, not a number, an unknown tier, both or neither: exit 2 with a clear message, nothing changed', async () => {
  await admin('workspace', 'set-share', '--workspace', t.workspaceId, '--weight', '2');
  const cases: Array<[string[], RegExp]> = [
    [['--weight', '0'], /--weight: a fair-share weight is a number from 0\.001 to 1000, got "0"/],
    [['--weight', '1000.5'], /from 0\.001 to 1000, got "1000\.5"/],
    [['--weight=-1'], /got "-1"/],
    [['--weight', 'lots'], /got "lots"/],
    [['--weight', '1e3'], /got "1e3"/],
    [['--tier', 'gold'], /--tier must be one of bulk \(0\.5\), standard \(1\), priority \(3\), got "gold"/],
    [['--tier', 'bulk', '--weight', '2'], /give one of --tier or --weight/],
    [[], /give one of --tier or --weight/],
  ];
  for (const [flags, message] of cases) {
    const r = await admin('workspace', 'set-share', '--workspace', t.workspaceId, ...flags);
    assert.equal(r.code, 2, `${flags.join(' ')}: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, message);
  }
  assert.equal(await weightOf(), 2);
});

test('an unknown workspace: exit 3', async () => {
  const r = await admin('workspace', 'set-share', '--workspace', 'ws_nope', '--tier', 'standard');
  assert.equal(r.code, 3, r.stderr);
  assert.match(r.stderr, /workspace ws_nope not found/);
});
