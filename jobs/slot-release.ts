// A route slot given back by the job service (a failed, canceled or failed-over job): the slot is
// granted at once to the next waiting job in fair order (db/repos/route-slots.ts), whose workflow
// is woken. A wake that fails costs only time: the grant is durable, and the job asks again on its own.
import { releaseSlot } from '../db/repos/route-slots.js';
import type { JobServiceDeps } from './service-types.js';

export function createSlotRelease(deps: Pick<JobServiceDeps, 'db' | 'logger' | 'wakeSlotGrantee' | 'wakeReuseFollower'>) {
  async function wakeSlotGrantees(jobIds: readonly string[]): Promise<void> {
    const wake = deps.wakeSlotGrantee;
    if (!wake) return;
    await Promise.all(
      jobIds.map(async (jobId) => {
        try {
          await wake(jobId);
        } catch (err) {
          deps.logger?.warn({ jobId, err: (err as Error).message }, 'a job granted a route slot was not woken; it asks again on its own');
        }
      }),
    );
  }
  /** Wakes the jobs that wait for an identical job that just ended (jobs/reuse.ts); a lost wake costs a recheck's wait. */
  async function wakeReuseFollowers(jobIds: readonly string[]): Promise<void> {
    const wake = deps.wakeReuseFollower;
    if (!wake) return;
    await Promise.all(
      jobIds.map((jobId) =>
        wake(jobId).catch((err: unknown) =>
          deps.logger?.warn({ jobId, err: (err as Error).message }, 'a reuse follower was not woken; it decides again on its own'),
        ),
      ),
    );
  }
  return {
    wakeSlotGrantees,
    wakeReuseFollowers,
    /** Gives the job's route slot back (granting it to the next waiter, woken). Answers whether it held one. Idempotent. */
    async releaseRouteSlot(jobId: string): Promise<boolean> {
      const { released, grantees } = await releaseSlot(deps.db, jobId);
      await wakeSlotGrantees(grantees);
      return released;
    },
  };
}
