// The circuit breaker per provider and model, shared by every worker through Postgres. Its input is
// the outcome of route attempts (a job completed on the route, or gave it up and failed over), so a
// breaker counts jobs, not HTTP calls, and the customer's own faults (moderation, invalid input)
// count for nothing, and each job's outcome on a route counts once however often its step repeats.
// Closed: every job may use the route; open once at least `minAttempts` attempts ended within the
// window and `failurePercent` of them failed over, new jobs then skip the route; after `openMs` one
// trial job goes through (half-open), named by its token (the job id): only its completing closes
// the breaker, its failing over opens it again; jobs admitted before the breaker opened only count.
// A trial that has not ended after `trialMs` lets another one through.
import type { Database } from './index.js';
import * as circuits from './repos/provider-circuits.js';
import type { CircuitRow } from './repos/provider-circuits.js';
import type { CircuitState } from './schema.js';
import { unavailableRoutes } from './repos/route-probes.js';

export interface CircuitPolicy {
  windowMs: number;
  minAttempts: number;
  failurePercent: number;
  openMs: number;
  /** How long a half-open trial holds the route before another may go through. */
  trialMs: number;
}

/** A route attempt that ended: completed there (ok) or failed over (with why), by job `jobId`. */
interface RouteOutcome {
  ok: boolean;
  error?: string;
  jobId?: string;
}

/** The breaker after one route attempt ended at `now` (pure: the rules, apart from the SQL). */
export function nextCircuit(row: CircuitRow, outcome: RouteOutcome, policy: CircuitPolicy, now: Date): CircuitRow {
  const next = { ...row };
  if (now.getTime() - row.window_started_at.getTime() > policy.windowMs) Object.assign(next, { window_started_at: now, attempts: 0, failures: 0 });
  next.attempts += 1;
  if (!outcome.ok) {
    next.failures += 1;
    next.last_error = outcome.error?.slice(0, 500) ?? null;
  }
  const open = { state: 'open' as const, opened_at: now, trial_at: null, trial_token: null };
  switch (row.state) {
    case 'closed':
      if (next.attempts >= policy.minAttempts && next.failures * 100 >= policy.failurePercent * next.attempts) Object.assign(next, open);
      return next;
    case 'half_open':
      // Only the trial decides: back to normal with a fresh window, or open for another period.
      // Another job's outcome (admitted before the breaker opened) is only counted.
      if (outcome.jobId === undefined || outcome.jobId !== row.trial_token) return next;
      return outcome.ok
        ? { ...next, state: 'closed', window_started_at: now, attempts: 0, failures: 0, opened_at: null, trial_at: null, trial_token: null }
        : { ...next, ...open };
    case 'open':
      // Jobs admitted before it opened still report; only a trial closes it.
      return next;
  }
}

export function createProviderCircuits(db: Database, policy: CircuitPolicy) {
  return {
    /** Whether job `jobId` may use the route now (an open breaker past its period lets one trial through, this job). */
    async admit(provider: string, model: string, jobId: string): Promise<boolean> {
      if ((await circuits.circuitState(db, provider, model)) === 'closed') return true;
      return circuits.takeTrial(db, provider, model, jobId, policy);
    },

    /**
     * Counts a route attempt that ended: completed on the route (ok) or failed over (not ok, with
     * why); once per job and route when the job is named (a repeat answers the state unchanged).
     */
    async record(provider: string, model: string, outcome: RouteOutcome): Promise<CircuitState> {
      return db.transaction().execute(async (tx) => {
        if (outcome.jobId !== undefined && !(await circuits.countOutcomeOnce(tx, outcome.jobId, provider, outcome.ok)))
          return circuits.circuitState(tx, provider, model);
        const { row, now } = await circuits.lockCircuit(tx, provider, model);
        const next = nextCircuit(row, outcome, policy, now);
        await circuits.writeCircuit(tx, next);
        return next.state;
      });
    },

    states: () => circuits.openCircuits(db),

    /**
     * The providers whose route of `model` the route health probe found gone (or its key refused):
     * out of rotation whatever their breaker says, until a probe finds the model again.
     */
    async outOfRotation(model: string): Promise<ReadonlySet<string>> {
      return new Set((await unavailableRoutes(db, model)).map((r) => r.provider));
    },
  };
}

export type ProviderCircuits = ReturnType<typeof createProviderCircuits>;

/** The route attempts that ended within this window are what a circuit counts. */
const BREAKER_WINDOW_MS = 300_000;
/** A half-open trial that has not ended after this long (a video job runs for minutes) lets the next trial through. */
const BREAKER_TRIAL_MS = 900_000;

/** The breaker policy from configuration: when it opens, and for how long. */
export function circuitPolicy(config: {
  PROVIDER_BREAKER_MIN_ATTEMPTS: number;
  PROVIDER_BREAKER_FAILURE_PERCENT: number;
  PROVIDER_BREAKER_OPEN_MS: number;
}): CircuitPolicy {
  return {
    windowMs: BREAKER_WINDOW_MS,
    minAttempts: config.PROVIDER_BREAKER_MIN_ATTEMPTS,
    failurePercent: config.PROVIDER_BREAKER_FAILURE_PERCENT,
    openMs: config.PROVIDER_BREAKER_OPEN_MS,
    trialMs: BREAKER_TRIAL_MS,
  };
}
