// The customer's record of webhook deliveries on real Postgres: an attempt written twice (a retried
// write of one activity attempt) is one row, numbers run across runs, the list filters by the
// status derived from the outbox columns, and a redelivery is refused while the event is in flight
// and to another workspace; a budget alert (the operator's URL) is not the workspace's to see or
// redeliver.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createTenant, createTestDatabase, type Tenant, type TestDatabase } from '../support/stack.js';
import * as repo from '../../db/repos/webhook-deliveries.js';
import { markDeliveryFailed } from '../../db/repos/webhooks.js';

let tdb: TestDatabase;
let t: Tenant;
let other: Tenant;
let seq = 0;

async function event(type = 'job.completed'): Promise<string> {
  const n = ++seq;
  const jobId = `img_attempts${n}`;
  await sql`insert into jobs (id, kind, workspace_id, project_id, model, status, params, price)
    values (${jobId}, 'image', ${t.workspaceId}, ${t.projectId}, 'nano-banana-2', 'completed', '{}', 0)`.execute(tdb.db);
  const id = `whk_${jobId}_1`;
  await tdb.db
    .insertInto('webhook_deliveries')
    .values({ id, job_id: jobId, workspace_id: t.workspaceId, type, url: 'https://user:pw@hooks.example.com/x?token=abc', job: '{}' })
    .execute();
  return id;
}

before(async () => {
  tdb = await createTestDatabase();
  t = await createTenant(tdb.db);
  other = await createTenant(tdb.db);
});

after(async () => {
  await tdb?.drop();
});

describe('webhook attempts', () => {
  test('one activity attempt is one row however often it is written; numbers run across runs', async () => {
    const id = await event();
    const first = await repo.startAttempt(tdb.db, id, `${id}/run1`, `${id}/run1/1/1`);
    const again = await repo.startAttempt(tdb.db, id, `${id}/run1`, `${id}/run1/1/1`);
    assert.deepEqual(again, first);
    assert.deepEqual(first, { number: 1, ofRun: 1 });
    assert.deepEqual(await repo.startAttempt(tdb.db, id, `${id}/run1`, `${id}/run1/1/2`), { number: 2, ofRun: 2 });
    // A redelivery's run: the event's numbering goes on, the run's count starts over.
    assert.deepEqual(await repo.startAttempt(tdb.db, id, `${id}/redeliver-1/run2`, `${id}/redeliver-1/run2/1/1`), { number: 3, ofRun: 1 });
    const retryAt = new Date(Date.now() + 5_000);
    await repo.finishAttempt(tdb.db, id, `${id}/run1/1/1`, { statusCode: 503, errorClass: 'http_5xx', latencyMs: 12, nextRetryAt: retryAt });
    const rows = (await repo.attemptsOf(tdb.db, [id])).get(id)!;
    assert.deepEqual(
      rows.map((r) => [r.number, r.status_code, r.error_class, r.latency_ms]),
      [
        [1, 503, 'http_5xx', 12],
        [2, null, null, null],
        [3, null, null, null],
      ],
    );
    assert.equal(rows[0]!.next_retry_at?.getTime(), retryAt.getTime());
    assert.equal((await repo.getWorkspaceDelivery(tdb.db, t.workspaceId, id))?.next_retry_at?.getTime(), retryAt.getTime());
  });

  test('the list filters by derived status, event and job; a redelivery is refused in flight and to another workspace', async () => {
    const pending = await event('job.generating');
    const failed = await event();
    await markDeliveryFailed(tdb.db, failed, 'retries ran out', 3);
    const list = async (filters: repo.DeliveryFilters) =>
      (await repo.listDeliveriesPage(tdb.db, t.workspaceId, { limit: 100, after: null, filters })).rows.map((r) => r.id);
    assert.ok((await list({ status: 'pending' })).includes(pending));
    assert.ok(!(await list({ status: 'pending' })).includes(failed));
    assert.ok((await list({ status: 'failed' })).includes(failed));
    assert.deepEqual(await list({ type: 'job.generating' }), [pending]);
    assert.deepEqual(await list({ jobId: `img_attempts${seq}` }), [failed]);
    // Newest first, one page at a time.
    const all = await list({});
    const page1 = await repo.listDeliveriesPage(tdb.db, t.workspaceId, { limit: 1, after: null, filters: {} });
    const page2 = await repo.listDeliveriesPage(tdb.db, t.workspaceId, { limit: 1, after: page1.next, filters: {} });
    assert.deepEqual([page1.rows[0]!.id, page2.rows[0]!.id], all.slice(0, 2));
    assert.equal((await repo.listDeliveriesPage(tdb.db, other.workspaceId, { limit: 100, after: null, filters: {} })).rows.length, 0);

    assert.deepEqual(await repo.beginRedelivery(tdb.db, t.workspaceId, pending), { refused: 'in_flight' });
    assert.deepEqual(await repo.beginRedelivery(tdb.db, other.workspaceId, failed), { refused: 'not_found' });
    const begun = await repo.beginRedelivery(tdb.db, t.workspaceId, failed);
    assert.ok('started' in begun);
    assert.equal(begun.started.redeliveries, 1);
    assert.equal(begun.started.failed_at, null);
    assert.deepEqual(await repo.beginRedelivery(tdb.db, t.workspaceId, failed), { refused: 'in_flight' }, 'a second one waits for the first');
    await repo.redeliveryNotStarted(tdb.db, failed, 'could not start');
    assert.ok((await list({ status: 'failed' })).includes(failed), 'a redelivery that could not start leaves the event finished');
  });

  test("a budget alert, sent to the operator's URL, is neither listed, shown nor redeliverable by the workspace", async () => {
    const id = `whk_budget_alert_${++seq}`;
    await tdb.db
      .insertInto('webhook_deliveries')
      .values({ id, job_id: null, workspace_id: t.workspaceId, type: 'budget.threshold_reached', url: 'https://ops.example.com/alerts/finance', job: '{}' })
      .execute();
    await markDeliveryFailed(tdb.db, id, 'retries ran out', 3);
    const listed = (await repo.listDeliveriesPage(tdb.db, t.workspaceId, { limit: 100, after: null, filters: {} })).rows;
    assert.ok(listed.length > 0, 'the workspace has other deliveries listed');
    assert.ok(!listed.some((r) => r.id === id || r.url.includes('ops.example.com')));
    assert.equal(
      (await repo.listDeliveriesPage(tdb.db, t.workspaceId, { limit: 100, after: null, filters: { type: 'budget.threshold_reached' } })).rows.length,
      0,
    );
    assert.equal(await repo.getWorkspaceDelivery(tdb.db, t.workspaceId, id), undefined);
    assert.deepEqual(await repo.beginRedelivery(tdb.db, t.workspaceId, id), { refused: 'not_found' });
    const row = await tdb.db.selectFrom('webhook_deliveries').select(['redeliveries', 'failed_at']).where('id', '=', id).executeTakeFirstOrThrow();
    assert.equal(row.redeliveries, 0);
    assert.ok(row.failed_at, 'the event stays as it was');
  });
});
