// The reconciler's pass over batches: one whose parent workflow has not run since its create or
// its last retry (the gateway's start after commit failed, Temporal was down, or a retry came while
// the last run was closing) is started again, like an unstarted job. A start finding the workflow
// running is harmless: that run finds the waiting items itself, and every run marks the batch
// started in its first step.
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from '../shared/config.js';
import type { Database } from '../db/index.js';
import { unstartedBatches } from '../db/repos/batches.js';
import { workspaceShareWeight } from '../db/repos/fair-share.js';
import { startBatchWorkflow } from '../workflows/batch-client.js';

const BATCH = 100;

type Deps = { config: Config; db: Database; client: Client; logger: Logger };

/** Starts the parent workflows of batches left unstarted `afterMs` or more; returns the Temporal calls made. */
export async function startUnstartedBatches(deps: Deps, afterMs: number): Promise<number> {
  const rows = await unstartedBatches(deps.db, new Date(Date.now() - afterMs), BATCH);
  for (const b of rows) {
    const fairnessWeight = await workspaceShareWeight(deps.db, b.workspace_id);
    await startBatchWorkflow(
      deps.client,
      { id: b.id, workspaceId: b.workspace_id, projectId: b.project_id, items: b.item_count, fairnessWeight },
      deps.config,
    ).catch((err: unknown) => deps.logger.warn({ batchId: b.id, err: (err as Error).message }, 'batch workflow start failed; the next pass tries again'));
  }
  return rows.length;
}
