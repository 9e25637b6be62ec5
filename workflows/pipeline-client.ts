// Client side of the pipelines' parent workflow (the gateway's create and resume, the reconciler's
// late start): workflow id = the pipeline id, input the id alone (its activities read the rest
// from Postgres). A resume starts a new run under the same id once the previous one closed.
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { searchAttributes, taskQueues } from './definitions.js';
import { taskPriority } from '../shared/task-priority.js';
import { pipelineWorkflowType, type PipelineRunInput } from './pipeline-types.js';

interface PipelineToStart {
  id: string;
  workspaceId: string;
  projectId: string;
  steps: number;
  /** The workspace's fair-share weight (db/repos/fair-share.ts workspaceShareWeight). */
  fairnessWeight: number;
}

/**
 * The parent's Priority: the workspace as its fairness key, so one workspace's pipelines never make
 * another's wait behind all of them on the workflows queue, at the normal priority level (the parent
 * only orchestrates: each step's job starts with its own priority).
 */
export const pipelinePriority = (p: Pick<PipelineToStart, 'workspaceId' | 'fairnessWeight'>, fairShare: boolean) =>
  taskPriority({ workspaceId: p.workspaceId, priority: 'normal', fairnessWeight: p.fairnessWeight }, { fairness: fairShare });

/** Starts the pipeline's parent workflow; one that runs already answers 'already_started'. */
export async function startPipelineWorkflow(
  client: Client,
  p: PipelineToStart,
  config: { TASK_QUEUE_PREFIX: string; FAIR_SHARE: boolean },
): Promise<'started' | 'already_started'> {
  return (await startPipelineRun(client, p, config)) === null ? 'already_started' : 'started';
}

/** Starts the pipeline's parent workflow; answers the new run's id, or null when a run is open already. */
export async function startPipelineRun(client: Client, p: PipelineToStart, config: { TASK_QUEUE_PREFIX: string; FAIR_SHARE: boolean }): Promise<string | null> {
  try {
    const handle = await client.workflow.start(pipelineWorkflowType, {
      workflowId: p.id,
      taskQueue: taskQueues(config.TASK_QUEUE_PREFIX).workflows,
      args: [{ pipelineId: p.id } satisfies PipelineRunInput],
      priority: pipelinePriority(p, config.FAIR_SHARE),
      typedSearchAttributes: new TypedSearchAttributes([
        { key: searchAttributes.workspaceId, value: p.workspaceId },
        { key: searchAttributes.projectId, value: p.projectId },
      ]),
      staticSummary: `pipeline · ${p.steps} step${p.steps === 1 ? '' : 's'}`,
      staticDetails: `Pipeline ${p.id} of workspace ${p.workspaceId}, project ${p.projectId}.`,
      // A closed run (a failed pipeline) may be followed by a resume's run; never two at once.
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    });
    return handle.firstExecutionRunId;
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return null;
    throw err;
  }
}

/** Waits up to `timeoutMs` for the pipeline's current run to close (a resume right after the failure may find it closing). */
export async function awaitPipelineRunClosed(client: Client, pipelineId: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const d = await client.workflow.getHandle(pipelineId).describe();
      if (d.status.name !== 'RUNNING') return true;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return true;
      throw err;
    }
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 200));
  }
}
