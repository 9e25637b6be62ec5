// The reconciler: a worker-side loop whose Temporal cost does not depend on the number of healthy
// jobs in flight. Each pass
//   (1) starts the workflows of jobs whose start failed after commit: pending jobs not marked
//       started (by their workflow's first step) after a few seconds are claimed in batches, one
//       visibility call per 100 tells which workflows exist already (a backlog: marked, not started
//       again), and the others are started through the job service (jobs.start) in parallel, at
//       most RECONCILE_CONCURRENCY at once — but for those whose deadline (`deadline_at`) passed
//       already: failed as never submitted, refunded in full, and never started;
//   (2) settles jobs whose workflow closed without doing it (terminated from the Web UI, which skips
//       workflow code, or timed out): ONE visibility query lists the runs closed since the last pass
//       whose JobStatus search attribute still says pending or generating; a row in flight that
//       names any of its job's closed runs (an operator's reset leaves several) is claimed;
//   (3) repairs rows whose last write is older than RECONCILE_STALE_AFTER_MS, whatever the search
//       attributes say: a final write lost with a database crash leaves a row in flight that no
//       run will ever write again. Few rows, read by an index, each checked at most once a period;
//   (4) gives back the route slots (ROUTE_SLOTS) of jobs that ended or whose lease expired;
//   (5) folds the usage deltas into the daily rollups (db/repos/usage.ts foldUsageDeltas).
// Before acting on a job from (2) or (3), ONE describe of its workflow (strongly consistent, unlike
// visibility) says what its latest run is: running (a healthy job, or a reset run that has not
// claimed it yet) → left alone; completed → the job is completed from the outputs stored under its
// prefix, charged once; closed otherwise → the job service fails and refunds it, then cancels the
// provider request from the reference stored on the row.
// The periodic passes run in one process per deployment, the holder of the control fleet's
// `reconciler` lease (worker/control-fleet.ts); a process that runs a pass by hand (runOnce), or a
// holder whose lease was just taken over, may still overlap another: rows are claimed with FOR
// UPDATE SKIP LOCKED and a lease (RECONCILE_CLAIM_MS), so two passes never act on the same job.
// A healthy job in flight costs no Temporal call until it has gone unwritten for the stale period,
// then one describe per period.
// It never fails a job whose workflow completed, nor a job a newer run holds (an operator's reset):
// the service acts on a job only while its row is as the reconciler read it.
// What it finds an operator did is written to the workspace's audit log as `system:reconciler`: a
// terminated latest run it settles (`job.terminated_detected`, in the settling transaction), and a
// listed closed run that a newer run replaced (`job.reset_detected`: the describe names another
// run). Each event's id is derived from the job and the run, so two replicas, or a pass repeated,
// record it once. A row already held by the newer run is not claimed; one describe confirms the
// reset, and only while some closed run of the job has no event yet.
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from '../shared/config.js';
import type { Database } from '../db/index.js';
import type { Job } from '../db/schema.js';
import * as leases from '../db/repos/job-leases.js';
import { auditEventId, recordAuditEventOnce } from '../db/repos/audit.js';
import { RECONCILER_ACTOR } from '../shared/audit.js';
import { grantExpired, sweepSlots } from '../db/repos/route-slots.js';
import { foldUsageDeltas } from '../db/repos/usage.js';
import { SLOT_WAITER_FRESH_MS } from '../shared/route-slots.js';
import { inFlightStatuses, type JobService } from '../jobs/index.js';
import { describeJobRun } from '../workflows/client.js';
import { listClosedInFlightRuns, listJobRuns, type ClosedRun } from '../workflows/visibility.js';
import type { WorkerMetrics } from './metrics.js';
import { periodic } from './periodic.js';
import type { Lease } from './control-lease.js';
import { restartStalledPipelines, startUnstartedPipelines } from './pipeline-reconciler.js';
import { startUnstartedBatches } from './batch-reconciler.js';
import { startUnstartedBulkActions } from './bulk-action-reconciler.js';
import { createPipelineOperatorEnds } from './pipeline-operator-ends.js';

export interface ReconcilePass {
  /** Jobs whose workflow this pass started. */
  started: string[];
  /** Jobs this pass settled (failed and refunded after their run closed). */
  settled: string[];
  /** Jobs this pass completed from their stored outputs (their workflow completed, the row's write was lost). */
  completed: string[];
  /** Temporal calls made (visibility pages, starts, provider cancels). */
  temporalCalls: number;
}

