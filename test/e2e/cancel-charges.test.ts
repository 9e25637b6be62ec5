// A customer's cancel charges what the operator cannot get back, on the real stack (two gateways
// over HTTP, workflows on Temporal, Postgres, MinIO) with local fakes speaking the providers'
// protocols: OpenAI's Images API (its cancel is not honored: the image is made within the submit)
// and fal's queue (its cancel stops a queued request). A job is held right after its submit (or just
// before it) by the hold helpers, then canceled. Looping create→cancel on the OpenAI route keeps the
// provider cost of every job, and past CANCEL_CHURN_LIMIT the next create answers 429
// cancel_churn_limited with retry_after_ms on either gateway.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createTenant, createTestDatabase, testConfig, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, creditsOf, startGateway, startWorkers, type InProcessGateway as Gateway, type Workers } from '../support/services.js';
import { startLiveFal, type LiveFal } from '../support/fake-providers/live-fal.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-providers/openai.js';
import { falRequestsWith } from '../support/failover-stack.js';
import { jobFinished, jobLedger, jobRow } from '../support/job-helpers.js';
import { Holds } from '../support/holds.js';

const loops = 50;
const churnLimit = loops - 1;
const windowMs = 3_600_000;
// gpt-image-2: 12 credits per image, of which 8 are OpenAI's cost (shared/catalog.ts).
const openaiPrice = 12;
const openaiCost = 8;
// nano-banana-2 on fal: 4 credits per image.
const falPrice = 4;

let tdb: TestDatabase;
let live: LiveFal;
let openai: FakeOpenAI;
let gateways: [Gateway, Gateway];
let workers: Workers;
const holds = new Holds();

before(async () => {
  tdb = await createTestDatabase();
  [live, openai] = await Promise.all([startLiveFal(), startFakeOpenAI()]);
  const config = testConfig(tdb.url, {
    ...live.env,
    OPENAI_API_KEY: openai.key,
    OPENAI_BASE_URL: openai.url,
    RATE_LIMIT_GENERATE_PER_MIN: '100000',
    RATE_LIMIT_POLL_PER_MIN: '100000',
    RECONCILE_INTERVAL_MS: '3600000',
    CANCEL_CHURN_LIMIT: String(churnLimit),
    CANCEL_CHURN_WINDOW_MS: String(windowMs),
  });
  gateways = [await startGateway(config, tdb.db), await startGateway(config, tdb.db)];
  workers = await startWorkers(config, tdb.db, 'workflows,io,fetch,provider:openai,provider:fal', { activityInterceptors: [holds.activityInterceptor] });
});

after(async () => {
  await workers?.stop();
  await Promise.all((gateways ?? []).map((g) => g.close()));
  await Promise.all([live?.close(), openai?.close()]);
  await tdb?.drop();
});

const client = (t: Tenant, i = 0) => api(gateways[i % 2]!.baseUrl, t.apiKey);

async function createImage(t: Tenant, model: string, marker: string, via = 0): Promise<string> {
  const r = await client(t, via).post('/v1/images/generate', {
    project_id: t.projectId,
    prompt: `a lighthouse at dusk ${marker}`,
    model,
    aspect_ratio: '1:1',
    count: 1,
  });
  assert.equal(r.status, 200, r.text);
  return r.body.data.id as string;
}

/** Cancels through the API and waits for the job to end as canceled. */
async function cancel(t: Tenant, id: string, via = 0) {
  const r = await client(t, via).post(`/v1/images/${id}/cancel`, {});
  assert.equal(r.status, 200, r.text);
  const row = await jobFinished(tdb.db, id, 60_000);
  assert.equal(row.status, 'failed');
  assert.equal(row.error?.code, 'canceled');
  return row;
}

const openaiGenerationsWith = (marker: string) =>
  openai.requestsOf('images').filter((c) => (c.json as { prompt?: string } | undefined)?.prompt?.includes(marker)).length;

