// The event log's numbering on the real Postgres (0120_workspace_events): many transactions of one
// workspace moving jobs at once, each holding its transaction open a while after the move, while a
// reader follows the log with `after=` as GET /v1/events does. The reader must never see a number
// before every smaller one is visible (it reads on from the last seq it saw, so a smaller number
// committed later would be skipped for good), and in the end the log holds every move once,
// numbered 1..N. A number drawn without holding the workspace's counter row to the commit (a
// sequence's nextval) fails this: a transaction that drew first but commits last leaves a hole
// the reader passes.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createTenant, createTestDatabase, insertImageJob, type TestDatabase } from '../support/stack.js';
import {
  appendWorkspaceEvent,
  filterTypes,
  lastWorkspaceSeq,
  listWorkspaceEvents,
  loggedEventTypes,
  type TypeFilter,
} from '../../db/repos/workspace-events.js';

let tdb: TestDatabase;

before(async () => {
  tdb = await createTestDatabase();
});

after(async () => {
  await tdb?.drop();
});

test('concurrent moves of one workspace are numbered gap-free in commit order: a reader following after= never skips one', { timeout: 120_000 }, async () => {
  const t = await createTenant(tdb.db, 1_000_000);
  const jobs = await Promise.all(Array.from({ length: 24 }, () => insertImageJob(tdb.db, t)));
  const base = await lastWorkspaceSeq(tdb.db, t.workspaceId);
  assert.equal(base, jobs.length, 'one job.pending per created job');

  let writing = true;
  const seen: number[] = [];
  const reader = (async () => {
    let afterSeq = base;
    for (;;) {
      const done = !writing;
      const rows = await listWorkspaceEvents(tdb.db, t.workspaceId, { after: afterSeq, limit: 100 });
      for (const r of rows) {
        assert.equal(r.seq, afterSeq + 1, `the reader at ${afterSeq} was handed ${r.seq}: a smaller number was not visible yet`);
        afterSeq = r.seq!;
        seen.push(afterSeq);
      }
      if (done && rows.length === 0) return;
    }
  })();

  // Each job: generating then completed, each move in a transaction that stays open 0–40 ms after
  // the move (so later moves often commit first), plus a budget-style event from app code.
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  await Promise.all(
    jobs.map(async (job, i) => {
      for (const status of ['generating', 'completed'] as const) {
        await tdb.db.transaction().execute(async (tx) => {
          await tx.updateTable('jobs').set({ status }).where('id', '=', job.id).execute();
          if (status === 'completed' && i % 3 === 0)
            await appendWorkspaceEvent(tx, {
              id: `whk_order_${job.id}`,
              workspaceId: t.workspaceId,
              type: 'budget.threshold_reached',
              subjectId: job.id,
              data: { i },
            });
          await sleep(Math.random() * 40);
        });
      }
    }),
  );
  writing = false;
  await reader;

  const expected = jobs.length * 2 + Math.ceil(jobs.length / 3);
  assert.deepEqual(
    seen,
    Array.from({ length: expected }, (_, i) => base + 1 + i),
  );
  const rows = await sql<{ n: number; distinct_ids: number; nulls: number }>`
    select count(*)::int as n, count(distinct id)::int as distinct_ids, count(*) filter (where seq is null)::int as nulls
    from workspace_events where workspace_id = ${t.workspaceId}`.execute(tdb.db);
  assert.deepEqual(rows.rows[0], { n: base + expected, distinct_ids: base + expected, nulls: 0 });
  assert.equal(await lastWorkspaceSeq(tdb.db, t.workspaceId), base + expected);
});

