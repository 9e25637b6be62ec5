// The reconciler: a worker-side loop whose Temporal cost does not depend on the number of healthy
// jobs in flight. Each pass
//   (1) starts the workflows of jobs whose start failed after commit: pending jobs not marked
//       started (by their workflow's first step) after a few seconds are claimed in batches, one
//       visibility call per 100 tells which workflows exist already (a backlog: marked, not started
//       again), and the others are started in parallel, at most RECONCILE_CONCURRENCY at once;
//   (2) settles jobs whose workflow closed without doing it (terminated from the Web UI, which skips
//       workflow code, or timed out): ONE visibility query lists the runs closed since the last pass
//       whose JobStatus search attribute still says pending or generating; their rows are claimed
//       and settled through the job service, which refunds them and then cancels the provider
//       request from the reference stored on the row.
// Rows are claimed with FOR UPDATE SKIP LOCKED and a lease (RECONCILE_LEASE_MS), so replicas share
// the work and never act on the same job. A healthy job in flight costs no Temporal call at all.
// It never fails a job whose workflow completed (such a run says `completed`), nor a job a newer
// run holds (an operator's reset): the service fails a job only while its row names the closed run.
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from '../shared/config.js';
import type { Database } from '../db/index.js';
import type { Job } from '../db/schema.js';
import * as jobsRepo from '../db/repos/jobs.js';
import type { Storage } from '../shared/storage.js';
import { createJobService } from '../db/job-service.js';
import { jobToStart, jobWorkflowPort, listClosedInFlightRuns, listJobRuns, startJobWorkflow, type ClosedRun } from '../workflows/client.js';
import type { WorkerMetrics } from './metrics.js';
import { periodic } from './periodic.js';

export interface ReconcilePass {
  /** Jobs whose workflow this pass started. */
  started: string[];
  /** Jobs this pass settled (failed and refunded after their run closed). */
  settled: string[];
  /** Temporal calls made (visibility pages, starts, provider cancels). */
  temporalCalls: number;
}

export interface Reconciler {
  start(): void;
  stop(): Promise<void>;
  /** One pass; returns what it did (for tests, logs and the scale benchmark). */
  runOnce(): Promise<ReconcilePass>;
}

/** A job the gateway started is marked by its workflow's first step within this long, normally. */
const UNSTARTED_AFTER_MS = 5_000;
/** Unstarted jobs claimed per batch. */
const START_BATCH = 200;
/**
 * Runs closing this recently may not be visible yet (visibility is eventually consistent): every
 * pass looks back this far, and re-listed runs already settled cost a primary-key read, no call.
 */
const VISIBILITY_LAG_MS = 30_000;

/** Runs `fn` over `items`, at most `limit` at once. */
async function eachBounded<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}

