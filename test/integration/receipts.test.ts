// Job receipts on the real Postgres (the job service, jobs/): every record's `charges` equals the
// job's ledger summed, for a job that completed, failed (refunded), was canceled (kept part) and
// was charged again (revived by another run); and its timeline lists each move and each credit
// moved in order, once however often a step repeats.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, createTestDatabase, testConfig, type Tenant, type TestDatabase } from '../support/stack.js';
import { newId } from '../../shared/ids.js';
import * as jobs from '../../db/repos/jobs.js';
import { jobTimeline } from '../../db/repos/job-timeline.js';
import { createJobService, inFlightStatuses, terminalStatuses, type JobService } from '../../jobs/index.js';
import { markOutputsRemoved } from '../../db/repos/job-outputs.js';
import { ledgerCharges } from '../support/ledger.js';
import { createStorage } from '../../shared/storage.js';
import { presentJob } from '../../shared/job-record.js';

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

/** A gpt-image-1.5 job claimed by run-a and submitted to OpenAI. */
async function submittedJob(t: Tenant): Promise<string> {
  const id = newId('img');
  await jobs.insertJobWithCharge(tdb.db, {
    id,
    kind: 'image',
    workspaceId: t.workspaceId,
    projectId: t.projectId,
    apiKeyId: t.apiKeyId,
    model: 'gpt-image-1.5',
    params: { prompt: 'p', aspect_ratio: '1:1', count: 1, provider: 'openai', provider_model_id: 'gpt-image-1.5' },
    price,
  });
  await service.claim(id, 'run-a');
  assert.ok(await service.recordProviderRef(id, 'run-a', { provider: 'openai', request: id }, 1));
  return id;
}

/** The record's charges, checked against the ledger summed by the test. */
async function chargesMatchLedger(id: string): Promise<{ charged: number; refunded: number; net: number }> {
  const record = presentJob((await jobs.getJob(tdb.db, id))!);
  assert.deepEqual(record.charges, await ledgerCharges(tdb.db, id));
  return record.charges;
}

const timeline = async (id: string) => (await jobTimeline(tdb.db, id)).map((e) => [e.type, e.details.amount ?? null]);

describe("a job record's charges net to the ledger, and its timeline says why", () => {
  test('completed: charged its price once', async () => {
    const t = await createTenant(tdb.db, 100);
    const id = await submittedJob(t);
    await service.complete(id, [{ key: `jobs/${id}/0.png`, content_type: 'image/png', size: 1 }], 'run-a');
    await service.complete(id, [{ key: `jobs/${id}/0.png`, content_type: 'image/png', size: 1 }], 'run-a');
    assert.deepEqual(await chargesMatchLedger(id), { charged: price, refunded: 0, net: price });
    assert.deepEqual(await timeline(id), [
      ['created', null],
      ['charged', price],
      ['started', null],
      ['submitted', null],
      ['outputs_stored', null],
      ['completed', null],
    ]);
    // The customer deletes its outputs (DELETE /v1/{kind}/{id}), twice: one entry.
    for (let i = 0; i < 2; i++) await markOutputsRemoved(tdb.db, id, terminalStatuses);
    assert.deepEqual((await timeline(id)).slice(6), [['outputs_deleted', null]]);
  });

  test('failed: refunded in full; a retried failure adds nothing', async () => {
    const t = await createTenant(tdb.db, 100);
    const id = await submittedJob(t);
    await service.fail(id, { code: 'generation_failed', message: 'x' }, 'run-a');
    await service.fail(id, { code: 'generation_failed', message: 'x' }, 'run-a');
    assert.deepEqual(await chargesMatchLedger(id), { charged: price, refunded: price, net: 0 });
    assert.deepEqual((await timeline(id)).slice(4), [
      ['refunded', price],
      ['failed', null],
    ]);
  });

  test("canceled after the submit: the provider's cost kept, then refunded when the provider confirms", async () => {
    const t = await createTenant(tdb.db, 100);
    const id = await submittedJob(t);
    await jobs.markCancelRequested(tdb.db, id, inFlightStatuses);
    await service.fail(id, { code: 'canceled', message: 'the job was canceled' }, 'run-a');
    assert.deepEqual(await chargesMatchLedger(id), { charged: price, refunded: price - cost, net: cost });
    const refund = (await jobTimeline(tdb.db, id)).find((e) => e.type === 'refunded')!;
    assert.deepEqual(refund.details, { amount: price - cost, cause: 'canceled', kept: cost });
    // The provider's answer, twice (a retried activity): one entry, one refund.
    const answer = { provider: 'openai', ref: { provider: 'openai', request: id }, outcome: 'confirmed' as const };
    assert.deepEqual(await Promise.all([service.cancelAnswered(id, answer, true), service.cancelAnswered(id, answer, true)]).then((r) => r.sort()), [0, cost]);
    assert.deepEqual(await chargesMatchLedger(id), { charged: price, refunded: price, net: 0 });
    assert.deepEqual((await timeline(id)).slice(4), [
      ['cancel_requested', null],
      ['refunded', price - cost],
      ['failed', null],
      ['cancel_upstream', null],
      ['refunded', cost],
    ]);
  });

  test('revived by another run: charged again, then completed', async () => {
    const t = await createTenant(tdb.db, 100);
    const id = await submittedJob(t);
    await service.fail(id, { code: 'generation_failed', message: 'x' }, 'run-a');
    await service.claim(id, 'run-b');
    await service.complete(id, [{ key: `jobs/${id}/0.png`, content_type: 'image/png', size: 1 }], 'run-b');
    assert.deepEqual(await chargesMatchLedger(id), { charged: 2 * price, refunded: price, net: price });
    const entries = await jobTimeline(tdb.db, id);
    assert.deepEqual(
      entries.slice(6).map((e) => [e.type, e.details]),
      [
        ['recharged', { amount: price, cause: 'revived' }],
        ['started', { provider: 'openai', revived: true }],
        ['outputs_stored', { count: 1 }],
        ['completed', { provider: 'openai' }],
      ],
    );
  });
});
