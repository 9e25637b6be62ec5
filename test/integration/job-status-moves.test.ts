// The legal status moves of db/repos/jobs.ts on the real Postgres, credits checked after each:
// pending → generating → completed | failed; failed → generating only for another workflow run (a
// reset); a completed job is never failed nor refunded; and when completion and failure race in
// two transactions, exactly one wins and the credits match it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, createTestDatabase, type Tenant, type TestDatabase } from '../support/stack.js';
import { creditsOf } from '../support/services.js';
import { newId } from '../../shared/ids.js';
import * as jobs from '../../db/repos/jobs.js';
import type { Tx } from '../../db/index.js';

let tdb: TestDatabase;
const price = 10;

before(async () => {
  tdb = await createTestDatabase();
});
after(async () => {
  await tdb?.drop();
});

async function newJob(t: Tenant): Promise<string> {
  const id = newId('img');
  await tdb.db.transaction().execute((tx) =>
    jobs.insertJobWithCharge(tx, { id, kind: 'image', workspaceId: t.workspaceId, projectId: t.projectId, apiKeyId: t.apiKeyId, model: 'nano-banana-2', params: {}, price }),
  );
  return id;
}

const tx = <T>(fn: (t: Tx) => Promise<T>) => tdb.db.transaction().execute(fn);
const generating = (id: string, runId: string) => tx((t) => jobs.markGenerating(t, id, runId));
const completed = (id: string, runId = 'run-a') => tx((t) => jobs.markCompleted(t, id, [{ key: `jobs/${id}/x/output-0.png`, content_type: 'image/png', size: 1 }], runId));
const failed = (id: string, runId: string | null) => tx((t) => jobs.markFailed(t, id, { code: 'canceled', message: 'canceled' }, runId));
const statusOf = async (id: string) => (await jobs.getJob(tdb.db, id))!.status;
const reasons = async (id: string) => (await jobs.ledgerForJob(tdb.db, id)).map((l) => l.reason);

describe('job status moves', () => {
  test('the table of moves is the one the design states', () => {
    assert.deepEqual(jobs.statusMoves, { generating: ['pending', 'generating', 'failed'], completed: ['generating'], failed: ['pending', 'generating'] });
  });

  test('a completed job is never failed, refunded nor started again', async () => {
    const t = await createTenant(tdb.db, 100);
    const id = await newJob(t);
    await generating(id, 'run-a');
    await completed(id);
    assert.deepEqual(await failed(id, 'run-a'), { moved: false, refunded: 0, status: 'completed' });
    assert.deepEqual(await failed(id, null), { moved: false, refunded: 0, status: 'completed' });
    await assert.rejects(generating(id, 'run-b'), jobs.IllegalStatusMoveError);
    assert.equal((await completed(id)).charged, 0, 'completing again (a retried activity) changes nothing');
    assert.equal(await statusOf(id), 'completed');
    assert.equal(await creditsOf(tdb.db, t), 100 - price);
    assert.deepEqual(await reasons(id), ['charge']);
  });

  test('a failed job cannot complete: it stays failed and refunded', async () => {
    const t = await createTenant(tdb.db, 100);
    const id = await newJob(t);
    await generating(id, 'run-a');
    assert.deepEqual(await failed(id, 'run-a'), { moved: true, refunded: price, status: 'failed' });
    await assert.rejects(completed(id), (err: Error) => err instanceof jobs.IllegalStatusMoveError && /failed and cannot become completed/.test(err.message));
    assert.equal(await statusOf(id), 'failed');
    assert.equal(await creditsOf(tdb.db, t), 100);
    assert.deepEqual(await reasons(id), ['charge', 'refund']);
  });

  test('markGenerating records that the workflow runs, even when the gateway never heard its start succeed', async () => {
    const t = await createTenant(tdb.db, 100);
    const id = await newJob(t);
    assert.equal((await jobs.getJob(tdb.db, id))!.workflow_started, false);
    await generating(id, 'run-a');
    const row = (await jobs.getJob(tdb.db, id))!;
    assert.deepEqual([row.status, row.workflow_started, row.status_run_id], ['generating', true, 'run-a']);
  });

  test('a pending job cannot complete without having started', async () => {
    const t = await createTenant(tdb.db, 100);
    const id = await newJob(t);
    await assert.rejects(completed(id), jobs.IllegalStatusMoveError);
    assert.equal(await statusOf(id), 'pending');
    assert.equal(await creditsOf(tdb.db, t), 100 - price);
  });

  test('failed → generating: refused to the run that failed it, allowed to another run (a reset), which re-charges once', async () => {
    const t = await createTenant(tdb.db, 100);
    const id = await newJob(t);
    await generating(id, 'run-a');
    await failed(id, 'run-a');
    await assert.rejects(generating(id, 'run-a'), jobs.IllegalStatusMoveError);
    assert.equal(await statusOf(id), 'failed');
    assert.equal(await creditsOf(tdb.db, t), 100, 'the refused move charged nothing');

    await generating(id, 'run-b');
    await generating(id, 'run-b'); // a retried activity of the reset run
    assert.equal(await statusOf(id), 'generating');
    assert.equal(await creditsOf(tdb.db, t), 100 - price);
    await completed(id, 'run-b');
    assert.deepEqual(await reasons(id), ['charge', 'refund', 'recharge']);
    assert.equal(await creditsOf(tdb.db, t), 100 - price);
  });

  test('a job canceled before any workflow ran is never revived, whatever run asks', async () => {
    const t = await createTenant(tdb.db, 100);
    const id = await newJob(t);
    assert.deepEqual(await failed(id, null), { moved: true, refunded: price, status: 'failed' });
    for (const run of ['run-a', 'run-b']) await assert.rejects(generating(id, run), jobs.IllegalStatusMoveError);
    assert.equal(await statusOf(id), 'failed');
    assert.equal(await creditsOf(tdb.db, t), 100);
    assert.deepEqual(await reasons(id), ['charge', 'refund']);
    assert.deepEqual(await failed(id, 'run-a'), { moved: false, refunded: 0, status: 'failed' }, 'failing again changes nothing');
  });

  test('completion and failure racing in two transactions: exactly one wins, and the credits follow it', async () => {
    const t = await createTenant(tdb.db, 10_000);
    const outcomes = { completed: 0, failed: 0 };
    for (let i = 0; i < 20; i++) {
      const id = await newJob(t);
      await generating(id, 'run-a');
      const [c, f] = await Promise.allSettled([completed(id), failed(id, 'run-a')]);
      const status = await statusOf(id);
      outcomes[status as 'completed' | 'failed']++;
      const net = (await jobs.ledgerForJob(tdb.db, id)).reduce((sum, l) => sum - Number(l.delta), 0);
      if (status === 'completed') {
        assert.equal(c.status, 'fulfilled');
        assert.deepEqual(f.status === 'fulfilled' && f.value, { moved: false, refunded: 0, status: 'completed' });
        assert.equal(net, price, 'a completed job keeps its charge');
      } else {
        assert.equal(status, 'failed');
        assert.equal(c.status, 'rejected');
        assert.equal(net, 0, 'a failed job is refunded');
      }
    }
    const jobsCount = 20;
    const charged = outcomes.completed * price;
    assert.equal(await creditsOf(tdb.db, t), 10_000 - charged, `credits match ${JSON.stringify(outcomes)} of ${jobsCount}`);
  });
});
