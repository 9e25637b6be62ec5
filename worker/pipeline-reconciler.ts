// The reconciler's pass over pipelines: one whose parent workflow never ran its first step (the
// gateway's start after commit failed, Temporal was down) is started again, like an unstarted job.
// A start finding the workflow running is harmless; the workflow marks the pipeline started itself.
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from '../shared/config.js';
import type { Database } from '../db/index.js';
import { stepsOf, unstartedPipelines } from '../db/repos/pipelines.js';
import { startPipelineWorkflow } from '../workflows/pipeline-client.js';

const BATCH = 100;

/** Starts the parent workflows of pipelines created `afterMs` ago or more whose workflow never ran; returns the Temporal calls made. */
export async function startUnstartedPipelines(deps: { config: Config; db: Database; client: Client; logger: Logger }, afterMs: number): Promise<number> {
  const rows = await unstartedPipelines(deps.db, new Date(Date.now() - afterMs), BATCH);
  let calls = 0;
  for (const p of rows) {
    calls++;
    const steps = (await stepsOf(deps.db, p.id)).length;
    await startPipelineWorkflow(deps.client, { id: p.id, workspaceId: p.workspace_id, projectId: p.project_id, steps }, deps.config.TASK_QUEUE_PREFIX).catch(
      (err: unknown) => deps.logger.warn({ pipelineId: p.id, err: (err as Error).message }, 'pipeline workflow start failed; the next pass tries again'),
    );
  }
  return calls;
}
