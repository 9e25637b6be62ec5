// The reconciler's pass over pipelines whose parent workflow an operator ended: a Terminate (from
// the Web UI or the CLI, with any reason the stalled-pipeline restarter never writes) or a Cancel
// (the Web UI's Request Cancellation) of the pipeline's latest run. Such a pipeline is ended as its
// customer's cancel ends it (jobs/pipeline-cancel.ts, the cancel endpoint's own path): the running
// step's job is canceled through the job service (its refund rules, its provider cancel), no later
// step starts (skipped, never charged), and the pipeline ends `failed` with error code `canceled`,
// never to be resumed nor restarted. No run checkpoints it any more, so this pass does, once the
// job's cancel has settled (activities/pipeline-checkpoint.ts, with no run).
// Candidates come from visibility (pipeline parents closed as terminated or canceled since the pass's
// watermark), so the cost follows the runs found, never the pipelines in flight. A run that is not
// its pipeline's latest (an operator's reset or our restart replaced it) is not an end; neither is
// the restarter's own terminate (its reason, below), which is the restarter's to follow with a new
// run (worker/pipeline-reconciler.ts).
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from '../shared/config.js';
import type { Database } from '../db/index.js';
import { activePipelineIds, oldestActivePipelineCreatedAt, stepsOf } from '../db/repos/pipelines.js';
import { requestPipelineCancel, type JobService } from '../jobs/index.js';
import { listEndedPipelineRuns, terminateReasonOf, type ClosedRun } from '../workflows/visibility.js';
import { createStepCheckpoint } from '../activities/pipeline-checkpoint.js';

/** The restarter's terminate reason (worker/pipeline-reconciler.ts); any other is an operator's. */
export const restartTerminateReason = (stalledMs: number) =>
  `pipeline stalled for ${Math.round(stalledMs / 1000)} s: no worker serves this run; the reconciler starts a new one`;
/** Whether a terminate's reason is the restarter's own (restartTerminateReason, whatever the figure). */
export const isRestartReason = (reason: string) => /^pipeline stalled for \d+ s: no worker serves this run; the reconciler starts a new one$/.test(reason);

/** Runs closing this recently may not be visible yet: every pass looks back this far. */
const VISIBILITY_LAG_MS = 30_000;

/** How run `run` of pipeline `id` (closed) ended: by an operator (`terminated` with a reason not the restarter's, `canceled`), else null. */
export async function operatorEndOf(client: Client, id: string, run: { runId: string; status: string }): Promise<'terminated' | 'canceled' | null> {
  if (run.status === 'CANCELLED') return 'canceled';
  if (run.status !== 'TERMINATED') return null;
  const reason = await terminateReasonOf(client, id, run.runId);
  return reason !== null && isRestartReason(reason) ? null : 'terminated';
}

type Deps = { config: Config; db: Database; client: Client; logger: Logger; jobs: JobService };

/** The pass, with its watermark (runs closed before it were handled by earlier passes of this replica). */
export function createPipelineOperatorEnds(deps: Deps): { pass(): Promise<number> } {
  const { config, db, client, logger, jobs } = deps;
  const checkpoint = createStepCheckpoint({ db, config });
  let closedAfter: Date | null = null;

  /** Ends pipeline `id` as canceled when an operator ended `run`, its latest run; answers whether anything is left for a later pass, and the calls made. */
  async function endIfOperators(id: string, run: ClosedRun): Promise<{ unsettled: boolean; calls: number }> {
    const latest = await client.workflow.getHandle(id).describe();
    if (latest.runId !== run.runId) return { unsettled: false, calls: 1 };
    const how = await operatorEndOf(client, id, run);
    if (!how) return { unsettled: false, calls: 2 };
    let calls = run.status === 'TERMINATED' ? 2 : 1;
    const r = await db.transaction().execute((tx) => requestPipelineCancel(tx, id));
    if ('ended' in r) return { unsettled: false, calls };
    if (r.job) {
      await jobs.cancel(r.job);
      calls++;
    }
    // The step whose job the parent would have checkpointed: its outputs or its failure, and the pipeline's end.
    let unsettled = false;
    for (const step of await stepsOf(db, id)) {
      if (step.job_id === null || ['completed', 'failed', 'skipped'].includes(step.status)) continue;
      if ((await checkpoint(id, step.position, null)) === 'running') unsettled = true;
    }
    if (!unsettled) logger.warn({ pipelineId: id, runId: run.runId, ended: how }, "pipeline's parent workflow ended by an operator: the pipeline is canceled");
    return { unsettled, calls };
  }

  return {
    async pass() {
      const passStart = Date.now();
      // No run of a pipeline still live can have closed before that pipeline was created; with no
      // pipeline live there is nothing to end, and the pass costs Temporal nothing.
      const oldest = await oldestActivePipelineCreatedAt(db);
      if (!oldest) {
        closedAfter = new Date(passStart - VISIBILITY_LAG_MS);
        return 0;
      }
      closedAfter ??= new Date(Math.min(oldest.getTime(), passStart - VISIBILITY_LAG_MS));
      const listed = await listEndedPipelineRuns(client, { taskQueuePrefix: config.TASK_QUEUE_PREFIX, closedAfter });
      let calls = listed.calls;
      const latest = new Map<string, ClosedRun>();
      for (const run of listed.runs) if (!latest.has(run.jobId) || latest.get(run.jobId)!.closedAt < run.closedAt) latest.set(run.jobId, run);
      let oldestUnsettled = Infinity;
      for (const id of await activePipelineIds(db, [...latest.keys()])) {
        const run = latest.get(id)!;
        try {
          const r = await endIfOperators(id, run);
          calls += r.calls;
          if (r.unsettled) oldestUnsettled = Math.min(oldestUnsettled, run.closedAt.getTime() - 1);
        } catch (err) {
          oldestUnsettled = Math.min(oldestUnsettled, run.closedAt.getTime() - 1);
          logger.warn({ pipelineId: id, err: (err as Error).message }, 'ending a pipeline whose parent an operator ended failed; the next pass tries again');
        }
      }
      // Look back next time as far as the oldest run still unsettled (its step's job still settling), else as far as visibility may lag.
      closedAfter = new Date(Math.max(closedAfter.getTime(), Math.min(oldestUnsettled, passStart - VISIBILITY_LAG_MS)));
      return calls;
    },
  };
}
