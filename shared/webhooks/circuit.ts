// The webhook circuit breaker's state machine, as pure functions over one circuit (one workspace's
// one destination); db/repos/webhooks.ts stores the state and applies these under a row lock.
//
// What it must not do is declare a flaky-but-working receiver dead: a receiver that answers 500 to
// the first two attempts of every event and 204 to the third still accepts something every few
// seconds. So the circuit opens only when the destination has accepted NOTHING for a while despite
// being tried: at least `failures` counted failures, none more than `spanMs` after the one before,
// the first at least `spanMs` ago, and no success since. A burst of first attempts that all fail
// within a second never opens it on its own; a destination dead for `spanMs` of continued attempts
// does.
//
// Recovery does not hang on one probe: once `cooldownMs` has passed, the circuit is half-open and
// admits up to `trials` attempts; the first success (from a trial or any other attempt) closes it,
// and it opens again only when every trial failed. A trial whose outcome never comes back (its
// worker died) frees its place after `trialTimeoutMs`.
//
// Only connection errors, timeouts and 5xx count as failures; 4xx (and any other non-2xx answer)
// is the receiver's answer about that event, not about its health: neutral.

export type CircuitState = 'closed' | 'open' | 'half_open';

export interface Circuit {
  state: CircuitState;
  /** Counted failures since the last success (the current streak). */
  failures: number;
  /** When the current streak's first failure happened; null without a streak. */
  failingSince: Date | null;
  /** The streak's latest failure: a failure more than spanMs after it starts a new streak. */
  lastFailureAt: Date | null;
  /** Open: attempts wait until then. */
  openUntil: Date | null;
  /** Half-open: trials admitted in the current round, trials of it that failed, and when it began. */
  trialsAdmitted: number;
  trialFailures: number;
  trialsStartedAt: Date | null;
}

export interface CircuitPolicy {
  /** Counted failures the streak needs before it can open the circuit. */
  failures: number;
  /** How long the destination must have accepted nothing (and the longest gap inside a streak). */
  spanMs: number;
  /** How long an open circuit keeps attempts waiting before trials. */
  cooldownMs: number;
  /** Attempts admitted at once while half-open. */
  trials: number;
  /** A trial not reported after this long (its attempt timed out or its worker died) frees its place. */
  trialTimeoutMs: number;
}

/** success: 2xx. failure: connection error, timeout, 5xx. neutral: any other answer (4xx, 3xx). */
export type AttemptOutcome = 'success' | 'failure' | 'neutral';

export type Admission = { admitted: true; trial: boolean } | { admitted: false; waitMs: number; state: 'open' | 'half_open' };

export const closedCircuit: Circuit = {
  state: 'closed',
  failures: 0,
  failingSince: null,
  lastFailureAt: null,
  openUntil: null,
  trialsAdmitted: 0,
  trialFailures: 0,
  trialsStartedAt: null,
};

/** How an answer counts: 2xx success, 5xx failure, anything else neutral. */
export function outcomeOfStatus(status: number): AttemptOutcome {
  if (status >= 200 && status <= 299) return 'success';
  if (status >= 500) return 'failure';
  return 'neutral';
}

const ms = (d: Date | null) => d?.getTime() ?? 0;

/**
 * Whether an attempt may go out now, and the circuit after that decision (the same object when
 * nothing changed, so a caller writes only on a change).
 */
export function admitAttempt(c: Circuit, now: Date, p: CircuitPolicy): { admission: Admission; next: Circuit } {
  if (c.state === 'closed') return { admission: { admitted: true, trial: false }, next: c };
  if (c.state === 'open') {
    const waitMs = ms(c.openUntil) - now.getTime();
    if (waitMs > 0) return { admission: { admitted: false, waitMs, state: 'open' }, next: c };
    return {
      admission: { admitted: true, trial: true },
      next: { ...c, state: 'half_open', openUntil: null, trialsAdmitted: 1, trialFailures: 0, trialsStartedAt: now },
    };
  }
  const roundEnds = ms(c.trialsStartedAt) + p.trialTimeoutMs;
  // The round's outcomes never all came back: start another.
  if (now.getTime() >= roundEnds)
    return { admission: { admitted: true, trial: true }, next: { ...c, trialsAdmitted: 1, trialFailures: 0, trialsStartedAt: now } };
  if (c.trialsAdmitted < p.trials) return { admission: { admitted: true, trial: true }, next: { ...c, trialsAdmitted: c.trialsAdmitted + 1 } };
  // Every place is taken: come back once the trials have had their time.
  return { admission: { admitted: false, waitMs: roundEnds - now.getTime(), state: 'half_open' }, next: c };
}

/** The circuit after an attempt's outcome (`trial`: the attempt was admitted as a half-open trial). */
export function recordOutcome(c: Circuit, outcome: AttemptOutcome, trial: boolean, now: Date, p: CircuitPolicy): Circuit {
  // Any delivery shows the destination works, whoever made it.
  if (outcome === 'success') return c.state === 'closed' && c.failures === 0 ? c : closedCircuit;
  if (c.state === 'closed') {
    if (outcome === 'neutral') return c;
    const continues = c.lastFailureAt !== null && now.getTime() - c.lastFailureAt.getTime() <= p.spanMs;
    const failingSince = continues ? c.failingSince! : now;
    const failures = continues ? c.failures + 1 : 1;
    if (failures >= p.failures && now.getTime() - failingSince.getTime() >= p.spanMs) {
      return { ...closedCircuit, state: 'open', failures, failingSince, lastFailureAt: now, openUntil: new Date(now.getTime() + p.cooldownMs) };
    }
    return { ...c, failures, failingSince, lastFailureAt: now };
  }
  // Open: only attempts admitted before it opened report now; their failures add nothing.
  if (c.state === 'open' || !trial) return c;
  if (outcome === 'neutral') return { ...c, trialsAdmitted: Math.max(0, c.trialsAdmitted - 1) };
  const trialFailures = c.trialFailures + 1;
  if (trialFailures >= p.trials) {
    return {
      ...closedCircuit,
      state: 'open',
      failures: c.failures + trialFailures,
      failingSince: c.failingSince,
      lastFailureAt: now,
      openUntil: new Date(now.getTime() + p.cooldownMs),
    };
  }
  return { ...c, trialFailures };
}
