// What a customer's cancel settles, on the real Postgres (the job service, jobs/):
// before a provider has the request the whole price comes back; after it, the model's provider
// cost is kept (never more than the price); an operator's terminate or a failure refunds in full;
// a confirmed provider cancel refunds the rest once; retries and the reconciler's settle charge
// exactly once; and the churn count sees only cancels after a submit within the window.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createTenant, createTestDatabase, testConfig, type Tenant, type TestDatabase } from '../support/stack.js';
import { creditsOf } from '../support/services.js';
import { newId } from '../../shared/ids.js';
import * as jobs from '../../db/repos/jobs.js';
import { createJobService, inFlightStatuses, type JobService } from '../../jobs/index.js';
import { ledgerForJob } from '../support/ledger.js';
import { createStorage } from '../../shared/storage.js';

let tdb: TestDatabase;
let service: JobService;
// gpt-image-1.5: 6 credits per image, 4 of them OpenAI's cost (shared/catalog.ts).
const price = 6;
const cost = 4;

before(async () => {
  tdb = await createTestDatabase();
  service = createJobService({ db: tdb.db, storage: createStorage(testConfig(tdb.url)) });
});
after(async () => {
  await tdb?.drop();
});

/** A generating gpt-image-1.5 job of run-a, canceled by its customer; with a provider reference when submitted. */
async function canceledJob(t: Tenant, opts: { submitted: boolean; count?: number }): Promise<string> {
  const id = newId('img');
  const count = opts.count ?? 1;
  await tdb.db.transaction().execute((tx) =>
    jobs.insertJobWithCharge(tx, {
      id,
      kind: 'image',
      workspaceId: t.workspaceId,
      projectId: t.projectId,
      apiKeyId: t.apiKeyId,
      model: 'gpt-image-1.5',
      params: { prompt: 'p', aspect_ratio: '1:1', count, provider: 'openai', provider_model_id: 'gpt-image-1.5', deadline_seconds: 300 },
      price: price * count,
    }),
  );
  await service.claim(id, 'run-a');
  if (opts.submitted) assert.ok(await service.recordProviderRef(id, 'run-a', { provider: 'openai', outputs: [] }, 1));
  // What the service's cancel writes before it asks the workflow (this service has no Temporal port).
  await jobs.markCancelRequested(tdb.db, id, inFlightStatuses);
  return id;
}

const net = async (id: string) => 0 - (await ledgerForJob(tdb.db, id)).reduce((sum, l) => sum + Number(l.delta), 0);
const cancelFail = (id: string) => service.fail(id, { code: 'canceled', message: 'the job was canceled' }, 'run-a');

describe("a customer's cancel settles to the documented target, exactly once", () => {
  test('before the submit: the whole price back; after it: all but the provider cost, and retries change nothing', async () => {
    const t = await createTenant(tdb.db, 100);
    const before = await canceledJob(t, { submitted: false });
    assert.equal((await cancelFail(before)).refunded, price);
    assert.equal(await net(before), 0);
    const afterSubmit = await canceledJob(t, { submitted: true, count: 2 });
    const r = await cancelFail(afterSubmit);
    assert.equal(r.refunded, 2 * price - 2 * cost);
    assert.deepEqual([r.job.cancel_kept, r.job.canceled_after_submit_at !== null], [2 * cost, true]);
    // A retried step, and the reconciler's settle by status, leave the kept part kept.
    assert.equal((await cancelFail(afterSubmit)).moved, false);
    assert.equal(await service.settle(afterSubmit), 0);
    assert.equal(await net(afterSubmit), 2 * cost);
    assert.equal(await creditsOf(tdb.db, t), 100 - 2 * cost);
  });

  test("an operator's terminate (no cancel request) and a failure refund in full", async () => {
    const t = await createTenant(tdb.db, 100);
    const id = await canceledJob(t, { submitted: true });
    await tdb.db.updateTable('jobs').set({ cancel_requested_at: null }).where('id', '=', id).execute();
    assert.equal((await cancelFail(id)).refunded, price);
    const failedId = await canceledJob(t, { submitted: true });
    assert.equal((await service.fail(failedId, { code: 'generation_failed', message: 'x' }, 'run-a')).refunded, price);
    assert.equal(await creditsOf(tdb.db, t), 100);
  });

  test('a confirmed provider cancel refunds what was kept, once', async () => {
    const t = await createTenant(tdb.db, 100);
    const id = await canceledJob(t, { submitted: true });
    await cancelFail(id);
    const [a, b] = await Promise.all([service.cancelConfirmed(id), service.cancelConfirmed(id)]);
    assert.deepEqual([a, b].sort(), [0, cost]);
    assert.equal(await net(id), 0);
    assert.equal((await jobs.getJob(tdb.db, id))!.cancel_kept, 0);
    assert.equal(await service.settle(id), 0);
  });

  test('the churn count: cancels after a submit within the window, past the limit, with when the count is back within it', async () => {
    const t = await createTenant(tdb.db, 100);
    for (let i = 0; i < 3; i++) await cancelFail(await canceledJob(t, { submitted: true }));
    await cancelFail(await canceledJob(t, { submitted: false }));
    // The three after a submit count; the one before it does not.
    assert.deepEqual(await service.cancelChurn(tdb.db, t.workspaceId, 3, 60_000), { over: false, retryAfterMs: 0, counted: 3 });
    const over = await service.cancelChurn(tdb.db, t.workspaceId, 2, 60_000);
    assert.ok(over.over && over.retryAfterMs > 0 && over.retryAfterMs <= 60_000, JSON.stringify(over));
    // Aged past the window, they no longer count.
    await sql`update jobs set canceled_after_submit_at = canceled_after_submit_at - interval '2 minutes' where workspace_id = ${t.workspaceId}`.execute(tdb.db);
    assert.equal((await service.cancelChurn(tdb.db, t.workspaceId, 0, 60_000)).over, false);
  });
});
