// Client side of a bulk action's workflow (the gateway's create, the reconciler's late start):
// workflow id = the action's id, input the id alone. One running already answers 'already_started'.
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { searchAttributes, taskQueues } from './definitions.js';
import { bulkActionWorkflowType, type BulkActionRunInput } from './bulk-action-types.js';

interface BulkActionToStart {
  id: string;
  workspaceId: string;
  action: string;
  jobCount: number;
}

/** Starts the action's workflow on the workflows queue (it only orchestrates the job service's moves). */
export async function startBulkActionWorkflow(
  client: Client,
  a: BulkActionToStart,
  config: { TASK_QUEUE_PREFIX: string },
): Promise<'started' | 'already_started'> {
  try {
    await client.workflow.start(bulkActionWorkflowType, {
      workflowId: a.id,
      taskQueue: taskQueues(config.TASK_QUEUE_PREFIX).workflows,
      args: [{ bulkActionId: a.id } satisfies BulkActionRunInput],
      typedSearchAttributes: new TypedSearchAttributes([{ key: searchAttributes.workspaceId, value: a.workspaceId }]),
      staticSummary: `bulk ${a.action} · ${a.jobCount} job${a.jobCount === 1 ? '' : 's'}`,
      staticDetails: `Bulk action ${a.id} (${a.action}) of workspace ${a.workspaceId}.`,
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    });
    return 'started';
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return 'already_started';
    throw err;
  }
}
