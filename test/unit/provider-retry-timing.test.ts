// The smaller classification and retry-timing rules of the provider error tables: a rate-limit reset
// header is a wait only on a 429; Retry-After is a wait on any retryable answer but never past the
// job's remaining deadline; fal's 404 on submit is the route's (the model is gone) even with an error
// type; OpenAI's 403 for an unverified organization moves the job without calling the key bad; an xAI
// status the adapter does not know, or a done answer without `status`, never fails a paid job.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { classify, errorOfRow, type ErrorFacts, type ErrorTable } from '../../activities/providers/error-table.js';
import { retryAfterFromHeaders } from '../../activities/providers/error-text.js';
import { falErrors, falFacts } from '../../providers/fal/errors.js';
import { openaiErrors, openaiFacts } from '../../providers/openai/errors.js';
import { xaiErrors, xaiFacts } from '../../providers/xai/errors.js';
import { retryWaitMs } from '../../shared/provider-retry.js';
import { createXaiAdapter } from '../../providers/xai/adapter.js';
import { startFakeXai, type FakeXai } from '../support/fake-providers/xai.js';
import { json } from '../support/fake-providers/server.js';
import type { ProviderContext } from '../../activities/providers/types.js';

const answer = (status: number, body: unknown, headers: Record<string, string> = {}) => ({
  res: { status, headers: new Headers(headers) },
  text: typeof body === 'string' ? body : JSON.stringify(body),
});
const errorOf = (table: ErrorTable, f: ErrorFacts) => errorOfRow(classify(table, f), f, { provider: 'P', what: 'call' });

test('x-ratelimit-reset-* is a wait on a 429 only; Retry-After on any retryable answer', () => {
  const reset = { 'x-ratelimit-reset-requests': '6m0s', 'x-ratelimit-reset-tokens': '20s' };
  const limited = answer(429, { error: { message: 'Rate limit reached', type: 'requests', param: null, code: 'rate_limit_exceeded' } }, reset);
  assert.equal(errorOf(openaiErrors, openaiFacts(limited.res, limited.text)).retryAfterMs, 360_000);
  // OpenAI sends its rate-limit headers on every answer: on a 503 they say nothing of the outage.
  const overloaded = answer(503, { error: { message: 'The engine is currently overloaded', type: 'server_error', param: null, code: null } }, reset);
  const err = errorOf(openaiErrors, openaiFacts(overloaded.res, overloaded.text));
  assert.equal(err.retryable, true);
  assert.equal(err.retryAfterMs, undefined);
  const asked = answer(503, { error: { message: 'slow down', type: 'server_error', param: null, code: null } }, { ...reset, 'retry-after': '7' });
  assert.equal(errorOf(openaiErrors, openaiFacts(asked.res, asked.text)).retryAfterMs, 7_000);
  // xAI's table reads the same headers the same way.
  const xai500 = answer(500, { code: 'internal', error: 'boom' }, { 'x-ratelimit-reset': String(Math.floor(Date.now() / 1000) + 30) });
  assert.equal(errorOf(xaiErrors, xaiFacts(xai500.res, xai500.text, 'check')).retryAfterMs, undefined);
  assert.equal(retryAfterFromHeaders(new Headers(reset), Date.now(), 500), undefined);
  assert.equal(retryAfterFromHeaders(new Headers(reset), Date.now(), 429), 360_000);
});

test("Retry-After is capped by the job's remaining deadline", () => {
  assert.equal(retryWaitMs(undefined, 10_000), undefined, 'no ask: the retry schedule decides');
  assert.equal(retryWaitMs(3_600_000, 90_000), 90_000, 'an hour asked, 90 s left: 90 s');
  assert.equal(retryWaitMs(5_000, 90_000), 5_000, 'an ask within the deadline stands');
  assert.equal(retryWaitMs(60_000, undefined), 60_000, 'no deadline known: the ask');
  assert.equal(retryWaitMs(60_000, -5_000), 100, 'past the deadline: at once (the deadline then ends the job)');
  assert.equal(retryWaitMs(20, 90_000), 100, 'at least 100 ms');
});

test("fal: a 404 on submit is the route's (the model is gone) even with an error type; a 404 with a type elsewhere is not", () => {
  const gone = answer(404, { detail: [{ loc: ['path', 'endpoint_id'], msg: 'Application not found', type: 'not_found' }] });
  const err = errorOf(falErrors, falFacts(gone.res, gone.text, 'submit'));
  assert.equal(err.route, true, err.message);
  assert.equal(err.retryable, false);
  assert.match(err.message, /the model is not served on this route/);
  const untyped = answer(404, { detail: 'Application not found' });
  assert.equal(errorOf(falErrors, falFacts(untyped.res, untyped.text, 'submit')).route, true);
  // A typed 4xx of a model (validation) stays the customer's.
  const invalid = answer(422, { detail: [{ loc: ['body', 'prompt'], msg: 'too long', type: 'string_too_long' }] });
  const bad = errorOf(falErrors, falFacts(invalid.res, invalid.text, 'submit'));
  assert.equal([bad.retryable, bad.failsOverNow].join(), 'false,false');
});

test('OpenAI: a 403 for an unverified organization moves the job to another route and does not call the key bad', () => {
  const unverified = answer(403, {
    error: {
      message:
        'Your organization must be verified to use the model `gpt-image-2`. Please go to: https://platform.openai.com/settings/organization/general and click on Verify Organization. If you just verified, it can take up to 15 minutes for access to propagate.',
      type: 'invalid_request_error',
      param: null,
      code: null,
    },
  });
  const err = errorOf(openaiErrors, openaiFacts(unverified.res, unverified.text));
  assert.equal(err.route, true, err.message);
  assert.equal(err.account, false);
  assert.match(err.message, /organization is not verified/);
  assert.doesNotMatch(err.message, /refused our credentials|check the API key/);
  // A plain 403 (a key without access) is still our credentials.
  const denied = answer(403, { error: { message: 'You are not allowed to sample from this model', type: 'invalid_request_error', param: null, code: null } });
  const refused = errorOf(openaiErrors, openaiFacts(denied.res, denied.text));
  assert.equal(refused.account, true);
  assert.match(refused.message, /refused our credentials/);
});

let fake: FakeXai;
before(async () => {
  fake = await startFakeXai();
});
after(() => fake?.close());

test('xAI: an unknown status, or a done answer without status, is not a final failure of a paid job', async () => {
  const xai = createXaiAdapter({ key: fake.key, baseUrl: fake.url, timeoutMs: 2000 });
  const ctx = { signal: new AbortController().signal, attempt: 1, heartbeat: () => {} } as unknown as ProviderContext;
  const ref = { provider: 'xai' as const, jobId: 'job_1', requestId: 'req-unknown' };
  fake.script('status', json(200, { status: 'rendering', progress: 40 }));
  assert.deepEqual(await xai.poll(ref, ctx), { state: 'running', percent: 40 });
  fake.script('status', json(200, {}));
  assert.deepEqual(await xai.poll(ref, ctx), { state: 'running', percent: undefined });
  fake.script('status', json(200, { video: { url: 'https://vidgen.x.ai/v.mp4', duration: 6, respect_moderation: true }, model: 'grok-imagine-video' }));
  const done = await xai.poll(ref, ctx);
  assert.equal(done.state, 'succeeded');
  assert.equal(done.outputs?.[0]?.url, 'https://vidgen.x.ai/v.mp4');
});