export function createReconciler(deps: { config: Config; db: Database; storage: Storage; client: Client; logger: Logger; metrics?: WorkerMetrics }): Reconciler {
  const { config, db, client, logger } = deps;
  const prefix = config.TASK_QUEUE_PREFIX;
  const workflows = jobWorkflowPort(client, { taskQueuePrefix: prefix, timeoutMs: 10_000, runTimeoutGraceMs: config.JOB_RUN_TIMEOUT_GRACE_MS });
  let providerCancels = 0;
  // The service's provider cancels are Temporal calls too: counted for the pass's figure.
  const jobs = createJobService({
    db,
    storage: deps.storage,
    logger,
    workflows: {
      ...workflows,
      cancelProviderRequest: (job) => {
        providerCancels++;
        return workflows.cancelProviderRequest(job);
      },
    },
  });
  const leaseMs = config.RECONCILE_LEASE_MS;
  /** Runs closed before this were handled by earlier passes of this replica (null: none yet). */
  let closedAfter: Date | null = null;

  async function startUnstarted(pass: ReconcilePass): Promise<void> {
    for (;;) {
      const batch = await jobsRepo.claimUnstartedJobs(db, Math.min(config.RECONCILE_INTERVAL_MS, UNSTARTED_AFTER_MS), START_BATCH, leaseMs);
      if (batch.length === 0) return;
      // A job waiting in a backlog has its workflow already: marked, not started again.
      const existing = await listJobRuns(client, batch.map((j) => j.id));
      pass.temporalCalls += existing.calls;
      const marked = [...existing.ids];
      await eachBounded(
        batch.filter((j) => !existing.ids.has(j.id)),
        config.RECONCILE_CONCURRENCY,
        async (job) => {
          try {
            pass.temporalCalls++;
            const outcome = await startJobWorkflow(client, jobToStart(job, prefix), { runTimeoutGraceMs: config.JOB_RUN_TIMEOUT_GRACE_MS });
            marked.push(job.id);
            if (outcome === 'already_started') return;
            deps.metrics?.reconciled('started');
            pass.started.push(job.id);
          } catch (err) {
            // Left claimed: its lease runs out and a later pass (of any replica) tries again.
            logger.warn({ jobId: job.id, err: (err as Error).message }, 'reconciler could not start workflow');
          }
        },
      );
      await jobsRepo.markWorkflowsStarted(db, marked);
      if (batch.length < START_BATCH) return;
    }
  }

  async function settleClosed(pass: ReconcilePass): Promise<void> {
    const passStart = Date.now();
    if (!closedAfter) {
      // No run of a job still in flight can have closed before that job was created.
      const oldest = await jobsRepo.oldestInFlightCreatedAt(db);
      closedAfter = new Date(Math.min(oldest?.getTime() ?? passStart, passStart - VISIBILITY_LAG_MS));
    }
    const listed = await listClosedInFlightRuns(client, { taskQueuePrefix: prefix, closedAfter });
    pass.temporalCalls += listed.calls;
    // The latest closed run of each job (an operator's reset leaves older runs closed too).
    const closed = new Map<string, ClosedRun>();
    for (const run of listed.runs) {
      const seen = closed.get(run.jobId);
      if (!seen || run.closedAt > seen.closedAt) closed.set(run.jobId, run);
    }
    const ids = [...closed.keys()];
    // Rows still in flight and named by the closed run (or pending): they need settling.
    const needed = (row: Pick<Job, 'status' | 'status_run_id'>, run: ClosedRun) => row.status === 'pending' || row.status_run_id === run.runId;
    const claimed = (await jobsRepo.claimInFlightJobs(db, ids, leaseMs)).filter((row) => needed(row, closed.get(row.id)!));
    if (claimed.length > 0) {
      // A job whose workflow runs again (an operator's reset) is that run's: one call per 100 jobs.
      const running = await listJobRuns(
        client,
        claimed.map((j) => j.id),
        { runningOnly: true },
      );
      pass.temporalCalls += running.calls;
      const before = providerCancels;
      await eachBounded(
        claimed.filter((j) => !running.ids.has(j.id)),
        config.RECONCILE_CONCURRENCY,
        async (job) => {
          const run = closed.get(job.id)!;
          try {
            const result = await jobs.reconcileClosed(job, run.status);
            if (!result.moved) return;
            deps.metrics?.reconciled('settled');
            pass.settled.push(job.id);
            logger.info({ jobId: job.id, workflowStatus: run.status }, 'reconciler settled a closed job');
          } catch (err) {
            logger.warn({ jobId: job.id, err: (err as Error).message }, 'reconciler could not settle job');
          }
        },
      );
      pass.temporalCalls += providerCancels - before;
    }
    // Look back next time as far as the oldest run still unsettled (another replica's claim, a
    // failure here), else as far as visibility may lag.
    const unsettled = (await jobsRepo.inFlightJobs(db, ids)).filter((row) => needed(row, closed.get(row.id)!));
    const oldestUnsettled = Math.min(...unsettled.map((row) => closed.get(row.id)!.closedAt.getTime() - 1));
    closedAfter = new Date(Math.max(closedAfter.getTime(), Math.min(oldestUnsettled, passStart - VISIBILITY_LAG_MS)));
  }

  async function runOnce(): Promise<ReconcilePass> {
    const pass: ReconcilePass = { started: [], settled: [], temporalCalls: 0 };
    await startUnstarted(pass);
    await settleClosed(pass);
    deps.metrics?.reconcilerPassed();
    return pass;
  }

  const loop = periodic(config.RECONCILE_INTERVAL_MS, runOnce, (err) => logger.warn({ err: err.message }, 'reconciliation pass failed'));

  return {
    start: loop.start,
    stop: loop.stop,
    runOnce,
  };
}
