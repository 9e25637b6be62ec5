// The reconciler's passes over pipelines.
// - Unstarted: one whose parent workflow never ran its first step (the gateway's start after commit
//   failed, Temporal was down) is started again, like an unstarted job. A start finding the workflow
//   running is harmless; the workflow marks the pipeline started itself.
// - Stalled: one whose parent has not moved on for PIPELINE_STALL_MS although it could have (its
//   current step's job ended, or the step has no job yet) has no run serving it: the run was
//   terminated or timed out, or it is pinned to a build whose workers are gone. A live parent looks
//   at its step's job within seconds of the job's end (workflows/pipeline-run.ts), so the quiet is
//   proof. The run, if still open, is terminated and a new run started: new runs go to the current
//   build, and every step of a run is idempotent (a step whose job exists is waited for, never
//   created or charged again), so the new run goes on from the current step. The restart is
//   recorded on the row under its lock (restartStalledPipelines), so it happens once per stall.
//   A run an operator terminated (any reason but the restarter's own) or canceled is not restarted:
//   its pipeline is ended canceled (worker/pipeline-operator-ends.ts).
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from '../shared/config.js';
import type { Database } from '../db/index.js';
import type { Pipeline, PipelineStep } from '../db/pipeline-schema.js';
import { getJob } from '../db/repos/jobs.js';
import { quietActivePipelines, stepsOf, unstartedPipelines } from '../db/repos/pipelines.js';
import { isTerminal } from '../jobs/index.js';
import { startPipelineRun, startPipelineWorkflow } from '../workflows/pipeline-client.js';
import { assertLeaseHeld, type Lease } from './control-lease.js';
import { operatorEndOf, restartTerminateReason } from './pipeline-operator-ends.js';
import { sql } from 'kysely';
import { workspaceShareWeight } from '../db/repos/fair-share.js';

const BATCH = 100;

type Deps = { config: Config; db: Database; client: Client; logger: Logger };

const toStart = async (deps: Deps, p: Pipeline, steps: number) => ({
  id: p.id,
  workspaceId: p.workspace_id,
  projectId: p.project_id,
  steps,
  fairnessWeight: await workspaceShareWeight(deps.db, p.workspace_id),
});

const startOf = async (deps: Deps, p: Pipeline, steps: number) => startPipelineWorkflow(deps.client, await toStart(deps, p, steps), deps.config);

/** Starts the parent workflows of pipelines created `afterMs` ago or more whose workflow never ran; returns the Temporal calls made. */
export async function startUnstartedPipelines(deps: Deps, afterMs: number): Promise<number> {
  const rows = await unstartedPipelines(deps.db, new Date(Date.now() - afterMs), BATCH);
  let calls = 0;
  for (const p of rows) {
    calls++;
    const steps = (await stepsOf(deps.db, p.id)).length;
    await startOf(deps, p, steps).catch((err: unknown) =>
      deps.logger.warn({ pipelineId: p.id, err: (err as Error).message }, 'pipeline workflow start failed; the next pass tries again'),
    );
  }
  return calls;
}

/** When the pipeline last could have moved on: the later of its own last write, its last restart and its current step's (or that step's job's end). */
async function stalledSince(deps: Deps, p: Pipeline, steps: PipelineStep[]): Promise<number | null> {
  const own = Math.max(p.updated_at.getTime(), p.restarted_at?.getTime() ?? 0);
  const at = steps.findIndex((s) => s.status !== 'completed');
  if (at < 0) return own;
  const step = steps[at]!;
  const times = [own, step.updated_at.getTime(), ...(at > 0 ? [steps[at - 1]!.updated_at.getTime()] : [])];
  if (step.job_id === null) return Math.max(...times);
  const job = await getJob(deps.db, step.job_id);
  // A job in flight is the job's own reconciler's (its run timeout, its settlement): the parent waits.
  if (!job || !isTerminal(job.status)) return null;
  return Math.max(...times, job.updated_at.getTime());
}

/** A run with no workflow task completed yet: its history is the start, the first task scheduled, perhaps started. */
const FIRST_TASK_HISTORY = 3;

/**
 * Restarts the parent workflows of pipelines stalled `stallMs` or more (see above); returns the
 * Temporal calls made. Once per stall: the restart locks the pipeline's row, checks it has not
 * moved nor been restarted since it was read (and, with `lease`, that this process still holds
 * the reconciler's lease), terminates the stalled run, starts the new one and records it on the
 * row (restarted_run_id, restarted_at) before the lock is let go. A run that is new (started
 * within the stall period), or the restart's own run before its first workflow task completed, is
 * left alone.
 */
export async function restartStalledPipelines(deps: Deps, stallMs: number, lease: Lease | null = null): Promise<number> {
  const cutoff = Date.now() - stallMs;
  const rows = await quietActivePipelines(deps.db, new Date(cutoff), BATCH);
  let calls = 0;
  for (const p of rows) {
    if (lease && !lease.valid()) break;
    const steps = await stepsOf(deps.db, p.id);
    const since = await stalledSince(deps, p, steps);
    if (since === null || since >= cutoff) continue;
    try {
      calls++;
      const run = await deps.client.workflow
        .getHandle(p.id)
        .describe()
        .catch((err: unknown) => {
          if (err instanceof WorkflowNotFoundError) return null;
          throw err;
        });
      const running = run?.status.name === 'RUNNING';
      // The run is new, or it is the restart's own run and has not run its first task yet (new runs go
      // to the current build: it starts there once a worker polls, and a new run would wait the same).
      if (running && (run.startTime.getTime() >= cutoff || (run.runId === p.restarted_run_id && run.historyLength <= FIRST_TASK_HISTORY))) continue;
      // A run an operator terminated or canceled is never restarted: the operator-ends pass ends its pipeline canceled.
      if (run && !running) {
        calls++;
        if (await operatorEndOf(deps.client, p.id, { runId: run.runId, status: run.status.name })) continue;
      }
      const outcome = await deps.db.transaction().execute(async (trx) => {
        if (lease) await assertLeaseHeld(trx, lease);
        const row = await trx
          .selectFrom('pipelines')
          .select(['status', 'updated_at', 'restarted_run_id', 'restarted_at'])
          .where('id', '=', p.id)
          .forUpdate()
          .executeTakeFirst();
        if (!row || (row.status !== 'pending' && row.status !== 'running')) return null;
        if (row.updated_at.getTime() !== p.updated_at.getTime() || (row.restarted_at?.getTime() ?? 0) !== (p.restarted_at?.getTime() ?? 0)) return null;
        if (running) {
          calls++;
          // That run only: a newer one, if any, is not touched.
          await deps.client.workflow.getHandle(p.id, run.runId).terminate(restartTerminateReason(Date.now() - since));
        }
        calls++;
        const runId = await startPipelineRun(deps.client, await toStart(deps, p, steps.length), deps.config);
        if (runId === null) return null;
        await trx
          .updateTable('pipelines')
          .set({ restarted_run_id: runId, restarted_at: sql<Date>`now()` })
          .where('id', '=', p.id)
          .execute();
        return runId;
      });
      if (outcome)
        deps.logger.warn(
          { pipelineId: p.id, runId: run?.runId, newRunId: outcome, runStatus: run?.status.name ?? 'not found' },
          'pipeline stalled: its parent workflow restarted',
        );
    } catch (err) {
      deps.logger.warn({ pipelineId: p.id, err: (err as Error).message }, 'restart of a stalled pipeline failed; the next pass tries again');
    }
  }
  return calls;
}
