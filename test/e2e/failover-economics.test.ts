// Failover never pays twice for one result, on the real stack (grok-video: the local fal queue first,
// a local xAI fake second, both speaking their providers' protocols). A provider that answers 5xx to
// status checks for a long while after it reported the request running keeps the job: it completes
// on the first route with one submit and nothing paid at the second. A route that is given up has
// its request's cancel handed to the provider-cancel workflow: a cancel endpoint that hangs does not
// hold the job, which completes on the second route while that cancel is still outstanding.
//
// The failover budget is PROVIDER_FAILOVER_BUDGET_MS=1500 here (failover-stack.ts), so the outage of
// the first test (30 s of 5xx) is 20 times the budget: the old attempt-count rule gave the route up
// after its second failed check.
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, waitFor, type Tenant } from '../support/stack.js';
import { creditsOf } from '../support/services.js';
import { falRequestsWith, startFailoverStack, submitsWith, type FailoverStack } from '../support/failover-stack.js';
import { createVideoOnFal, jobFinished, jobLedger, jobRow } from '../support/job-helpers.js';
import { json } from '../support/fake-providers/server.js';

let stack: FailoverStack<'xai'>;

const model = 'grok-video';
const price = 6; // grok-video, 1 second
const budgetMs = 1500;
const outageMs = 20 * budgetMs;

before(async () => {
  stack = await startFailoverStack({ secondary: 'xai', roles: 'workflows,io,fetch,provider:fal,provider:xai', env: { PROVIDER_BREAKER_OPEN_MS: '3600000' } });
});

after(() => stack?.close());

beforeEach(async () => {
  stack.fal.up();
  stack.secondary.up();
  await stack.tdb.db.deleteFrom('provider_circuits').execute();
});

const create = (t: Tenant, marker: string) => createVideoOnFal(stack.gw.baseUrl, t, model, marker);

