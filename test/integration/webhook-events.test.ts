// Where webhook events are emitted: the 0007_webhooks trigger writes one outbox row per requested
// status move, in the moving transaction. On real Postgres, through the same repository functions
// the activities, the cancel path and the reconciler use: a repeated move (an activity retried after
// its commit) emits nothing; an operator reset (failed → generating in another run) emits the moves
// it really makes; events not asked for, and jobs without a webhook_url, emit nothing.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, createTestDatabase, insertImageJob, type Tenant, type TestDatabase } from '../support/stack.js';
// The job service's status moves, in a transaction of the test's own.
import * as jobMoves from '../../jobs/index.js';
import { deliveriesOfJob } from '../../db/repos/webhooks.js';
import type { WebhookEventName } from '../../db/schema.js';
import type { Tx } from '../../db/index.js';

let tdb: TestDatabase;
let t: Tenant;

before(async () => {
  tdb = await createTestDatabase();
  t = await createTenant(tdb.db, 1000);
});

after(async () => {
  await tdb?.drop();
});

async function jobWithWebhook(events: WebhookEventName[] | null): Promise<string> {
  const job = await insertImageJob(tdb.db, t);
  if (events) await tdb.db.updateTable('jobs').set({ webhook_url: 'https://hooks.example.com/x', webhook_events: events }).where('id', '=', job.id).execute();
  return job.id;
}

const tx = <T>(fn: (x: Tx) => Promise<T>) => tdb.db.transaction().execute(fn);
const types = async (jobId: string) => (await deliveriesOfJob(tdb.db, jobId)).map((d) => d.type);

test('retries emit nothing more; a reset emits the moves it really makes; ids are stable and distinct', async () => {
  const id = await jobWithWebhook(['generating', 'completed', 'failed']);
  await tx((x) => jobMoves.claimJob(x, id, 'run-1'));
  await tx((x) => jobMoves.claimJob(x, id, 'run-1')); // the activity retried after its commit
  assert.deepEqual(await types(id), ['job.generating']);

  await tx((x) => jobMoves.failJob(x, id, { code: 'generation_failed', message: 'boom' }, 'run-1'));
  await tx((x) => jobMoves.failJob(x, id, { code: 'generation_failed', message: 'boom' }, 'run-1'));
  assert.deepEqual(await types(id), ['job.generating', 'job.failed']);

  // An operator Reset: a new run moves the failed job again, and completes it (twice: a retry).
  await tx((x) => jobMoves.claimJob(x, id, 'run-2'));
  await tx((x) => jobMoves.completeJob(x, id, [{ key: 'k', content_type: 'image/png', size: 1 }], 'run-2'));
  await tx((x) => jobMoves.completeJob(x, id, [{ key: 'k', content_type: 'image/png', size: 1 }], 'run-2'));
  const rows = await deliveriesOfJob(tdb.db, id);
  assert.deepEqual(
    rows.map((r) => r.type),
    ['job.generating', 'job.failed', 'job.generating', 'job.completed'],
  );
  assert.equal(new Set(rows.map((r) => r.id)).size, 4);
  for (const r of rows) assert.match(r.id, new RegExp(`^whk_${id}_\\d+$`));
  assert.equal(rows[3]!.job.status, 'completed');
  assert.equal(rows[1]!.job.status, 'failed', 'each row holds the job as its move left it');
});

test('only the events asked for; no webhook_url, no events; a failed cancel before any run emits job.failed', async () => {
  const terminal = await jobWithWebhook(['completed', 'failed']);
  await tx((x) => jobMoves.claimJob(x, terminal, 'run-1'));
  await tx((x) => jobMoves.completeJob(x, terminal, [], 'run-1'));
  assert.deepEqual(await types(terminal), ['job.completed']);

  const none = await jobWithWebhook(null);
  await tx((x) => jobMoves.claimJob(x, none, 'run-1'));
  await tx((x) => jobMoves.completeJob(x, none, [], 'run-1'));
  assert.deepEqual(await types(none), []);

  const canceled = await jobWithWebhook(['failed']);
  await tx((x) => jobMoves.failJob(x, canceled, { code: 'canceled', message: 'the job was canceled' }, null));
  assert.deepEqual(await types(canceled), ['job.failed']);
});

test('a rolled-back move emits nothing', async () => {
  const id = await jobWithWebhook(['generating']);
  await assert.rejects(
    tdb.db.transaction().execute(async (x) => {
      await jobMoves.claimJob(x, id, 'run-1');
      throw new Error('rollback');
    }),
    /rollback/,
  );
  assert.deepEqual(await types(id), []);
});
