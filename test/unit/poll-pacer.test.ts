// A wait's polls keep to PROVIDER_RATE_PER_SECOND in the process that runs them
// (activities/jobs/await.ts pollPacer): polls asked for at once take the next free moments of their
// provider's schedule, each provider apart, and a provider without a rate is never held.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pollPacer } from '../../activities/jobs/await.js';

test('polls asked for together go 1000/rate ms apart; a poll asked for after the schedule emptied goes at once', () => {
  let now = 10_000;
  const delay = pollPacer({ fal: 2 }, () => now);
  assert.deepEqual([delay('fal'), delay('fal'), delay('fal')], [0, 500, 1000]);
  now += 400;
  assert.equal(delay('fal'), 1100, 'behind the three already scheduled (at +1500)');
  now += 5_000;
  assert.equal(delay('fal'), 0);
});

test('each provider keeps its own schedule, and one without a rate is never held', () => {
  const now = 0;
  const delay = pollPacer({ fal: 1, xai: 4 }, () => now);
  assert.deepEqual([delay('fal'), delay('xai'), delay('fal'), delay('xai'), delay('xai')], [0, 0, 1000, 250, 500]);
  assert.deepEqual([delay('google'), delay('google'), delay('google')], [0, 0, 0]);
});
