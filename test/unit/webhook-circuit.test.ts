// The webhook circuit breaker's state machine (shared/webhooks/circuit.ts), driven with explicit
// clocks: what opens it (a destination that accepted nothing for the span, across enough failures),
// what never does (4xx, a burst of failures within a second, a receiver that fails the first two
// attempts of every event), and how it recovers (several trials; the first success closes it; only
// all trials failing reopens it; a trial never reported frees its place).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  admitAttempt,
  closedCircuit,
  outcomeOfStatus,
  recordOutcome,
  type AttemptOutcome,
  type Circuit,
  type CircuitPolicy,
} from '../../shared/webhooks/circuit.js';

/** The production defaults (shared/config.ts: 10 failures, 30 s, 60 s cooldown, 3 trials, 10 s + 5 s trial). */
const policy: CircuitPolicy = { failures: 10, spanMs: 30_000, cooldownMs: 60_000, trials: 3, trialTimeoutMs: 15_000 };
const at = (s: number) => new Date(s * 1000);

/** Records outcomes at the given seconds, all not trials. */
function feed(c: Circuit, events: Array<[number, AttemptOutcome]>): Circuit {
  for (const [s, o] of events) c = recordOutcome(c, o, false, at(s), policy);
  return c;
}

/** A destination that fails every attempt, tried once a second from `from` to `to`. */
const failingEvery = (from: number, to: number): Array<[number, AttemptOutcome]> => Array.from({ length: to - from + 1 }, (_, i) => [from + i, 'failure']);

/** Opens a circuit at second 30 (failures each second from 0). */
const opened = () => feed(closedCircuit, failingEvery(0, 30));

describe('closed', () => {
  test('answers count as their status says: 2xx success, 5xx failure, 4xx and 3xx neutral', () => {
    assert.deepEqual([200, 204, 299, 500, 503, 599, 404, 400, 429, 302, 0].map(outcomeOfStatus), [
      'success',
      'success',
      'success',
      'failure',
      'failure',
      'failure',
      'neutral',
      'neutral',
      'neutral',
      'neutral',
      'neutral',
    ]);
  });

  test('admits every attempt without a change', () => {
    const { admission, next } = admitAttempt(closedCircuit, at(0), policy);
    assert.deepEqual(admission, { admitted: true, trial: false });
    assert.equal(next, closedCircuit);
  });

  test('a destination that accepted nothing for the span, across enough failures, opens', () => {
    const c = feed(closedCircuit, failingEvery(0, 29));
    assert.equal(c.state, 'closed', '30 failures over 29 s: not yet the span');
    const open = recordOutcome(c, 'failure', false, at(30), policy);
    assert.equal(open.state, 'open');
    assert.deepEqual(open.openUntil, at(90));
  });

  test('a burst of failures within a second never opens it, however many', () => {
    const c = feed(
      closedCircuit,
      Array.from({ length: 500 }, () => [0, 'failure'] as [number, AttemptOutcome]),
    );
    assert.equal(c.state, 'closed');
    assert.equal(c.failures, 500);
  });

  test('a span of failures too few does not open it (a single event retrying)', () => {
    // One event's backoff: 0, 5, 15, 35 s: four failures over 35 s.
    assert.equal(
      feed(closedCircuit, [
        [0, 'failure'],
        [5, 'failure'],
        [15, 'failure'],
        [35, 'failure'],
      ]).state,
      'closed',
    );
  });

  test('4xx never opens it', () => {
    const c = feed(
      closedCircuit,
      Array.from({ length: 120 }, (_, i) => [i, 'neutral'] as [number, AttemptOutcome]),
    );
    assert.equal(c, closedCircuit);
  });

  test('a success ends the streak', () => {
    const c = feed(closedCircuit, [...failingEvery(0, 25), [26, 'success'], ...failingEvery(27, 50)]);
    assert.equal(c.state, 'closed', 'never 30 s without a success');
    assert.deepEqual(c.failingSince, at(27));
  });

  test('failures further apart than the span start a new streak (no opening on a stale streak)', () => {
    const c = feed(closedCircuit, [...failingEvery(0, 9), [100, 'failure']]);
    assert.equal(c.state, 'closed');
    assert.equal(c.failures, 1);
    assert.deepEqual(c.failingSince, at(100));
  });

  test('a receiver failing the first two attempts of every event (retries 5 s, 10 s) is never opened', () => {
    // Ten events a second for five minutes, each failing at t and t+5 and delivered at t+15.
    const events: Array<[number, AttemptOutcome]> = [];
    for (let t = 0; t < 300; t++) for (let i = 0; i < 10; i++) events.push([t, 'failure'], [t + 5, 'failure'], [t + 15, 'success']);
    events.sort((a, b) => a[0] - b[0] || (a[1] === 'success' ? 1 : -1));
    let c = closedCircuit;
    for (const [s, o] of events) {
      c = recordOutcome(c, o, false, at(s), policy);
      assert.equal(c.state, 'closed', `at ${s} s`);
    }
  });
});

