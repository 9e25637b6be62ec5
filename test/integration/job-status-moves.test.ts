// The legal status moves of the job service (jobs/) on the real Postgres, credits checked after each:
// pending → generating → completed | failed; failed → generating only for another workflow run (a
// reset); a completed job is never failed nor refunded; and when completion and failure race in
// two transactions, exactly one wins and the credits match it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createTenant, createTestDatabase, type Tenant, type TestDatabase } from '../support/stack.js';
import { creditsOf } from '../support/services.js';
import { newId } from '../../shared/ids.js';
import * as jobs from '../../db/repos/jobs.js';
import * as leases from '../../db/repos/job-leases.js';
import type { Tx } from '../../db/index.js';
import { completeJob, createJobService, fromStatuses, IllegalStatusMoveError, inFlightStatuses, type JobService } from '../../jobs/index.js';
import { createStorage } from '../../shared/storage.js';
import { ledgerForJob } from '../support/ledger.js';
import { testConfig } from '../support/stack.js';
import { needsRemoteFetch, nextPhaseSql } from '../../activities/jobs.js';

let tdb: TestDatabase;
let service: JobService;
const price = 10;

before(async () => {
  tdb = await createTestDatabase();
  service = createJobService({ db: tdb.db, storage: createStorage(testConfig(tdb.url)) });
});
after(async () => {
  await tdb?.drop();
});

async function newJob(t: Tenant, kind: jobs.NewJobInput['kind'] = 'image', params: Record<string, unknown> = {}): Promise<string> {
  const id = newId('img');
  await tdb.db
    .transaction()
    .execute((tx) =>
      jobs.insertJobWithCharge(tx, {
        id,
        kind,
        workspaceId: t.workspaceId,
        projectId: t.projectId,
        apiKeyId: t.apiKeyId,
        model: 'nano-banana-2',
        params,
        price,
      }),
    );
  return id;
}

const tx = <T>(fn: (t: Tx) => Promise<T>) => tdb.db.transaction().execute(fn);
const generating = (id: string, runId: string) => service.claim(id, runId);
// The service's completion in a transaction of the test's own: the answer says what it charged.
const completed = (id: string, runId = 'run-a') =>
  tx((t) => completeJob(t, id, [{ key: `jobs/${id}/x/output-0.png`, content_type: 'image/png', size: 1 }], runId));
const failedWith = (code: 'canceled' | 'generation_failed') => async (id: string, runId: string | null) => {
  const { moved, refunded, status } = await service.fail(id, { code, message: code }, runId);
  return { moved, refunded, status };
};
const failed = failedWith('canceled');
const failedByProvider = failedWith('generation_failed');
const statusOf = async (id: string) => (await jobs.getJob(tdb.db, id))!.status;
const reasons = async (id: string) => (await ledgerForJob(tdb.db, id)).map((l) => l.reason);

