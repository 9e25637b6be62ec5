// The provider steps' side of the route slot pools (ROUTE_SLOTS; shared/route-slots.ts and
// db/repos/route-slots.ts): a submit takes a slot of its route first. When it must wait, it is
// registered as a waiter and answers so (its workflow waits for a grant, workflows/job-generation.ts), or,
// for a run recorded before grants, fails with a retryable RouteSlotBusy. A check renews the slot
// while the request runs and gives it back once the request ended at the provider; a slot given back
// while jobs wait is granted at once to the next in fair order, whose workflow is signaled.
import { ApplicationFailure } from '@temporalio/activity';
import type { Database } from '../../db/index.js';
import type { Job } from '../../db/schema.js';
import * as slotsRepo from '../../db/repos/route-slots.js';
import type { Config } from '../../shared/config.js';
import { failureTypes } from '../../shared/failure-types.js';
import { parseRouteSlots, routePoolFor, SLOT_GRANT_FALLBACK_MS, SLOT_WAITER_FRESH_MS, type RoutePool } from '../../shared/route-slots.js';
import type { RouteSlotWait } from '../../workflows/activity-types.js';

/** Wakes the workflows of jobs granted a route slot (a signal each; best effort: they also ask again on their own). */
type SlotGrantWaker = (jobIds: readonly string[]) => Promise<void>;

/**
 * A waiting submit asks again after this long, plus SLOT_RETRY_STEP_MS per waiter of its workspace
 * before it, at most SLOT_RETRY_MAX_MS: the first waiters take a freed slot within about a second,
 * while a backlog of thousands does not turn into thousands of takes a second on the route's lock.
 */
const SLOT_RETRY_MS = 1_000;
const SLOT_RETRY_STEP_MS = 200;
const SLOT_RETRY_MAX_MS = 10_000;
/**
 * A route slot is held this long without a check of its job renewing it; a slot whose holder
 * vanished comes back after it (or at the reconciler's next pass once its job ended). Far longer
 * than the checks' longest interval (30 s) plus their queue wait.
 */
const SLOT_LEASE_MS = 600_000;
export function createRouteSlots(deps: { db: Database; config: Pick<Config, 'ROUTE_SLOTS'>; wake?: SlotGrantWaker | undefined }) {
  const pools = parseRouteSlots(deps.config.ROUTE_SLOTS);
  const leaseMs = SLOT_LEASE_MS;
  const wake: SlotGrantWaker = deps.wake ?? (async () => {});
  const poolOf = (provider: string, job: Pick<Job, 'model' | 'params'>): RoutePool | null => {
    const providerModelId = (job.params as { provider_model_id?: unknown }).provider_model_id;
    return routePoolFor(pools, provider, job.model, typeof providerModelId === 'string' ? providerModelId : undefined);
  };
  return {
    /**
     * Takes the job's slot at `provider` (a grant it was given, or a free one) before its submit.
     * Answers how many attempts of the submit step only waited for it (0 without a pool), so its
     * provider-outage clock starts at the attempt that took it. When the job must wait: with
     * `grant` (its workflow waits for the signal of a grant), a RouteSlotWait; without, a retryable
     * RouteSlotBusy. Slots this take found free beyond its own go to the waiters first in line,
     * which are woken.
     */
    async take(provider: string, job: Job, attempt: number, opts: { grant?: boolean } = {}): Promise<number | RouteSlotWait> {
      const pool = poolOf(provider, job);
      if (!pool) return 0;
      const who = { jobId: job.id, workspaceId: job.workspace_id, weight: job.fairness_weight, priority: job.priority };
      const result = await slotsRepo.takeSlot(deps.db, pool, who, { leaseMs, waiterFreshMs: SLOT_WAITER_FRESH_MS, attempt, locked: opts.grant === true });
      if (result.grantees?.length) await wake(result.grantees);
      if (result.granted) return result.takenAttempt - 1;
      if (opts.grant) return { slotWait: { route: pool.route, slots: pool.slots, askAgainMs: SLOT_GRANT_FALLBACK_MS } };
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
      if (pools.size === 0) return;
      const { grantees } = await slotsRepo.releaseSlot(deps.db, jobId);
      if (grantees.length > 0) await wake(grantees);
    },
  };
}