describe('open', () => {
  test('attempts wait until the cooldown is over, and are told how long', () => {
    const c = opened();
    const { admission, next } = admitAttempt(c, at(50), policy);
    assert.deepEqual(admission, { admitted: false, waitMs: 40_000, state: 'open' });
    assert.equal(next, c);
  });

  test('failures of attempts admitted before it opened change nothing; a success closes it', () => {
    const c = opened();
    assert.equal(recordOutcome(c, 'failure', false, at(31), policy), c);
    assert.equal(recordOutcome(c, 'neutral', false, at(31), policy), c);
    assert.equal(recordOutcome(c, 'success', false, at(31), policy), closedCircuit);
  });
});

describe('half-open', () => {
  const halfOpen = () => admitAttempt(opened(), at(90), policy).next;

  test('after the cooldown, up to `trials` attempts go out as trials; the rest wait for the round', () => {
    let c = opened();
    const admissions = [];
    for (let i = 0; i < 4; i++) {
      const r = admitAttempt(c, at(90), policy);
      admissions.push(r.admission);
      c = r.next;
    }
    assert.deepEqual(admissions, [
      { admitted: true, trial: true },
      { admitted: true, trial: true },
      { admitted: true, trial: true },
      { admitted: false, waitMs: 15_000, state: 'half_open' },
    ]);
    assert.equal(c.state, 'half_open');
  });

  test('one trial succeeding closes it, even after the others failed', () => {
    let c = halfOpen();
    c = admitAttempt(c, at(90), policy).next;
    c = admitAttempt(c, at(90), policy).next;
    c = recordOutcome(c, 'failure', true, at(91), policy);
    c = recordOutcome(c, 'failure', true, at(91), policy);
    assert.equal(c.state, 'half_open');
    assert.equal(recordOutcome(c, 'success', true, at(92), policy), closedCircuit);
  });

  test('every trial failing opens it again for a cooldown', () => {
    let c = halfOpen();
    c = admitAttempt(c, at(90), policy).next;
    c = admitAttempt(c, at(90), policy).next;
    for (let i = 0; i < 3; i++) c = recordOutcome(c, 'failure', true, at(92), policy);
    assert.equal(c.state, 'open');
    assert.deepEqual(c.openUntil, at(152));
    assert.equal(admitAttempt(c, at(100), policy).admission.admitted, false);
  });

  test('a 4xx trial says nothing: its place goes to another attempt', () => {
    let c = halfOpen();
    c = admitAttempt(c, at(90), policy).next;
    c = admitAttempt(c, at(90), policy).next;
    assert.equal(admitAttempt(c, at(90), policy).admission.admitted, false);
    c = recordOutcome(c, 'neutral', true, at(91), policy);
    assert.deepEqual(admitAttempt(c, at(91), policy).admission, { admitted: true, trial: true });
  });

  test('a failure of an attempt that was not a trial does not count against the round', () => {
    const c = halfOpen();
    assert.equal(recordOutcome(c, 'failure', false, at(91), policy), c);
  });

  test('trials never reported (their worker died) free their places after the trial timeout', () => {
    let c = halfOpen();
    c = admitAttempt(c, at(90), policy).next;
    c = admitAttempt(c, at(90), policy).next;
    assert.equal(admitAttempt(c, at(104), policy).admission.admitted, false);
    const r = admitAttempt(c, at(105), policy);
    assert.deepEqual(r.admission, { admitted: true, trial: true });
    assert.equal(r.next.trialsAdmitted, 1);
    assert.deepEqual(r.next.trialsStartedAt, at(105));
  });
});