describe('creating a job: one statement (project, conditional debit, job row, ledger charge)', () => {
  const input = (t: Tenant, over: Partial<jobs.NewJobInput> = {}): jobs.NewJobInput => ({
    id: newId('img'),
    kind: 'image',
    workspaceId: t.workspaceId,
    projectId: t.projectId,
    apiKeyId: t.apiKeyId,
    model: 'nano-banana-2',
    params: { prompt: 'a fox' },
    price,
    ...over,
  });
  const rowsOf = async (id: string) => ({ job: await jobs.getJob(tdb.db, id), ledger: await ledgerForJob(tdb.db, id) });

  test('writes the pending job, debits its price and records the charge', async () => {
    const t = await createTenant(tdb.db, 25);
    const job = await jobs.insertJobWithCharge(tdb.db, input(t, { webhook: { url: 'https://example.test/hook', events: ['completed'] } }));
    assert.equal(job.status, 'pending');
    assert.equal(job.price, price);
    assert.deepEqual(job.params, { prompt: 'a fox' });
    assert.deepEqual([job.webhook_url, job.webhook_events], ['https://example.test/hook', ['completed']]);
    assert.ok(job.created_at instanceof Date);
    assert.deepEqual(await jobs.getJob(tdb.db, job.id), job, 'the answer is the stored row');
    assert.equal(await creditsOf(tdb.db, t), 25 - price);
    assert.deepEqual(
      (await ledgerForJob(tdb.db, job.id)).map((l) => [l.reason, Number(l.delta), l.job_seq]),
      [['charge', -price, 1]],
    );
  });

  test("another workspace's project is refused and nothing is written", async () => {
    const [t, other] = [await createTenant(tdb.db, 100), await createTenant(tdb.db, 100)];
    const job = input(t, { projectId: other.projectId });
    await assert.rejects(jobs.insertJobWithCharge(tdb.db, job), jobs.ProjectNotInWorkspaceError);
    await assert.rejects(jobs.insertJobWithCharge(tdb.db, input(t, { projectId: 'prj_missing' })), jobs.ProjectNotInWorkspaceError);
    assert.deepEqual(await rowsOf(job.id), { job: undefined, ledger: [] });
    assert.deepEqual([await creditsOf(tdb.db, t), await creditsOf(tdb.db, other)], [100, 100]);
  });

  test('too few credits are refused with the balance, and nothing is written', async () => {
    const t = await createTenant(tdb.db, price - 1);
    const job = input(t);
    await assert.rejects(jobs.insertJobWithCharge(tdb.db, job), (err: unknown) => {
      assert.ok(err instanceof jobs.InsufficientCreditsError);
      assert.deepEqual([err.required, err.available], [price, price - 1]);
      return true;
    });
    assert.deepEqual(await rowsOf(job.id), { job: undefined, ledger: [] });
    assert.equal(await creditsOf(tdb.db, t), price - 1);
  });

  test('a free job is created without debiting, even from an empty workspace', async () => {
    const t = await createTenant(tdb.db, 0);
    const job = await jobs.insertJobWithCharge(tdb.db, input(t, { price: 0 }));
    assert.equal(job.status, 'pending');
    assert.equal(await creditsOf(tdb.db, t), 0);
    assert.deepEqual(
      (await ledgerForJob(tdb.db, job.id)).map((l) => [l.reason, Number(l.delta)]),
      [['charge', 0]],
    );
  });

  test('inside a transaction that rolls back, nothing stays', async () => {
    const t = await createTenant(tdb.db, 100);
    const job = input(t);
    await assert.rejects(
      tx(async (trx) => {
        await jobs.insertJobWithCharge(trx, job);
        throw new Error('rolled back after the create');
      }),
      /rolled back/,
    );
    assert.deepEqual(await rowsOf(job.id), { job: undefined, ledger: [] });
    assert.equal(await creditsOf(tdb.db, t), 100);
  });

  test('30 creates racing for credits enough for 7: exactly 7 are created, the balance ends at 0', async () => {
    const t = await createTenant(tdb.db, 7 * price);
    const results = await Promise.allSettled(Array.from({ length: 30 }, () => jobs.insertJobWithCharge(tdb.db, input(t))));
    const created = results.filter((r) => r.status === 'fulfilled');
    const refused = results.filter((r) => r.status === 'rejected');
    assert.equal(created.length, 7);
    for (const r of refused) assert.ok(r.reason instanceof jobs.InsufficientCreditsError, String(r.reason));
    assert.equal(await creditsOf(tdb.db, t), 0);
    const charges = await tdb.db
      .selectFrom('credit_ledger')
      .select((eb) => eb.fn.sum<string>('delta').as('sum'))
      .where('workspace_id', '=', t.workspaceId)
      .where('reason', '=', 'charge')
      .executeTakeFirstOrThrow();
    assert.equal(Number(charges.sum), -7 * price);
  });
});

