// The rules that keep a failover from paying twice and a deploy from aborting a paid call, as pure
// functions: when a provider step may give its route up (activities/jobs.ts givesUp), and each
// provider fleet's shutdown grace (activities/providers/call-timeouts.ts).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { givesUp } from '../../activities/jobs.js';
import { AFTER_CALL_MARGIN_MS, IMAGES_API_TIMEOUT_MS, longestCallMs, providerShutdownGraceMs } from '../../activities/providers/call-timeouts.js';

describe('giving a route up', () => {
  const budgetMs = 300_000;
  const t0 = 1_000_000;

  test('a request the provider last reported running or done is never given up, however long it is unreachable', () => {
    for (const reported of ['running', 'succeeded'] as const) {
      assert.equal(givesUp({ failover: true, reported }, t0, budgetMs, t0 + 10 * budgetMs), false, reported);
    }
  });

  test('a submit, or a request still queued, is given up only once the provider was unreachable for the budget', () => {
    for (const step of [{ failover: true }, { failover: true, reported: 'queued' as const }]) {
      assert.equal(givesUp(step, t0, budgetMs, t0 + 30_000), false, 'thirty seconds of 5xx is no outage');
      assert.equal(givesUp(step, t0, budgetMs, t0 + budgetMs - 1), false);
      assert.equal(givesUp(step, t0, budgetMs, t0 + budgetMs), true);
    }
  });
});

describe('shutdown grace of provider fleets', () => {
  test('at least the longest paid call of its providers, plus the margin to report it', () => {
    assert.equal(providerShutdownGraceMs(['openai'], 30_000), IMAGES_API_TIMEOUT_MS + AFTER_CALL_MARGIN_MS);
    assert.equal(providerShutdownGraceMs(['elevenlabs'], 30_000), 240_000 + AFTER_CALL_MARGIN_MS);
    assert.equal(providerShutdownGraceMs(['fal', 'azure'], 30_000), IMAGES_API_TIMEOUT_MS + AFTER_CALL_MARGIN_MS);
    assert.equal(providerShutdownGraceMs(['fal'], 900_000), 900_000, 'a longer configured grace stays');
    assert.equal(providerShutdownGraceMs(['local'], 20_000), 20_000, 'a free provider keeps the configured grace');
  });

  test('every provider has its longest call stated', () => {
    for (const [name, ms] of Object.entries(longestCallMs)) assert.ok(Number.isInteger(ms) && ms >= 0, name);
  });
});
