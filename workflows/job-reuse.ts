// Reuse of identical requests in one job's run (job-generation.ts; docs/api/reuse.md): before its claim,
// the run asks which job holds its request's key. It runs as usual when it takes the key; it waits
// while an identical job is in flight (woken by that job's signal, or deciding again every
// REUSE_RECHECK_MS) for at most the model's deadline; and it completes from that job's copied
// outputs once it completed. A job that holds the key wakes its followers when it ends. A run
// without reuse registers nothing and makes none of these steps. Deterministic code only.
import { condition, proxyActivities, setHandler, type ActivityInterfaceFor } from '@temporalio/workflow';
import type { JobIoActivities } from './activity-types.js';
import type { GenerationInput, GenerationProgress, taskQueues } from './definitions.js';
import { localDbStep, REUSE_RECHECK_MS, reuseCopyActivity, reuseSourceEndedSignal } from './job-steps.js';

export function jobReuse(ctx: {
  input: GenerationInput;
  queues: ReturnType<typeof taskQueues>;
  db: ActivityInterfaceFor<JobIoActivities>;
  progress: GenerationProgress;
}) {
  const { input, queues, db, progress } = ctx;
  // Ends of the identical job a follower waits for (a counter, as the slot grants: one that arrives before the wait counts).
  let wakes = 0;
  if (input.reuse) {
    setHandler(reuseSourceEndedSignal, () => {
      wakes++;
    });
  }
  return {
    /**
     * Follows the identical job that holds the request's key until the job is answered from its
     * outputs (their count) or runs itself (undefined): it took the key (no usable job held it, or
     * the one followed failed), or it waited as long as the model's deadline.
     */
    async followIdenticalJob(): Promise<number | undefined> {
      const io = proxyActivities<JobIoActivities>({ ...reuseCopyActivity, taskQueue: queues.io });
      const waitUntil = Date.now() + input.deadlineSeconds * 1000;
      for (;;) {
        const wakesSeen = wakes;
        const step = await db.reuseStep.executeWithOptions(
          { ...localDbStep, summary: "Reuse: take the request's key, or follow the identical job that holds it" },
          [input.jobId],
        );
        if ('lead' in step) return undefined;
        if ('adopt' in step) {
          progress.phase = 'storing_outputs';
          const answer = await io.adoptReused.executeWithOptions(
            { ...reuseCopyActivity, taskQueue: queues.io, summary: `Copy the outputs of ${step.adopt} and complete at the reuse price` },
            [input.jobId],
          );
          if ('adopted' in answer) return answer.adopted;
          continue;
        }
        const remaining = waitUntil - Date.now();
        if (remaining <= 0) return undefined;
        await condition(() => wakes > wakesSeen, Math.min(REUSE_RECHECK_MS, remaining));
      }
    },

    /** Wakes the jobs waiting for this one, once it ended (a job that never opted in has none). */
    async wakeFollowers(): Promise<void> {
      if (input.reuse)
        await db.wakeReuseFollowers.executeWithOptions({ ...localDbStep, summary: 'Wake the identical jobs waiting for this one' }, [input.jobId]);
    },
  };
}