describe('job status moves', () => {
  test('the table of moves is the one the design states', () => {
    const sources = { generating: fromStatuses('generating'), completed: fromStatuses('completed'), failed: fromStatuses('failed') };
    assert.deepEqual(sources, { generating: ['pending', 'generating', 'failed'], completed: ['generating'], failed: ['pending', 'generating'] });
  });

  test('a completed job is never failed, refunded nor started again', async () => {
    const t = await createTenant(tdb.db, 100);
    const id = await newJob(t);
    await generating(id, 'run-a');
    await completed(id);
    assert.deepEqual(await failed(id, 'run-a'), { moved: false, refunded: 0, status: 'completed' });
    assert.deepEqual(await failed(id, null), { moved: false, refunded: 0, status: 'completed' });
    await assert.rejects(generating(id, 'run-b'), IllegalStatusMoveError);
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
    await assert.rejects(completed(id), (err: Error) => err instanceof IllegalStatusMoveError && /failed and cannot become completed/.test(err.message));
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
    await assert.rejects(completed(id), IllegalStatusMoveError);
    assert.equal(await statusOf(id), 'pending');
    assert.equal(await creditsOf(tdb.db, t), 100 - price);
  });

  test('failed → generating: refused to the run that failed it, allowed to another run (a reset), which re-charges once', async () => {
    const t = await createTenant(tdb.db, 100);
    const id = await newJob(t);
    await generating(id, 'run-a');
    await failedByProvider(id, 'run-a');
    await assert.rejects(generating(id, 'run-a'), IllegalStatusMoveError);
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
    for (const run of ['run-a', 'run-b']) await assert.rejects(generating(id, run), IllegalStatusMoveError);
    assert.equal(await statusOf(id), 'failed');
    assert.equal(await creditsOf(tdb.db, t), 100);
    assert.deepEqual(await reasons(id), ['charge', 'refund']);
    assert.deepEqual(await failed(id, 'run-a'), { moved: false, refunded: 0, status: 'failed' }, 'failing again changes nothing');
  });

  test('every move is fenced by its run: a step of another run cannot fail, complete or record a request for the run that holds the job', async () => {
    const t = await createTenant(tdb.db, 100);
    const id = await newJob(t);
    await generating(id, 'run-a');
    // An operator's reset: run-b claims the job from run-a (terminated by the reset).
    assert.equal((await generating(id, 'run-b')).claim, 'take');
    assert.deepEqual(await failedByProvider(id, 'run-a'), { moved: false, refunded: 0, status: 'generating' }, 'a late step of run-a refunds nothing');
    assert.equal(await jobs.recordProviderRef(tdb.db, id, 'run-a', { requestId: 'from-a' }), false, 'run-a records no request');
    assert.equal(await jobs.recordProviderRef(tdb.db, id, 'run-b', { requestId: 'from-b' }), true);
    const completedByB = await completed(id, 'run-b');
    assert.equal(completedByB.job.status_run_id, 'run-b');
    assert.equal(await creditsOf(tdb.db, t), 100 - price);
    assert.deepEqual(await reasons(id), ['charge']);
  });

  test("a reset run's first database step may be any step: completing claims a failed job, re-charging it once", async () => {
    const t = await createTenant(tdb.db, 100);
    const id = await newJob(t);
    await generating(id, 'run-a');
    await jobs.recordProviderRef(tdb.db, id, 'run-a', { requestId: 'from-a' });
    await failedByProvider(id, 'run-a');
    assert.deepEqual(
      (await jobs.getJob(tdb.db, id))!.provider_ref,
      { requestId: 'from-a' },
      'the failed run keeps its request for the cancel after the refund',
    );
    const { charged, job } = await completed(id, 'run-b');
    assert.equal(charged, 0, 'the claim re-charged it; completing settles nothing more');
    assert.equal(job.status, 'completed');
    assert.deepEqual(await reasons(id), ['charge', 'refund', 'recharge']);
    assert.equal(await creditsOf(tdb.db, t), 100 - price);
  });

  test("a revived job forgets the failed run's provider request; a taken-over one keeps it (it may still run)", async () => {
    const t = await createTenant(tdb.db, 100);
    const revived = await newJob(t);
    await generating(revived, 'run-a');
    await jobs.recordProviderRef(tdb.db, revived, 'run-a', { requestId: 'canceled-with-the-failure' });
    await failedByProvider(revived, 'run-a');
    assert.equal((await generating(revived, 'run-b')).claim, 'revive');
    assert.equal((await jobs.getJob(tdb.db, revived))!.provider_ref, null);

    const taken = await newJob(t);
    await generating(taken, 'run-a');
    await jobs.recordProviderRef(tdb.db, taken, 'run-a', { requestId: 'still-running' });
    assert.equal((await generating(taken, 'run-b')).claim, 'take');
    assert.deepEqual((await jobs.getJob(tdb.db, taken))!.provider_ref, { requestId: 'still-running' });
  });

  test('a job failed by a cancel is never revived: not by a reset run claiming it, nor by one completing it', async () => {
    const t = await createTenant(tdb.db, 100);
    const id = await newJob(t);
    await generating(id, 'run-a');
    await failed(id, 'run-a');
    await assert.rejects(generating(id, 'run-b'), (err: Error) => err instanceof IllegalStatusMoveError && /it was canceled/.test(err.message));
    await assert.rejects(completed(id, 'run-b'), (err: Error) => err instanceof IllegalStatusMoveError && /it was canceled/.test(err.message));
    assert.equal(await statusOf(id), 'failed');
    assert.equal(await creditsOf(tdb.db, t), 100);
    assert.deepEqual(await reasons(id), ['charge', 'refund']);
  });

  test('a reset run that cannot be paid for is refused with the balance, and the job stays failed and refunded', async () => {
    const t = await createTenant(tdb.db, price);
    const id = await newJob(t);
    await generating(id, 'run-a');
    await failedByProvider(id, 'run-a');
    await tdb.db
      .updateTable('workspaces')
      .set({ credits: price - 1 })
      .where('id', '=', t.workspaceId)
      .execute();
    await assert.rejects(generating(id, 'run-b'), jobs.InsufficientCreditsError);
    assert.equal(await statusOf(id), 'failed');
    assert.deepEqual(await reasons(id), ['charge', 'refund']);
    assert.equal(await creditsOf(tdb.db, t), price - 1);
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
      const net = (await ledgerForJob(tdb.db, id)).reduce((sum, l) => sum - Number(l.delta), 0);
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

  // The one-statement moves every job takes on its happy path (startPendingJob, completeGeneratingJob).
  describe('one-statement moves', () => {
    const outputs = [{ key: 'jobs/x/output-1.png', content_type: 'image/png', size: 1 }];

    test('pending → generating in one UPDATE: run id, workflow_started and the phase set, nothing settled', async () => {
      const t = await createTenant(tdb.db, 100);
      const id = await newJob(t);
      const row = await jobs.startPendingJob(tdb.db, id, 'run-a', { phase: 'submitting', attempt: 2 });
      assert.deepEqual(row && [row.status, row.status_run_id, row.workflow_started, row.phase, row.attempt], ['generating', 'run-a', true, 'submitting', 2]);
      assert.ok(row!.started_at);
      assert.deepEqual(await reasons(id), ['charge']);
      assert.equal(await creditsOf(tdb.db, t), 100 - price);
      // Not pending any more: the caller takes the settling transaction.
      assert.equal(await jobs.startPendingJob(tdb.db, id, 'run-a'), undefined);
    });

    test('only a pending job takes it: generating, completed and failed jobs are left as they are', async () => {
      const t = await createTenant(tdb.db, 100);
      const done = await newJob(t);
      await generating(done, 'run-a');
      await completed(done);
      const gone = await newJob(t);
      await failed(gone, null);
      for (const id of [done, gone]) {
        const before = await jobs.getJob(tdb.db, id);
        assert.equal(await jobs.startPendingJob(tdb.db, id, 'run-b'), undefined);
        assert.deepEqual(await jobs.getJob(tdb.db, id), before);
      }
      assert.deepEqual(await reasons(gone), ['charge', 'refund'], 'a job canceled before its workflow ran is not revived nor charged');
    });

    test('a job whose ledger does not net to its price takes the settling path instead', async () => {
      const t = await createTenant(tdb.db, 100);
      const id = await newJob(t);
      // A hand-made refund (the invariant broken from outside): the one-statement start refuses.
      await tdb.db
        .insertInto('credit_ledger')
        .values({ workspace_id: t.workspaceId, job_id: id, job_seq: 2, delta: price, reason: 'refund', note: 'test' })
        .execute();
      assert.equal(await jobs.startPendingJob(tdb.db, id, 'run-a'), undefined);
      await generating(id, 'run-a');
      assert.deepEqual(await reasons(id), ['charge', 'refund', 'recharge'], 'markGenerating charged it again');
    });

    test('generating → completed in one UPDATE; a job failed or completed meanwhile is left to markCompleted', async () => {
      const t = await createTenant(tdb.db, 100);
      const id = await newJob(t);
      await generating(id, 'run-a');
      const row = await jobs.completeGeneratingJob(tdb.db, id, outputs, 'run-a', {
        providerRef: { provider: 'local' },
        progress: { phase: 'completed', attempt: 1, percent: 100 },
      });
      assert.deepEqual(row && [row.status, row.outputs, row.provider_ref, row.phase, row.percent], [
        'completed',
        outputs,
        { provider: 'local' },
        'completed',
        100,
      ]);
      assert.ok(row!.finished_at);
      assert.equal(await jobs.completeGeneratingJob(tdb.db, id, outputs, 'run-a'), undefined, 'completed already');
      const canceled = await newJob(t);
      await generating(canceled, 'run-a');
      await failed(canceled, 'run-a');
      assert.equal(await jobs.completeGeneratingJob(tdb.db, canceled, outputs, 'run-a'), undefined, 'failed meanwhile');
      assert.equal(await statusOf(canceled), 'failed');
      assert.deepEqual(await reasons(id), ['charge']);
      assert.deepEqual(await reasons(canceled), ['charge', 'refund']);
      assert.equal(await creditsOf(tdb.db, t), 100 - price);
    });

    test('completion racing a cancel, one statement against a transaction: one wins, credits follow it', async () => {
      const t = await createTenant(tdb.db, 10_000);
      let completedJobs = 0;
      for (let i = 0; i < 20; i++) {
        const id = await newJob(t);
        await generating(id, 'run-a');
        const [c] = await Promise.all([jobs.completeGeneratingJob(tdb.db, id, outputs, 'run-a'), failed(id, 'run-a')]);
        const status = await statusOf(id);
        const net = (await ledgerForJob(tdb.db, id)).reduce((sum, l) => sum - Number(l.delta), 0);
        assert.equal(net, status === 'completed' ? price : 0);
        assert.equal(c !== undefined, status === 'completed');
        if (status === 'completed') completedJobs++;
      }
      assert.equal(await creditsOf(tdb.db, t), 10_000 - completedJobs * price);
    });

    test("the start's phase in SQL is needsRemoteFetch's answer for every kind of params", async () => {
      const t = await createTenant(tdb.db, 1000);
      const cases: [jobs.NewJobInput['kind'], Record<string, unknown>][] = [
        ['image', { prompt: 'p' }],
        ['video', { prompt: 'p', start_frame_file_id: 'upl_1' }],
        ['talking_actor', { script: 's' }],
        ['replace_actor', { image_file_id: 'upl_1', video_file_id: 'upl_2' }],
        ['replace_actor', { image_url: 'https://example.test/a.png', video_url: 'https://example.test/a.mp4' }],
        ['replace_actor', { image_file_id: 'upl_1', video_url: 'https://example.test/a.mp4' }],
        ['replace_actor', { image_file_id: '', video_file_id: 'upl_2' }],
      ];
      for (const [kind, params] of cases) {
        const id = await newJob(t, kind, params);
        const row = await jobs.startPendingJob(tdb.db, id, 'run-a', { phase: nextPhaseSql, attempt: 1 });
        assert.equal(row?.phase, needsRemoteFetch(row!) ? 'fetching_inputs' : 'submitting', `${kind} ${JSON.stringify(params)}`);
      }
    });
  });
});

describe("run claims and stale rows (resets and the reconciler's repairs)", () => {
  /** The claim time in microseconds, as Postgres keeps it. */
  const claimedAt = async (id: string) =>
    (
      await tdb.db
        .selectFrom('jobs')
        .select(sql<string>`(extract(epoch from claimed_at) * 1000000)::bigint::text`.as('us'))
        .where('id', '=', id)
        .executeTakeFirstOrThrow()
    ).us;

  test("a run taking or reviving the job restarts its claim time (the deadline's start); the run repeating its own claim keeps it", async () => {
    const t = await createTenant(tdb.db, 100);
    const id = await newJob(t);
    const started = await jobs.startPendingJob(tdb.db, id, 'run-a');
    assert.ok(started?.claimed_at, 'the first claim is timed');
    const a = await claimedAt(id);
    await service.claim(id, 'run-a', { phase: () => 'submitting', phaseSql: 'submitting', attempt: 2 }); // the first step retried after its commit
    assert.equal(await claimedAt(id), a, 'the same run keeps its claim time');
    await generating(id, 'run-b'); // a reset run taking over a job still generating
    const b = await claimedAt(id);
    assert.ok(BigInt(b) > BigInt(a), 'a take restarts it');
    await failedByProvider(id, 'run-b');
    await generating(id, 'run-c'); // a reset run reviving the failed job
    assert.ok(BigInt(await claimedAt(id)) > BigInt(b), 'a revival restarts it');
  });

  test('stale rows in flight: only those unwritten for the bound are claimed, and one checked comes back only a bound later', async () => {
    const t = await createTenant(tdb.db, 100);
    const hourAgo = sql<Date>`now() - interval '1 hour'`;
    const stale = await newJob(t);
    await generating(stale, 'run-a');
    const fresh = await newJob(t);
    await generating(fresh, 'run-a');
    const unstarted = await newJob(t); // pending, its workflow never marked started: the unstarted pass's
    const done = await newJob(t);
    await generating(done, 'run-a');
    await completed(done, 'run-a');
    await tdb.db.updateTable('jobs').set({ updated_at: hourAgo }).where('id', 'in', [stale, unstarted, done]).execute();
    const mine = new Set([stale, fresh, unstarted, done]);
    const claimStale = async () =>
      (await leases.claimStaleInFlightJobs(tdb.db, inFlightStatuses, 30 * 60_000, 100, 60_000)).map((j) => j.id).filter((id) => mine.has(id));

    assert.deepEqual(await claimStale(), [stale]);
    assert.deepEqual(await claimStale(), [], 'leased');
    await leases.releaseLeases(tdb.db, [stale]);
    assert.deepEqual(await claimStale(), [], 'checked within the bound: not again');
    // Still held by no one, it is claimable by the closed-runs pass at once.
    assert.deepEqual(
      (await leases.claimInFlightJobs(tdb.db, inFlightStatuses, [stale], 60_000)).map((j) => j.id),
      [stale],
    );
    await tdb.db.updateTable('jobs').set({ reconcile_lease_until: hourAgo }).where('id', '=', stale).execute();
    assert.deepEqual(await claimStale(), [stale], 'a bound after its check, it is checked again');
  });
});
