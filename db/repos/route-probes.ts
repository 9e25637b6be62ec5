// The route health probe's rows (0020_route_probes): SQL only; when to probe and what a provider's
// answer means are in worker/route-prober.ts and activities/providers/probes.ts.
import { sql } from 'kysely';
import type { Queryable } from '../index.js';
import type { RouteProbeStatus } from '../schema.js';

interface RouteProbeRow {
  provider: string;
  model: string;
  provider_model_id: string;
  status: RouteProbeStatus;
  reason: string | null;
  checked_at: Date | null;
}

/**
 * Claims the route for one probe if it is due: its row is created, or its next probe moved `leaseMs`
 * ahead, in one statement, so of many replicas asking at once exactly one gets it. Answers the
 * route's state before the claim (status available for a new row), or undefined when it is not due.
 */
export async function claimDueProbe(
  db: Queryable,
  route: { provider: string; model: string; providerModelId: string },
  leaseMs: number,
): Promise<{ status: RouteProbeStatus } | undefined> {
  const next = sql<Date>`now() + make_interval(secs => ${leaseMs / 1000})`;
  const row = await db
    .insertInto('route_probes')
    .values({ provider: route.provider, model: route.model, provider_model_id: route.providerModelId, next_probe_at: next })
    .onConflict((oc) =>
      oc
        .columns(['provider', 'model'])
        .doUpdateSet({ next_probe_at: next, provider_model_id: route.providerModelId })
        .where('route_probes.next_probe_at', '<=', sql<Date>`now()`),
    )
    .returning('status')
    .executeTakeFirst();
  return row;
}

/** Records a definite answer: the route is available, or not (with why); `changed` when the status moved. */
export async function recordProbe(
  db: Queryable,
  route: { provider: string; model: string },
  outcome: { status: RouteProbeStatus; reason: string | null },
): Promise<{ changed: boolean }> {
  const before = await db
    .selectFrom('route_probes')
    .select('status')
    .where('provider', '=', route.provider)
    .where('model', '=', route.model)
    .executeTakeFirst();
  const changed = before !== undefined && before.status !== outcome.status;
  await db
    .updateTable('route_probes')
    .set({
      status: outcome.status,
      reason: outcome.reason?.slice(0, 500) ?? null,
      last_error: null,
      checked_at: sql`now()`,
      ...(changed ? { changed_at: sql`now()` } : {}),
    })
    .where('provider', '=', route.provider)
    .where('model', '=', route.model)
    .execute();
  return { changed };
}

/** Records a probe that could not tell (transport failure, 5xx): the status stays as it was. */
export async function recordProbeError(db: Queryable, route: { provider: string; model: string }, error: string): Promise<void> {
  await db
    .updateTable('route_probes')
    .set({ last_error: error.slice(0, 500) })
    .where('provider', '=', route.provider)
    .where('model', '=', route.model)
    .execute();
}

/** Routes the probe found unavailable (what GET /v1/models and the failover read: few, usually none). */
export async function unavailableRoutes(db: Queryable, model?: string): Promise<Array<Pick<RouteProbeRow, 'provider' | 'model' | 'reason' | 'checked_at'>>> {
  let q = db.selectFrom('route_probes').select(['provider', 'model', 'reason', 'checked_at']).where('status', '=', 'unavailable');
  if (model !== undefined) q = q.where('model', '=', model);
  return q.orderBy('model').orderBy('provider').execute();
}

/** Every probed route with its status (the fleet-wide availability gauge). */
export async function probedRoutes(db: Queryable): Promise<Array<Pick<RouteProbeRow, 'provider' | 'model' | 'status'>>> {
  return db.selectFrom('route_probes').select(['provider', 'model', 'status']).orderBy('model').orderBy('provider').execute();
}

/** What a provider announced of a route's model: deprecated (with a shutdown date when it gave one). */
interface RouteLifecycle {
  /** YYYY-MM-DD, or null when the provider gave no date. */
  shutdownAt: string | null;
  /** What was read, in words. */
  signal: string;
}

/**
 * Records a provider's deprecation of a route's model: deprecated_at is the day it was first read,
 * kept across probes; the announcement is `fresh` (to alert on) when it is new or its shutdown date
 * moved, so one announcement alerts once however many probes and replicas read it.
 */
export async function recordLifecycle(
  db: Queryable,
  route: { provider: string; model: string },
  l: RouteLifecycle,
): Promise<{ fresh: boolean; deprecatedAt: string }> {
  const row = await db
    .updateTable('route_probes')
    .set({
      deprecated_at: sql<string>`coalesce(deprecated_at, current_date)`,
      shutdown_at: l.shutdownAt,
      lifecycle_signal: l.signal.slice(0, 500),
      lifecycle_alerted_at: sql<Date>`case when deprecated_at is not null and shutdown_at is not distinct from ${l.shutdownAt}::date then lifecycle_alerted_at else now() end`,
    })
    .where('provider', '=', route.provider)
    .where('model', '=', route.model)
    .returning([sql<string>`to_char(deprecated_at, 'YYYY-MM-DD')`.as('deprecated_at'), sql<boolean>`lifecycle_alerted_at = now()`.as('fresh')])
    .executeTakeFirst();
  return { fresh: row?.fresh ?? false, deprecatedAt: row?.deprecated_at ?? '' };
}

/** The provider no longer announces a deprecation of the route's model (it took it back): the route's lifecycle fields are cleared. */
export async function clearLifecycle(db: Queryable, route: { provider: string; model: string }): Promise<{ cleared: boolean }> {
  const res = await db
    .updateTable('route_probes')
    .set({ deprecated_at: null, shutdown_at: null, lifecycle_signal: null, lifecycle_alerted_at: null })
    .where('provider', '=', route.provider)
    .where('model', '=', route.model)
    .where('deprecated_at', 'is not', null)
    .executeTakeFirst();
  return { cleared: Number(res.numUpdatedRows) > 0 };
}

/** Routes whose provider announced a deprecation (GET /v1/models and the shutdown gauge read them: few, usually none). */
export async function deprecatedRoutes(
  db: Queryable,
): Promise<Array<{ provider: string; model: string; deprecated_at: string; shutdown_at: string | null; signal: string | null }>> {
  return db
    .selectFrom('route_probes')
    .select([
      'provider',
      'model',
      sql<string>`to_char(deprecated_at, 'YYYY-MM-DD')`.as('deprecated_at'),
      sql<string | null>`to_char(shutdown_at, 'YYYY-MM-DD')`.as('shutdown_at'),
      'lifecycle_signal as signal',
    ])
    .where('deprecated_at', 'is not', null)
    .orderBy('model')
    .orderBy('provider')
    .execute();
}