describe("a customer's cancel charges what the operator cannot get back", () => {
  test(
    `${loops} create→cancel loops after the submit on a route whose cancel is not honored: each keeps the provider cost, then creates answer 429`,
    { timeout: 900_000 },
    async () => {
      const t = await createTenant(tdb.db, loops * openaiCost + openaiPrice);
      const marker = `[churn-${t.workspaceId}]`;
      const ids: string[] = [];
      for (let i = 0; i < loops; i++) {
        // Held after the submit ran (the image is made and paid at OpenAI, its reference recorded).
        const held = holds.activity('submitAndCheck', 'after');
        try {
          const id = await createImage(t, 'gpt-image-2', marker, i);
          assert.equal(await held.reached, id);
          // Created on one gateway, canceled on the other.
          await cancel(t, id, i + 1);
          ids.push(id);
        } finally {
          held.release();
        }
        await held.finished;
      }
      assert.equal(openaiGenerationsWith(marker), loops, 'every job was paid at the provider');

      // The ledger's job rows (not the workspace's grant), summed in SQL: each job nets its provider
      // cost, all together 50 × the cost.
      const { rows } = await sql<{ net: number; jobs: number }>`
      select coalesce(-sum(delta), 0)::int as net, count(distinct job_id)::int as jobs
        from credit_ledger where workspace_id = ${t.workspaceId} and job_id is not null`.execute(tdb.db);
      assert.deepEqual(rows[0], { net: loops * openaiCost, jobs: loops });
      assert.equal(await creditsOf(tdb.db, t), openaiPrice);
      for (const id of ids)
        assert.deepEqual(await jobLedger(tdb.db, id), [
          ['charge', -openaiPrice],
          ['refund', openaiPrice - openaiCost],
        ]);
      // The record says what the cancel refunded.
      const rec = await client(t).get(`/v1/images/${ids[0]}`);
      assert.equal(rec.status, 200, rec.text);
      assert.deepEqual(rec.body.data.cancel, { refunded: openaiPrice - openaiCost, kept: openaiCost, after_submit: true });

      // Past the limit: both gateways refuse the next create, charging nothing.
      for (const via of [0, 1]) {
        const r = await client(t, via).post('/v1/images/generate', {
          project_id: t.projectId,
          prompt: `one more ${marker}`,
          model: 'gpt-image-2',
          aspect_ratio: '1:1',
          count: 1,
        });
        assert.equal(r.status, 429, r.text);
        assert.equal(r.body.error.code, 'cancel_churn_limited');
        assert.ok(
          Number.isInteger(r.body.retry_after_ms) && r.body.retry_after_ms > 0 && r.body.retry_after_ms <= windowMs,
          `retry_after_ms ${r.body.retry_after_ms}`,
        );
        assert.ok(Number(r.headers.get('retry-after')) >= 1);
      }
      assert.equal(await creditsOf(tdb.db, t), openaiPrice, 'a refused create charges nothing');
      // Another workspace is not limited by this one's churn (its job ends before the next test holds one).
      const other = await createTenant(tdb.db, 100);
      const otherJob = await createImage(other, 'nano-banana-2', '[not-churning]');
      assert.equal((await jobFinished(tdb.db, otherJob, 120_000)).status, 'completed');
    },
  );

  test('a cancel before the submit refunds the whole price and does not count as churn', async () => {
    const t = await createTenant(tdb.db, 100);
    const marker = `[before-submit-${t.workspaceId}]`;
    const held = holds.activity('submitAndCheck', 'before');
    try {
      const id = await createImage(t, 'gpt-image-2', marker);
      assert.equal(await held.reached, id);
      const row = await cancel(t, id);
      assert.equal(row.provider_ref, null, 'nothing was submitted');
      assert.equal(row.canceled_after_submit_at, null);
      assert.deepEqual(await jobLedger(tdb.db, id), [
        ['charge', -openaiPrice],
        ['refund', openaiPrice],
      ]);
      assert.equal(await creditsOf(tdb.db, t), 100);
      const rec = await client(t).get(`/v1/images/${id}`);
      assert.deepEqual(rec.body.data.cancel, { refunded: openaiPrice, kept: 0, after_submit: false });
    } finally {
      held.release();
    }
    await held.finished;
  });

  test('a cancel after the submit on a route whose cancel is honored (fal, queued) refunds the whole price once fal confirms it', async () => {
    live.fal.flow = [...Array<'IN_QUEUE'>(500).fill('IN_QUEUE'), 'COMPLETED'];
    const t = await createTenant(tdb.db, 100);
    const marker = `[honored-${t.workspaceId}]`;
    const id = await createImage(t, 'nano-banana-2', marker);
    await waitFor('the fal request to be recorded', async () => ((await jobRow(tdb.db, id)).provider_ref ? true : undefined), 60_000, 100);
    await cancel(t, id);
    // The provider cost is kept until fal confirms the cancel, then refunded too.
    await waitFor('the confirmed cancel to be refunded', async () => ((await creditsOf(tdb.db, t)) === 100 ? true : undefined), 60_000, 100);
    assert.equal(falRequestsWith(live.fal, 'cancel', marker), 1);
    const ledger = await jobLedger(tdb.db, id);
    assert.deepEqual(
      ledger.map(([reason]) => reason),
      ['charge', 'refund', 'refund'],
    );
    assert.equal(
      ledger.reduce((sum, [, delta]) => sum + Number(delta), 0),
      0,
    );
    const row = await jobRow(tdb.db, id);
    assert.equal(row.cancel_kept, 0);
    const rec = await client(t).get(`/v1/images/${id}`);
    assert.deepEqual(rec.body.data.cancel, { refunded: falPrice, kept: 0, after_submit: true });
  });

  test('the policy is stated: GET /v1/models per model, and the dry-run quote', async () => {
    const t = await createTenant(tdb.db, 100);
    const models = await client(t).get('/v1/models');
    assert.equal(models.status, 200, models.text);
    const byName = new Map(
      (models.body.data as { name: string; cancel_policy: { provider_cost: number; provider_cancel: string }; placeholder: boolean }[]).map((m) => [m.name, m]),
    );
    assert.deepEqual(
      { ...byName.get('gpt-image-2')!.cancel_policy, rule: undefined },
      { provider_cost: openaiCost, provider_cancel: 'never', rule: undefined },
    );
    assert.equal(byName.get('nano-banana-2')!.cancel_policy.provider_cancel, 'queued');
    assert.equal(byName.get('gpt-image-2')!.placeholder, false);
    const quote = await client(t).post('/v1/images/generate?dry_run=true', {
      project_id: t.projectId,
      prompt: 'a quote',
      model: 'gpt-image-2',
      aspect_ratio: '1:1',
      count: 2,
    });
    assert.equal(quote.status, 200, quote.text);
    assert.deepEqual(quote.body.data, {
      price: 2 * openaiPrice,
      available: 100,
      sufficient: true,
      non_refundable_after_submit: 2 * openaiCost,
      deadline_at: null,
      // No budget applies to the key or the project.
      within_budget: null,
      budget_remaining: null,
    });
  });
});