describe('failover pays once for one result', () => {
  test(
    `status checks answer 502 for ${outageMs / 1000} s (20x the failover budget) after fal reported the request running: the job completes on fal, one submit, nothing at xAI`,
    { timeout: 400_000 },
    async () => {
      const { fal, secondary: xai, tdb } = stack;
      // Running from the first check on, then done: every check the outage lets through says so.
      fal.flow = ['IN_PROGRESS', 'IN_PROGRESS', 'IN_PROGRESS', 'COMPLETED'];
      const t = await createTenant(tdb.db, 100);
      const marker = '[status-5xx-while-running]';
      const id = await create(t, marker);
      await waitFor(
        'the submit and a check reporting the request running',
        async () => ((await jobRow(tdb.db, id)).provider_ref && falRequestsWith(fal, 'status', marker) >= 1 ? true : undefined),
        60_000,
        50,
      );
      fal.down(['status'], json(502, { detail: 'Bad Gateway' }));
      const downAt = Date.now();
      const refusedBefore = falRequestsWith(fal, 'status', marker);
      // The outage lasts its length and is seen by several checks (each retried step asks again).
      await waitFor(
        `${outageMs / 1000} s of refused status checks`,
        () => (Date.now() - downAt >= outageMs && falRequestsWith(fal, 'status', marker) - refusedBefore >= 3 ? true : undefined),
        outageMs + 120_000,
        250,
      );
      assert.equal((await jobRow(tdb.db, id)).status, 'generating', 'the job waited the outage out on fal');
      fal.up();
      const row = await jobFinished(tdb.db, id);
      assert.equal(row.status, 'completed', JSON.stringify(row.error));
      assert.equal(falRequestsWith(fal, 'submit', marker), 1, 'one submit at fal');
      assert.equal(submitsWith(xai, marker), 0, 'nothing paid at xAI');
      assert.equal(falRequestsWith(fal, 'cancel', marker), 0, 'the running request was never given up');
      assert.deepEqual(row.provider_attempts, []);
      assert.equal((row.params as { provider: string }).provider, 'fal');
      assert.deepEqual(await jobLedger(tdb.db, id), [['charge', -price]]);
      assert.equal(await creditsOf(tdb.db, t), 100 - price);
    },
  );

  test("a given-up route's cancel that hangs does not hold the job: it completes on xAI while fal's cancel is still outstanding", async () => {
    const { fal, secondary: xai, tdb, gw } = stack;
    fal.flow = ['IN_QUEUE', 'COMPLETED'];
    // Unreachable past the budget from the first check: given up. fal's cancel endpoint answers only
    // when the test lets it (within fal's 30 s call timeout, so it is asked once).
    fal.down(['status'], json(503, { detail: 'Service Unavailable' }));
    let answerCancel!: () => void;
    fal.script('cancel', { ...json(202, { status: 'CANCELLATION_REQUESTED' }), until: new Promise<void>((r) => (answerCancel = r)) });
    const t = await createTenant(tdb.db, 100);
    const marker = '[hanging-cancel]';
    const id = await create(t, marker);
    const row = await jobFinished(tdb.db, id);
    assert.equal(row.status, 'completed', JSON.stringify(row.error));
    assert.equal(submitsWith(xai, marker), 1);
    assert.deepEqual(
      row.provider_attempts.map((a) => a.provider),
      ['fal'],
    );
    // The cancel runs in its own workflow, still waiting for fal when the job completed.
    const cancel = gw.client.workflow.getHandle(`${id}-given-up-fal`);
    const described = await cancel.describe();
    assert.equal(described.status.name, 'RUNNING', "fal's cancel is still outstanding");
    // Started through the client, not as a child: a child of the job's pinned run would inherit its build.
    assert.equal(described.raw.workflowExecutionInfo?.parentExecution ?? null, null, 'the cancel is not a child of the job');
    const events = (await gw.client.workflow.getHandle(id).fetchHistory()).events ?? [];
    assert.equal(
      events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'cancelProvider').length,
      0,
      'the job never waited for a cancel',
    );
    assert.equal(events.filter((e) => e.startChildWorkflowExecutionInitiatedEventAttributes).length, 0, 'no child workflow');
    await waitFor("fal's cancel to be asked", () => (falRequestsWith(fal, 'cancel', marker) >= 1 ? true : undefined), 60_000, 100);
    // fal answers: the given-up request (the job's one request at fal) is canceled, and the workflow ends.
    answerCancel();
    await waitFor('the cancel workflow to complete', async () => ((await cancel.describe()).status.name === 'COMPLETED' ? true : undefined), 120_000, 500);
    assert.equal(falRequestsWith(fal, 'submit', marker), 1);
    assert.deepEqual(await jobLedger(tdb.db, id), [['charge', -price]]);
    assert.equal(await creditsOf(tdb.db, t), 100 - price);
  });

  test("fal's result answers 500 runner_scheduling_failure (an infrastructure failure): retried, then the job fails over to xAI; charged once, one generation paid per route", async () => {
    const { fal, secondary: xai, tdb } = stack;
    fal.flow = ['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED'];
    // fal's Request Error Types: no runner could be allocated; the request failed, unbilled.
    fal.down(['result'], json(500, { detail: 'No runner could be allocated to handle the request', error_type: 'runner_scheduling_failure' }));
    const t = await createTenant(tdb.db, 100);
    const marker = '[result-runner-scheduling-failure]';
    const id = await create(t, marker);
    const row = await jobFinished(tdb.db, id);
    assert.equal(row.status, 'completed', JSON.stringify(row.error));
    assert.equal((row.params as { provider: string }).provider, 'xai', 'served by the second route');
    assert.ok(falRequestsWith(fal, 'result', marker) >= 2, 'the result was asked again before the route was given up');
    assert.equal(falRequestsWith(fal, 'submit', marker), 1, 'one generation at fal');
    assert.equal(submitsWith(xai, marker), 1, 'one generation at xAI');
    assert.equal(row.provider_attempts.length, 1);
    assert.equal(row.provider_attempts[0]!.provider, 'fal');
    assert.match(row.provider_attempts[0]!.error, /No runner could be allocated to handle the request \(runner_scheduling_failure\)/);
    assert.deepEqual(await jobLedger(tdb.db, id), [['charge', -price]], 'charged once');
    assert.equal(await creditsOf(tdb.db, t), 100 - price);
  });
  test("fal's submit answers 404 (the model is not served on this route): the route is given up at once, never as the customer's error; the job completes on xAI, charged once", async () => {
    const { fal, secondary: xai, tdb } = stack;
    fal.down(['submit'], json(404, { detail: 'Application not found' }));
    const t = await createTenant(tdb.db, 100);
    const marker = '[submit-model-gone]';
    const id = await create(t, marker);
    const row = await jobFinished(tdb.db, id);
    assert.equal(row.status, 'completed', JSON.stringify(row.error));
    assert.equal((row.params as { provider: string }).provider, 'xai', 'served by the second route');
    assert.equal(falRequestsWith(fal, 'submit', marker), 1, 'one refused submit at fal: a route problem is not retried there');
    assert.equal(submitsWith(xai, marker), 1, 'one generation at xAI');
    assert.equal(row.provider_attempts.length, 1);
    assert.match(row.provider_attempts[0]!.error, /not served on this route \(HTTP 404\)/);
    assert.deepEqual(await jobLedger(tdb.db, id), [['charge', -price]], 'charged once');
    assert.equal(await creditsOf(tdb.db, t), 100 - price);
  });
});
