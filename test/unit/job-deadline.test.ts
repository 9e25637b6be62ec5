// What a job's deadline leaves charged (jobs/rules.ts): the customer's own cancel, made when the
// deadline passed — nothing before a provider has the request, the model's provider cost after —
// and a job its deadline ended is never revived by an operator's reset. Its webhook events show
// the deadline as GET does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { claimOf, DEADLINE_EXCEEDED, failureCharge, wasCanceled } from '../../jobs/index.js';
import { providerCostFor, routeFor } from '../../shared/catalog.js';
import type { Job } from '../../db/schema.js';
import { webhookBody } from '../../activities/webhooks.js';

const params = { prompt: 'p', aspect_ratio: '1:1', count: 2, provider: 'openai', deadline_seconds: 300 };
const job = (over: Partial<Job>) =>
  ({ kind: 'image', model: 'gpt-image-1.5', params, price: 12, provider_ref: null, cancel_requested_at: null, ...over }) as Job;
const cost = providerCostFor(routeFor('gpt-image-1.5')!, params);

test('a deadline before the submit keeps nothing; after it, the provider cost, as a cancel would', () => {
  assert.ok(cost > 0 && cost < 12);
  assert.deepEqual(failureCharge(job({}), { code: DEADLINE_EXCEEDED }), { kept: 0, cancel: { kept: 0, afterSubmit: false } });
  const submitted = job({ provider_ref: { provider: 'openai', id: 'r1' } });
  assert.deepEqual(failureCharge(submitted, { code: DEADLINE_EXCEEDED }), { kept: cost, cancel: { kept: cost, afterSubmit: true } });
  // The customer's cancel of the same job keeps the same; any other failure refunds all.
  assert.deepEqual(failureCharge({ ...submitted, cancel_requested_at: new Date() }, { code: 'canceled' }).kept, cost);
  assert.deepEqual(failureCharge(submitted, { code: 'generation_failed' }), { kept: 0, cancel: null });
});

test('a job its deadline ended counts as canceled: a reset does not revive it', () => {
  const ended = { status: 'failed' as const, status_run_id: 'run-b', error: { code: DEADLINE_EXCEEDED, message: 'x' } };
  assert.ok(wasCanceled(ended));
  assert.deepEqual(claimOf(ended, 'run-a'), { refused: 'it was canceled' });
});

test("a webhook event's record shows the deadline as GET does (ms since the epoch), from the stored snapshot", () => {
  const at = '2026-11-27T10:00:00.000Z';
  const snapshot = {
    id: 'img_1',
    kind: 'image',
    project_id: 'prj_1',
    model: 'nano-banana-2',
    status: 'failed',
    params: { prompt: 'p', aspect_ratio: '1:1', count: 1, provider: 'local', deadline_seconds: 300 },
    error: { code: DEADLINE_EXCEEDED, message: 'the deadline passed' },
    created_at: '2026-11-27T09:59:50.000Z',
    updated_at: at,
    phase: 'failed',
    attempt: 1,
    percent: null,
    queue_position: null,
    webhook_url: 'https://example.com/hook',
    webhook_events: ['failed'],
    outputs_removed_at: null,
    provider_attempts: [],
    price: 4,
    cancel_kept: 0,
    canceled_after_submit_at: null,
    credits_charged: 0,
    credits_refunded: 0,
    deadline_at: at,
  };
  const body = JSON.parse(webhookBody({ type: 'job.failed', job: snapshot }));
  assert.equal(body.data.deadline_at, Date.parse(at));
  assert.equal(body.data.error.code, DEADLINE_EXCEEDED);
});