export interface Reconciler {
  /** Starts the periodic passes; with `lease` (the control fleet's), a pass runs only while it is valid and its pipeline restarts are fenced by it. */
  start(lease?: Lease): void;
  stop(): Promise<void>;
  /** One pass; returns what it did (for tests, logs and the scale benchmark). */
  runOnce(): Promise<ReconcilePass>;
}

/** A job the gateway started is marked by its workflow's first step within this long, normally. */
const UNSTARTED_AFTER_MS = 5_000;
/** Unstarted jobs claimed per batch. */
const START_BATCH = 200;
/** Stale rows checked per pass: a database crash loses the last commits of a few jobs, not thousands. */
const STALE_BATCH = 100;
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

/**
 * The reconciler over the process's job service (`jobs`, with a Temporal port: it starts and
 * settles jobs through it) and a Temporal client of its own for visibility and describes.
 */
export function createReconciler(deps: {
  config: Config;
  db: Database;
  jobs: JobService;
  client: Client;
  logger: Logger;
  metrics?: WorkerMetrics;
}): Reconciler {
  const { config, db, jobs, client, logger } = deps;
  const prefix = config.TASK_QUEUE_PREFIX;
  const leaseMs = leases.RECONCILE_CLAIM_MS;
  /** Runs closed before this were handled by earlier passes of this replica (null: none yet). */
  let closedAfter: Date | null = null;

  async function startUnstarted(pass: ReconcilePass): Promise<void> {
    for (;;) {
      const batch = await leases.claimUnstartedJobs(db, Math.min(config.RECONCILE_INTERVAL_MS, UNSTARTED_AFTER_MS), START_BATCH, leaseMs);
      if (batch.length === 0) return;
      // A job waiting in a backlog has its workflow already: marked, not started again.
      const existing = await listJobRuns(
        client,
        batch.map((j) => j.id),
      );
      pass.temporalCalls += existing.calls;
      const marked = [...existing.ids];
      await eachBounded(
        batch.filter((j) => !existing.ids.has(j.id)),
        config.RECONCILE_CONCURRENCY,
        async (job) => {
          // Its deadline passed before any workflow ran: never submitted, so never started, refunded in full.
          if (job.deadline_at && job.deadline_at.getTime() <= Date.now()) {
            const expired = await jobs.expireUnstarted(job);
            if (expired.moved) {
              deps.metrics?.reconciled('settled');
              pass.settled.push(job.id);
            }
            return;
          }
          pass.temporalCalls++;
          // A failed start is logged by the service and left claimed: its lease runs out and a
          // later pass (of any replica) tries again.
          const outcome = await jobs.start(job);
          if (outcome === 'failed') return;
          marked.push(job.id);
          if (outcome === 'already_started') return;
          deps.metrics?.reconciled('started');
          pass.started.push(job.id);
        },
      );
      await leases.markWorkflowsStarted(db, marked);
      if (batch.length < START_BATCH) return;
    }
  }

  /** Records each of `closedRuns` that is not the latest run (`latestRunId`) as replaced by an operator's reset. */
  async function recordResets(job: Pick<Job, 'id' | 'workspace_id' | 'kind'>, closedRuns: ClosedRun[], latestRunId: string): Promise<void> {
    for (const replaced of closedRuns) {
      if (replaced.runId === latestRunId) continue;
      const recorded = await recordAuditEventOnce(db, auditEventId('job.reset_detected', job.id, replaced.runId), {
        workspaceId: job.workspace_id,
        action: 'job.reset_detected',
        actor: RECONCILER_ACTOR,
        targetType: 'job',
        targetId: job.id,
        details: { kind: job.kind, replaced_run_id: replaced.runId, replaced_run_closed_as: replaced.status, latest_run_id: latestRunId },
      });
      if (recorded) logger.info({ jobId: job.id, replacedRunId: replaced.runId, latestRunId }, "reconciler detected an operator's reset");
    }
  }

  /**
   * Acts on a claimed job in flight by what its workflow's latest run is now (one describe):
   * `left` while a run still holds it (or none can be found), else `settled` or `completed`.
   * `closedRuns`: the job's closed runs the listing found (replaced ones are recorded as resets).
   */
  async function settleByWorkflow(job: Job, pass: ReconcilePass, closedRuns: ClosedRun[] = []): Promise<'left' | 'settled' | 'completed'> {
    try {
      pass.temporalCalls++;
      const run = await describeJobRun(client, job.id, 10_000);
      // A missing workflow is left alone: a wrong namespace must not refund every job it cannot see.
      if (!run) {
        logger.warn({ jobId: job.id }, 'reconciler found no workflow for a job in flight');
        return 'left';
      }
      await recordResets(job, closedRuns, run.runId);
      if (run.status === 'RUNNING' || run.status === 'CONTINUED_AS_NEW') return 'left';
      if (run.status === 'COMPLETED') {
        const r = await jobs.reconcileCompleted(job, run.runId);
        if (r.completed) {
          deps.metrics?.reconciled('completed');
          pass.completed.push(job.id);
          logger.info({ jobId: job.id, runId: run.runId }, 'reconciler completed a job whose completion was lost');
          return 'completed';
        }
        if (!r.result?.moved) return 'left';
      } else {
        const result = await jobs.reconcileClosed(job, run.status, run.runId);
        // The provider cancel it started is a Temporal call too: counted for the pass's figure.
        if (result.providerCancel) pass.temporalCalls++;
        if (!result.moved) return 'left';
      }
      deps.metrics?.reconciled('settled');
      pass.settled.push(job.id);
      logger.info({ jobId: job.id, workflowStatus: run.status }, 'reconciler settled a closed job');
      return 'settled';
    } catch (err) {
      logger.warn({ jobId: job.id, err: (err as Error).message }, 'reconciler could not settle job');
      return 'left';
    }
  }

  /** Settles each job, at most RECONCILE_CONCURRENCY at once; the leases of jobs left end now. */
  async function settleAll(claimed: Job[], pass: ReconcilePass, closed?: Map<string, ClosedRun[]>): Promise<void> {
    const left: string[] = [];
    await eachBounded(claimed, config.RECONCILE_CONCURRENCY, async (job) => {
      if ((await settleByWorkflow(job, pass, closed?.get(job.id))) === 'left') left.push(job.id);
    });
    await leases.releaseLeases(db, left);
  }

  /**
   * Jobs whose row a newer run holds (it names a run that is not among the closed ones listed):
   * their closed runs were replaced by an operator's reset. One describe per job confirms it, and
   * only while some of those runs has no reset event yet, so a run re-listed costs no call.
   */
  async function detectHeldResets(rows: Pick<Job, 'id' | 'status_run_id'>[], closed: Map<string, ClosedRun[]>, pass: ReconcilePass): Promise<void> {
    const held = rows.filter((r) => r.status_run_id && !closed.get(r.id)!.some((c) => c.runId === r.status_run_id));
    if (held.length === 0) return;
    const ids = held.flatMap((r) => closed.get(r.id)!.map((c) => auditEventId('job.reset_detected', r.id, c.runId)));
    const recorded = new Set((await db.selectFrom('audit_events').select('id').where('id', 'in', ids).execute()).map((e) => e.id));
    const pending = held.filter((r) => closed.get(r.id)!.some((c) => !recorded.has(auditEventId('job.reset_detected', r.id, c.runId))));
    if (pending.length === 0) return;
    const jobsById = new Map(
      (
        await db
          .selectFrom('jobs')
          .select(['id', 'workspace_id', 'kind'])
          .where(
            'id',
            'in',
            pending.map((r) => r.id),
          )
          .execute()
      ).map((j) => [j.id, j]),
    );
    await eachBounded(pending, config.RECONCILE_CONCURRENCY, async (row) => {
      try {
        pass.temporalCalls++;
        const run = await describeJobRun(client, row.id, 10_000);
        const job = jobsById.get(row.id);
        if (run && job) await recordResets(job, closed.get(row.id)!, run.runId);
      } catch (err) {
        logger.warn({ jobId: row.id, err: (err as Error).message }, 'reconciler could not check a reset job');
      }
    });
  }

  async function settleClosed(pass: ReconcilePass): Promise<void> {
    const passStart = Date.now();
    if (!closedAfter) {
      // No run of a job still in flight can have closed before that job was created.
      const oldest = await leases.oldestInFlightCreatedAt(db, inFlightStatuses);
      closedAfter = new Date(Math.min(oldest?.getTime() ?? passStart, passStart - VISIBILITY_LAG_MS));
    }
    const listed = await listClosedInFlightRuns(client, { taskQueuePrefix: prefix, closedAfter });
    pass.temporalCalls += listed.calls;
    // Every closed run of each job: an operator's reset leaves the replaced run closed beside the new one.
    const closed = new Map<string, ClosedRun[]>();
    for (const run of listed.runs) closed.set(run.jobId, [...(closed.get(run.jobId) ?? []), run]);
    const ids = [...closed.keys()];
    // The closed run a row in flight still names (a pending row: its earliest): it needs settling.
    const matched = (row: Pick<Job, 'id' | 'status' | 'status_run_id'>): ClosedRun | undefined => {
      const runs = closed.get(row.id)!;
      return (
        runs.find((r) => r.runId === row.status_run_id) ?? (row.status === 'pending' ? runs.reduce((a, b) => (a.closedAt <= b.closedAt ? a : b)) : undefined)
      );
    };
    const claimed = (await leases.claimInFlightJobs(db, inFlightStatuses, ids, leaseMs)).filter((row) => matched(row));
    await settleAll(claimed, pass, closed);
    const inFlight = await leases.inFlightJobs(db, inFlightStatuses, ids);
    await detectHeldResets(inFlight, closed, pass);
    // Look back next time as far as the oldest run still unsettled (another replica's claim, a
    // failure here, a reset run not done yet), else as far as visibility may lag.
    const unsettled = inFlight.map(matched).filter((r) => r !== undefined);
    const oldestUnsettled = Math.min(...unsettled.map((r) => r.closedAt.getTime() - 1));
    closedAfter = new Date(Math.max(closedAfter.getTime(), Math.min(oldestUnsettled, passStart - VISIBILITY_LAG_MS)));
  }

  /** Rows in flight unwritten for the stale period, checked against their workflow whatever visibility says. */
  async function repairStale(pass: ReconcilePass): Promise<void> {
    const stale = await leases.claimStaleInFlightJobs(db, inFlightStatuses, config.RECONCILE_STALE_AFTER_MS, STALE_BATCH, leaseMs);
    if (stale.length > 0) await settleAll(stale, pass);
  }

  let lease: Lease | null = null;
  const operatorEnds = createPipelineOperatorEnds(deps);

  async function runOnce(): Promise<ReconcilePass> {
    const pass: ReconcilePass = { started: [], settled: [], completed: [], temporalCalls: 0 };
    await startUnstarted(pass);
    pass.temporalCalls += await startUnstartedPipelines(deps, Math.min(config.RECONCILE_INTERVAL_MS, UNSTARTED_AFTER_MS));
    pass.temporalCalls += await startUnstartedBatches(deps, Math.min(config.RECONCILE_INTERVAL_MS, UNSTARTED_AFTER_MS));
    pass.temporalCalls += await startUnstartedBulkActions(deps, Math.min(config.RECONCILE_INTERVAL_MS, UNSTARTED_AFTER_MS));
    // Before the restarts: a pipeline an operator ended is canceled, never restarted.
    pass.temporalCalls += await operatorEnds.pass();
    pass.temporalCalls += await restartStalledPipelines(deps, config.PIPELINE_STALL_MS, lease);
    await settleClosed(pass);
    await repairStale(pass);
    // Route slots whose job ended or whose holder vanished go back (ROUTE_SLOTS), granted to the
    // jobs waiting there (a grant its job never took among them).
    await sweepSlots(db, SLOT_WAITER_FRESH_MS);
    await deps.jobs.wakeSlotGrantees(await grantExpired(db));
    // The usage written since the last pass joins the daily rollups (one statement; usage reads
    // are exact either way, this keeps the deltas they also read few).
    await foldUsageDeltas(db);
    deps.metrics?.reconcilerPassed();
    return pass;
  }

  const loop = periodic(
    config.RECONCILE_INTERVAL_MS,
    async () => {
      if (lease && !lease.valid()) return;
      await runOnce();
    },
    (err) => logger.warn({ err: err.message }, 'reconciliation pass failed'),
  );

  return {
    start(l) {
      lease = l ?? null;
      loop.start();
    },
    async stop() {
      await loop.stop();
      lease = null;
    },
    runOnce,
  };
}
