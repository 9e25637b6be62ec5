// Client side of a batch's parent workflow (the gateway's create and retry, the reconciler's late
// start): workflow id = the batch id, input the id alone (its activities read the rest from
// Postgres). A retry of failed items starts a new run under the same id once the previous one
// closed; while one runs, that run finds the items waiting again by itself.
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { searchAttributes, taskQueues } from './definitions.js';
import { pipelinePriority } from './pipeline-client.js';
import { batchWorkflowType, type BatchRunInput } from './batch-types.js';

interface BatchToStart {
  id: string;
  workspaceId: string;
  projectId: string;
  items: number;
  /** The workspace's fair-share weight (db/repos/fair-share.ts workspaceShareWeight). */
  fairnessWeight: number;
}

/**
 * Starts the batch's parent workflow with the workspace as its fairness key on the workflows queue
 * (as a pipeline's parent: it only orchestrates, each item's job starts with its own priority);
 * one that runs already answers 'already_started'.
 */
export async function startBatchWorkflow(
  client: Client,
  b: BatchToStart,
  config: { TASK_QUEUE_PREFIX: string; FAIR_SHARE: boolean },
): Promise<'started' | 'already_started'> {
  try {
    await client.workflow.start(batchWorkflowType, {
      workflowId: b.id,
      taskQueue: taskQueues(config.TASK_QUEUE_PREFIX).workflows,
      args: [{ batchId: b.id } satisfies BatchRunInput],
      priority: pipelinePriority(b, config.FAIR_SHARE),
      typedSearchAttributes: new TypedSearchAttributes([
        { key: searchAttributes.workspaceId, value: b.workspaceId },
        { key: searchAttributes.projectId, value: b.projectId },
      ]),
      staticSummary: `batch · ${b.items} item${b.items === 1 ? '' : 's'}`,
      staticDetails: `Batch ${b.id} of workspace ${b.workspaceId}, project ${b.projectId}.`,
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    });
    return 'started';
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return 'already_started';
    throw err;
  }
}
