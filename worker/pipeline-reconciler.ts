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
//   created or charged again), so the new run goes on from the current step.
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from '../shared/config.js';
import type { Database } from '../db/index.js';
import type { Pipeline, PipelineStep } from '../db/pipeline-schema.js';
import { getJob } from '../db/repos/jobs.js';
import { quietActivePipelines, stepsOf, unstartedPipelines } from '../db/repos/pipelines.js';
import { isTerminal } from '../jobs/index.js';
import { startPipelineWorkflow } from '../workflows/pipeline-client.js';
import { workspaceShareWeight } from '../db/repos/fair-share.js';

const BATCH = 100;

type Deps = { config: Config; db: Database; client: Client; logger: Logger };

const startOf = async (deps: Deps, p: Pipeline, steps: number) =>
  startPipelineWorkflow(
    deps.client,
    { id: p.id, workspaceId: p.workspace_id, projectId: p.project_id, steps, fairnessWeight: await workspaceShareWeight(deps.db, p.workspace_id) },
    deps.config,
  );

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

/** When the pipeline last could have moved on: the later of its own last write and its current step's (or that step's job's end). */
async function stalledSince(deps: Deps, p: Pipeline, steps: PipelineStep[]): Promise<number | null> {
  const at = steps.findIndex((s) => s.status !== 'completed');
  if (at < 0) return p.updated_at.getTime();
  const step = steps[at]!;
  const times = [p.updated_at.getTime(), step.updated_at.getTime(), ...(at > 0 ? [steps[at - 1]!.updated_at.getTime()] : [])];
  if (step.job_id === null) return Math.max(...times);
  const job = await getJob(deps.db, step.job_id);
  // A job in flight is the job's own reconciler's (its run timeout, its settlement): the parent waits.
  if (!job || !isTerminal(job.status)) return null;
  return Math.max(...times, job.updated_at.getTime());
}

/** Restarts the parent workflows of pipelines stalled `stallMs` or more (see above); returns the Temporal calls made. */
export async function restartStalledPipelines(deps: Deps, stallMs: number): Promise<number> {
  const cutoff = Date.now() - stallMs;
  const rows = await quietActivePipelines(deps.db, new Date(cutoff), BATCH);
  let calls = 0;
  for (const p of rows) {
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
      if (run?.status.name === 'RUNNING') {
        calls++;
        // That run only: another replica may have started the next one already.
        await deps.client.workflow
          .getHandle(p.id, run.runId)
          .terminate(`pipeline stalled for ${Math.round((Date.now() - since) / 1000)} s: no worker serves this run; the reconciler starts a new one`);
      }
      calls++;
      await startOf(deps, p, steps.length);
      deps.logger.warn({ pipelineId: p.id, runId: run?.runId, runStatus: run?.status.name ?? 'not found' }, 'pipeline stalled: its parent workflow restarted');
    } catch (err) {
      deps.logger.warn({ pipelineId: p.id, err: (err as Error).message }, 'restart of a stalled pipeline failed; the next pass tries again');
    }
  }
  return calls;
}
