// The reconciler: a worker-side loop that (1) starts the workflows of jobs whose start failed after
// commit (a job is marked started by its workflow's first step, so one waiting in a backlog is
// asked again: Temporal refuses the duplicate start and the job is marked), and (2) settles jobs
// whose workflow closed without doing it (terminated from the Web UI, which skips workflow code, or
// timed out) through the job service, which refunds them, then cancels their provider request. It
// never fails a job whose workflow completed, and the service fails a job only while its row is as
// the reconciler read it (a reset run that claimed it meanwhile is left alone). Every step is
// idempotent, so several replicas may run it.
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from '../shared/config.js';
import type { Database } from '../db/index.js';
import * as jobsRepo from '../db/repos/jobs.js';
import type { Storage } from '../shared/storage.js';
import { createJobService } from '../db/job-service.js';
import { jobToStart, jobWorkflowPort, startJobWorkflow } from '../workflows/client.js';
import type { WorkerMetrics } from './metrics.js';
import { periodic } from './periodic.js';

export interface Reconciler {
  start(): void;
  stop(): Promise<void>;
  /** One pass; returns what it did (for tests and logs). */
  runOnce(): Promise<{ started: number; settled: number }>;
}

export function createReconciler(deps: { config: Config; db: Database; storage: Storage; client: Client; logger: Logger; metrics?: WorkerMetrics }): Reconciler {
  const { config, db, client, logger } = deps;
  const jobs = createJobService({ db, storage: deps.storage, logger, workflows: jobWorkflowPort(client, { taskQueuePrefix: config.TASK_QUEUE_PREFIX, timeoutMs: 10_000 }) });

  async function startUnstarted(): Promise<number> {
    let started = 0;
    for (const job of await jobsRepo.findUnstartedJobs(db, Math.min(config.RECONCILE_INTERVAL_MS, 5_000))) {
      try {
        // 'already_started': the gateway's start went through and the workflow has not run its first
        // step yet (a backlog); marking it keeps the next passes from asking again.
        const outcome = await startJobWorkflow(client, jobToStart(job, config.TASK_QUEUE_PREFIX));
        await jobsRepo.markWorkflowStarted(db, job.id);
        if (outcome === 'already_started') continue;
        deps.metrics?.reconciled('started');
        started++;
      } catch (err) {
        logger.warn({ jobId: job.id, err: (err as Error).message }, 'reconciler could not start workflow');
      }
    }
    return started;
  }

  async function settleClosed(): Promise<number> {
    let settled = 0;
    for (const job of await jobsRepo.findStaleInFlightJobs(db, config.RECONCILE_STALE_AFTER_MS)) {
      try {
        const desc = await client.workflow.getHandle(job.id).describe();
        const status = desc.status.name;
        if (status === 'RUNNING') {
          await jobsRepo.touchJob(db, job.id);
          continue;
        }
        if (status === 'COMPLETED') {
          // The job completed after the list was read: a completed workflow has completed its job,
          // so it is never failed here. Re-read the row to tell the rare case where it has not.
          const fresh = await jobsRepo.getJob(db, job.id);
          if (fresh && fresh.status !== 'completed') {
            await jobsRepo.touchJob(db, job.id);
            logger.warn({ jobId: job.id, jobStatus: fresh.status }, 'workflow completed but its job is not; left for an operator');
          }
          continue;
        }
        // Closed while the row still says in flight: the workflow never ran its own settlement.
        const result = await jobs.reconcileClosed(job, status);
        if (!result.moved) continue;
        deps.metrics?.reconciled('settled');
        settled++;
        logger.info({ jobId: job.id, workflowStatus: status }, 'reconciler settled a closed job');
      } catch (err) {
        if ((err as Error).name === 'WorkflowNotFoundError') {
          await jobsRepo.touchJob(db, job.id);
          logger.warn({ jobId: job.id }, 'job marked started but its workflow is not found');
          continue;
        }
        logger.warn({ jobId: job.id, err: (err as Error).message }, 'reconciler could not check job');
      }
    }
    return settled;
  }

  async function runOnce() {
    const started = await startUnstarted();
    const settled = await settleClosed();
    deps.metrics?.reconcilerPassed();
    return { started, settled };
  }

  const loop = periodic(config.RECONCILE_INTERVAL_MS, runOnce, (err) => logger.warn({ err: err.message }, 'reconciliation pass failed'));

  return {
    start: loop.start,
    stop: loop.stop,
    runOnce,
  };
}
