// The circuit breaker rows of provider routes (0012_provider_failover): SQL only; the rules that move
// a breaker between closed, open and half-open are in db/provider-circuits.ts.
import { sql } from 'kysely';
import type { Queryable, Tx } from '../index.js';
import type { CircuitState } from '../schema.js';

export interface CircuitRow {
  provider: string;
  model: string;
  state: CircuitState;
  window_started_at: Date;
  attempts: number;
  failures: number;
  opened_at: Date | null;
  trial_at: Date | null;
  /** The job let through as the half-open trial. */
  trial_token: string | null;
  last_error: string | null;
}

/** The breaker of a route, locked for its update, with the database's clock; a closed one is created when missing. */
export async function lockCircuit(tx: Tx, provider: string, model: string): Promise<{ row: CircuitRow; now: Date }> {
  await tx
    .insertInto('provider_circuits')
    .values({ provider, model })
    .onConflict((oc) => oc.columns(['provider', 'model']).doNothing())
    .execute();
  const row = await tx
    .selectFrom('provider_circuits')
    .select([
      'provider',
      'model',
      'state',
      'window_started_at',
      'attempts',
      'failures',
      'opened_at',
      'trial_at',
      'trial_token',
      'last_error',
      sql<Date>`now()`.as('now'),
    ])
    .where('provider', '=', provider)
    .where('model', '=', model)
    .forUpdate()
    .executeTakeFirstOrThrow();
  const { now, ...circuit } = row;
  return { row: circuit, now };
}

export async function writeCircuit(tx: Tx, row: CircuitRow): Promise<void> {
  await tx
    .updateTable('provider_circuits')
    .set({
      state: row.state,
      window_started_at: row.window_started_at,
      attempts: row.attempts,
      failures: row.failures,
      opened_at: row.opened_at,
      trial_at: row.trial_at,
      trial_token: row.trial_token,
      last_error: row.last_error,
      updated_at: sql`now()`,
    })
    .where('provider', '=', row.provider)
    .where('model', '=', row.model)
    .execute();
}

/**
 * Lets one half-open trial through, identified by `token` (the job's id): an open breaker whose open
 * period (`openMs`) has passed, or a half-open one whose trial has not ended within `trialMs` (a
 * trial that never reported; minutes for a video job), becomes half-open with this trial recorded.
 * The same token asking again (a retried step) is let through again. One UPDATE, so of many
 * workers asking at once exactly one is let through.
 */
export async function takeTrial(db: Queryable, provider: string, model: string, token: string, spacing: { openMs: number; trialMs: number }): Promise<boolean> {
  const r = await db
    .updateTable('provider_circuits')
    .set({ state: 'half_open', trial_at: sql`now()`, trial_token: token, updated_at: sql`now()` })
    .where('provider', '=', provider)
    .where('model', '=', model)
    .where(
      sql<boolean>`(state = 'open' and coalesce(opened_at, now()) <= now() - make_interval(secs => ${spacing.openMs / 1000}))
        or (state = 'half_open' and (trial_token = ${token} or coalesce(trial_at, now()) <= now() - make_interval(secs => ${spacing.trialMs / 1000})))`,
    )
    .executeTakeFirst();
  return r.numUpdatedRows === 1n;
}

/** Marks the job's outcome on a route as counted; false when it was counted before (a repeated step). */
export async function countOutcomeOnce(tx: Tx, jobId: string, provider: string, ok: boolean): Promise<boolean> {
  const r = await tx
    .insertInto('provider_route_outcomes')
    .values({ job_id: jobId, provider, ok })
    .onConflict((oc) => oc.columns(['job_id', 'provider']).doNothing())
    .returning('job_id')
    .executeTakeFirst();
  return r !== undefined;
}

export async function circuitState(db: Queryable, provider: string, model: string): Promise<CircuitState> {
  const row = await db.selectFrom('provider_circuits').select('state').where('provider', '=', provider).where('model', '=', model).executeTakeFirst();
  return row?.state ?? 'closed';
}

/** Every breaker that is not closed (what operators and GET /v1/models are shown). */
export async function openCircuits(db: Queryable): Promise<Array<Pick<CircuitRow, 'provider' | 'model' | 'state' | 'opened_at' | 'last_error'>>> {
  return db
    .selectFrom('provider_circuits')
    .select(['provider', 'model', 'state', 'opened_at', 'last_error'])
    .where('state', '<>', 'closed')
    .orderBy('model')
    .orderBy('provider')
    .execute();
}
