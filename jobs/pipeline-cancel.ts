// A pipeline's cancel, in the caller's transaction: the customer's (POST /v1/pipelines/{id}/cancel)
// and the reconciler's when an operator terminated or canceled the pipeline's parent workflow
// (worker/pipeline-operator-ends.ts). It takes the pipeline row's lock, as every pipeline move does.
import type { Queryable } from '../db/index.js';
import type { Job } from '../db/schema.js';
import type { Pipeline, PipelineError } from '../db/pipeline-schema.js';
import type { PipelineStatus } from '../shared/pipelines.js';
import * as repo from '../db/repos/pipelines.js';
import { enqueuePipelineEvent } from '../db/repos/pipeline-events.js';
import { getJob } from '../db/repos/jobs.js';
import { isTerminal } from './transitions.js';

/** The error of a canceled pipeline. */
export const PIPELINE_CANCELED: PipelineError = { code: 'canceled', message: 'the pipeline was canceled' };

/**
 * Marks the pipeline's cancel requested and answers the step job still in flight, which the caller
 * cancels through the job service after the commit (its refund rules, its provider cancel): the
 * step's checkpoint then ends the pipeline canceled and no later step starts. With no job in flight
 * the pipeline ends here (`failed`, `canceled`, its never-run steps skipped). A pipeline that has
 * ended already is left as it is (`ended`: its status).
 */
export async function requestPipelineCancel(tx: Queryable, pipelineId: string): Promise<{ ended: PipelineStatus } | { pipeline: Pipeline; job: Job | null }> {
  const locked = await repo.lockPipeline(tx, pipelineId);
  if (locked.status === 'completed' || locked.status === 'failed') return { ended: locked.status };
  await repo.updatePipeline(tx, pipelineId, { cancelRequested: true });
  for (const step of await repo.stepsOf(tx, pipelineId)) {
    const current = step.job_id ? await getJob(tx, step.job_id) : undefined;
    if (current && !isTerminal(current.status)) return { pipeline: locked, job: current };
  }
  // No job in flight: the pipeline ends here; its workflow, if one runs, finds it canceled at its next step.
  await repo.updatePipeline(tx, pipelineId, { status: 'failed', error: PIPELINE_CANCELED, completed: true });
  await repo.markWaitingSteps(tx, pipelineId, 0, 'skipped');
  await enqueuePipelineEvent(tx, locked, 'pipeline.failed');
  return { pipeline: locked, job: null };
}
