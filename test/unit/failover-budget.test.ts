// The rules that keep a failover from paying twice and a deploy from aborting a paid call, as pure
// functions: when a provider step may give its route up (activities/jobs.ts givesUp), and each
// provider fleet's shutdown grace (activities/providers/call-timeouts.ts).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { givesUp } from '../../activities/jobs.js';
import { failingForMs } from '../../shared/provider-retry.js';
import { AFTER_CALL_MARGIN_MS, longestCallMs, providerShutdownGraceMs } from '../../activities/providers/call-timeouts.js';
import { providerNames } from '../../shared/job-model.js';

describe('giving a route up', () => {
  const budgetMs = 300_000;

  test('the time a provider has been failing comes from the retry schedule between attempts', () => {
    assert.deepEqual([1, 2, 3, 4, 5, 6, 7].map(failingForMs), [0, 2_000, 6_000, 14_000, 30_000, 60_000, 90_000]);
  });

  test('a request the provider last reported running or done is never given up, however long it fails', () => {
    for (const reported of ['running', 'succeeded'] as const) {
      assert.equal(givesUp({ failover: true, reported }, 100, budgetMs), false, reported);
    }
  });

  test('a submit, or a request still queued, is given up only once the provider failed for the budget', () => {
    for (const step of [{ failover: true }, { failover: true, reported: 'queued' as const }]) {
      assert.equal(givesUp(step, 5, budgetMs), false, 'the old five attempts (30 s of 5xx) are no outage');
      assert.equal(givesUp(step, 13, budgetMs), false, `${failingForMs(13) / 1000} s`);
      assert.equal(givesUp(step, 14, budgetMs), true, `${failingForMs(14) / 1000} s`);
      assert.equal(givesUp(step, 1, 1_500), false, 'never at the first failure');
      assert.equal(givesUp(step, 2, 1_500), true);
    }
  });
});

describe('shutdown grace of provider fleets', () => {
  test('at least the longest paid call of its providers, plus the margin to report it', () => {
    assert.equal(providerShutdownGraceMs(['openai'], 30_000), 600_000 + AFTER_CALL_MARGIN_MS);
    assert.equal(providerShutdownGraceMs(['elevenlabs'], 30_000), 240_000 + AFTER_CALL_MARGIN_MS);
    assert.equal(providerShutdownGraceMs(['fal', 'azure'], 30_000), 600_000 + AFTER_CALL_MARGIN_MS);
    assert.equal(providerShutdownGraceMs(['fal'], 900_000), 900_000, 'a longer configured grace stays');
    assert.equal(providerShutdownGraceMs(['local'], 20_000), 20_000, 'a free provider keeps the configured grace');
  });

  test('every provider has its longest call stated', () => {
    for (const name of providerNames) assert.ok(Number.isInteger(longestCallMs[name]) && longestCallMs[name] >= 0, name);
  });
});
