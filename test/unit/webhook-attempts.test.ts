// What a customer sees of a delivery: the URL without credentials, the error class of an answer,
// the status from the outbox columns, and the next retry time the workflow's backoff gives.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { deliveryStatusOf, errorClassOfStatus, nextRetryAt, redactedWebhookUrl } from '../../shared/webhooks/attempts.js';

test('the URL loses user info, query, fragment and token-like path segments', () => {
  assert.equal(redactedWebhookUrl('https://user:pw@hooks.example.com:8443/in/orders?token=abc#x'), 'https://hooks.example.com:8443/in/orders');
  assert.equal(redactedWebhookUrl('https://hooks.example.com/t/Ab3dEf6hIj9kLm2nOp5qRs'), 'https://hooks.example.com/t/[redacted]');
  assert.equal(redactedWebhookUrl('https://hooks.example.com/webhooks/media-generation'), 'https://hooks.example.com/webhooks/media-generation');
  assert.equal(redactedWebhookUrl('not a url'), '[redacted]');
});

test('error classes and statuses', () => {
  assert.equal(errorClassOfStatus(204), null);
  assert.equal(errorClassOfStatus(410), 'http_4xx');
  assert.equal(errorClassOfStatus(503), 'http_5xx');
  assert.equal(errorClassOfStatus(302), 'http_other');
  const none = { delivered_at: null, failed_at: null, superseded_at: null };
  assert.equal(deliveryStatusOf(none), 'pending');
  assert.equal(deliveryStatusOf({ ...none, failed_at: new Date() }), 'failed');
  assert.equal(deliveryStatusOf({ ...none, superseded_at: new Date() }), 'superseded');
  assert.equal(deliveryStatusOf({ ...none, delivered_at: new Date(), failed_at: new Date() }), 'delivered');
});

test('the next retry doubles from the initial interval up to the maximum, and none past the give-up time', () => {
  const retry = { initialMs: 100, maxIntervalMs: 300 };
  assert.equal(nextRetryAt(1_000, 1, retry, null)?.getTime(), 1_100);
  assert.equal(nextRetryAt(1_000, 2, retry, null)?.getTime(), 1_200);
  assert.equal(nextRetryAt(1_000, 3, retry, null)?.getTime(), 1_300);
  assert.equal(nextRetryAt(1_000, 9, retry, null)?.getTime(), 1_300);
  assert.equal(nextRetryAt(1_000, 1, retry, 1_050), null);
});
