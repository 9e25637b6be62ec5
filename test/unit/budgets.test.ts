// Budget periods and thresholds (shared/budgets.ts): UTC days and calendar months, and each alert
// threshold reached once per period.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseAlertAt, periodEnd, periodStart, thresholdsReached } from '../../shared/budgets.js';

test('a day starts at 00:00 UTC and resets at the next; a month at the first of the month, across a year end', () => {
  const t = new Date('2026-12-31T23:59:59.999Z');
  assert.equal(periodStart('day', t).toISOString(), '2026-12-31T00:00:00.000Z');
  assert.equal(periodEnd('day', periodStart('day', t)).toISOString(), '2027-01-01T00:00:00.000Z');
  assert.equal(periodStart('month', t).toISOString(), '2026-12-01T00:00:00.000Z');
  assert.equal(periodEnd('month', periodStart('month', t)).toISOString(), '2027-01-01T00:00:00.000Z');
  // February of a leap year, and the instant of the reset belongs to the next period.
  assert.equal(periodEnd('month', periodStart('month', new Date('2028-02-10T12:00:00Z'))).toISOString(), '2028-03-01T00:00:00.000Z');
  assert.equal(periodStart('day', new Date('2027-01-01T00:00:00.000Z')).toISOString(), '2027-01-01T00:00:00.000Z');
});

test('thresholds fire once, in order, from the highest already sent', () => {
  assert.deepEqual(thresholdsReached([80, 100], 40, 31, 0), []);
  assert.deepEqual(thresholdsReached([80, 100], 40, 32, 0), [80]);
  assert.deepEqual(thresholdsReached([100, 80], 40, 40, 0), [80, 100]);
  assert.deepEqual(thresholdsReached([80, 100], 40, 40, 80), [100]);
  assert.deepEqual(thresholdsReached([80, 100], 40, 44, 100), []);
});

test('--alert-at takes 1 to 10 whole percentages', () => {
  assert.deepEqual(parseAlertAt('100, 50,50'), [50, 100]);
  assert.throws(() => parseAlertAt('0'));
  assert.throws(() => parseAlertAt('80,x'));
  assert.throws(() => parseAlertAt(''));
});