test('a rolled-back move gives its number back: no hole', async () => {
  const t = await createTenant(tdb.db, 1000);
  const job = await insertImageJob(tdb.db, t);
  await assert.rejects(
    tdb.db.transaction().execute(async (tx) => {
      await tx.updateTable('jobs').set({ status: 'generating' }).where('id', '=', job.id).execute();
      throw new Error('rolled back');
    }),
    /rolled back/,
  );
  await tdb.db.updateTable('jobs').set({ status: 'generating' }).where('id', '=', job.id).execute();
  const events = await listWorkspaceEvents(tdb.db, t.workspaceId, { after: 0, limit: 10 });
  assert.deepEqual(
    events.map((e) => [e.seq, e.type]),
    [
      [1, 'job.pending'],
      [2, 'job.generating'],
    ],
  );
});

test('a type filter pages through its types in seq order, each read from its own range however rare it is in the log', async () => {
  const t = await createTenant(tdb.db, 1000);
  // A log of job moves with a budget alert and a pipeline event among them, then more moves.
  const jobs = await Promise.all(Array.from({ length: 6 }, () => insertImageJob(tdb.db, t)));
  const other = (id: string, type: string) => appendWorkspaceEvent(tdb.db, { id, workspaceId: t.workspaceId, type, subjectId: t.workspaceId, data: { id } });
  await other(`${t.workspaceId}-budget-1`, 'budget.threshold_reached');
  for (const job of jobs.slice(0, 3)) await tdb.db.updateTable('jobs').set({ status: 'generating' }).where('id', '=', job.id).execute();
  await other(`${t.workspaceId}-pipeline-1`, 'pipeline.completed');
  await other(`${t.workspaceId}-budget-2`, 'budget.threshold_reached');
  for (const job of jobs.slice(3)) await tdb.db.updateTable('jobs').set({ status: 'generating' }).where('id', '=', job.id).execute();

  const all = await listWorkspaceEvents(tdb.db, t.workspaceId, { after: 0, limit: 100 });
  assert.equal(all.length, 15);
  /** Every page of `limit` under the filter, read on from each page's last seq. */
  const readAll = async (types: TypeFilter, limit: number) => {
    const out: string[] = [];
    for (let after = 0; ;) {
      const page = await listWorkspaceEvents(tdb.db, t.workspaceId, { after, limit, types });
      out.push(...page.map((e) => e.id));
      if (page.length < limit) return out;
      after = Number(page[page.length - 1]!.seq);
    }
  };
  const kept = (keep: (type: string) => boolean) => all.filter((e) => keep(e.type)).map((e) => e.id);
  assert.deepEqual(
    await readAll({ exact: ['budget.threshold_reached'], prefixes: ['pipeline'] }, 2),
    kept((x) => x.startsWith('budget.') || x.startsWith('pipeline.')),
  );
  assert.deepEqual(
    await readAll({ exact: ['job.generating'], prefixes: [] }, 4),
    kept((x) => x === 'job.generating'),
  );
  assert.deepEqual(
    await readAll({ exact: [], prefixes: ['job', 'budget'] }, 5),
    kept((x) => x.startsWith('job.') || x.startsWith('budget.')),
  );
  assert.deepEqual(await readAll({ exact: ['job.nothing'], prefixes: [] }, 5), []);
});

test("a family filter knows every type of its family: the jobs table's statuses are the job family's types", async () => {
  // 0120's trigger writes `job.<status>` for every status a job can take: a status the family's list
  // lacked would vanish from `types=job.*`.
  const r = await sql<{ def: string }>`
    select pg_get_constraintdef(c.oid) as def from pg_constraint c
     where c.conrelid = 'jobs'::regclass and c.contype = 'c' and pg_get_constraintdef(c.oid) like '%status%'`.execute(tdb.db);
  const statuses = new Set(r.rows.flatMap((row) => [...row.def.matchAll(/'([a-z_]+)'::text/g)].map((m) => m[1])));
  assert.ok(statuses.size > 0, `a status check on jobs: ${r.rows.map((x) => x.def).join('; ')}`);
  assert.deepEqual([...loggedEventTypes.job!].sort(), [...statuses].map((s) => `job.${s}`).sort());
  assert.deepEqual(filterTypes({ exact: ['job.completed'], prefixes: ['job'] }), [...loggedEventTypes.job!].sort());
});
