// The provider steps' side of the route slot pools (ROUTE_SLOTS; shared/route-slots.ts and
// db/repos/route-slots.ts): a submit takes a slot of its route first, or fails with a retryable
// RouteSlotBusy that sends it back through the fair task queue; a check renews the slot while the
// request runs and gives it back once the request ended at the provider.
import { ApplicationFailure } from '@temporalio/activity';
import type { Database } from '../../db/index.js';
import type { Job } from '../../db/schema.js';
import * as slotsRepo from '../../db/repos/route-slots.js';
import type { Config } from '../../shared/config.js';
import { failureTypes } from '../../shared/failure-types.js';
import { parseRouteSlots, routePoolFor, SLOT_WAITER_FRESH_MS, type RoutePool } from '../../shared/route-slots.js';

/**
 * A waiting submit asks again after this long, plus SLOT_RETRY_STEP_MS per waiter of its workspace
 * before it, at most SLOT_RETRY_MAX_MS: the first waiters take a freed slot within about a second,
 * while a backlog of thousands does not turn into thousands of takes a second on the route's lock.
 */
export const SLOT_RETRY_MS = 1_000;
export const SLOT_RETRY_STEP_MS = 200;
export const SLOT_RETRY_MAX_MS = 10_000;
export function createRouteSlots(deps: { db: Database; config: Pick<Config, 'ROUTE_SLOTS' | 'ROUTE_SLOT_LEASE_MS'> }) {
  const pools = parseRouteSlots(deps.config.ROUTE_SLOTS);
  const leaseMs = deps.config.ROUTE_SLOT_LEASE_MS;
  const poolOf = (provider: string, job: Pick<Job, 'model' | 'params'>): RoutePool | null => {
    const providerModelId = (job.params as { provider_model_id?: unknown }).provider_model_id;
    return routePoolFor(pools, provider, job.model, typeof providerModelId === 'string' ? providerModelId : undefined);
  };
  return {
    /**
     * Takes the job's slot at `provider` before its submit. Answers how many attempts of the submit
     * step only waited for it (0 without a pool), so its provider-outage clock starts at the attempt
     * that took it. Throws a retryable RouteSlotBusy when the job must wait.
     */
    async take(provider: string, job: Job, attempt: number): Promise<number> {
      const pool = poolOf(provider, job);
      if (!pool) return 0;
      const who = { jobId: job.id, workspaceId: job.workspace_id, weight: job.fairness_weight, priority: job.priority };
      const result = await slotsRepo.takeSlot(deps.db, pool, who, { leaseMs, waiterFreshMs: SLOT_WAITER_FRESH_MS, attempt });
      if (result.granted) return result.takenAttempt - 1;
      const why = result.reason === 'full' ? 'all its slots are in use' : result.reason === 'share' ? 'its workspace holds its share' : 'other jobs come first';
      throw ApplicationFailure.create({
        type: failureTypes.routeSlotBusy,
        message: `waiting for a slot of route ${pool.route} (${pool.slots} slots): ${why}`,
        nextRetryDelay: Math.min(SLOT_RETRY_MS + SLOT_RETRY_STEP_MS * result.position, SLOT_RETRY_MAX_MS),
      });
    },
    /**
     * The job's request runs (a check found it so, or a retried submit found it made): its slot's
     * lease is renewed. Answers, like take, the attempts of the submit step that only waited.
     */
    async renew(provider: string, job: Job): Promise<number> {
      const pool = poolOf(provider, job);
      if (!pool) return 0;
      const takenAttempt = await slotsRepo.renewSlot(deps.db, pool, { jobId: job.id, workspaceId: job.workspace_id, weight: job.fairness_weight }, leaseMs);
      return takenAttempt - 1;
    },
    /** The job's request ended at its route: its slot goes back. */
    async release(jobId: string): Promise<void> {
      if (pools.size > 0) await slotsRepo.releaseSlot(deps.db, jobId);
    },
  };
}

export type RouteSlots = ReturnType<typeof createRouteSlots>;
