// The reconciler's pass over bulk actions: one whose workflow has not run since its create (the
// gateway's start after commit failed, or Temporal was down) is started again, like an unstarted
// batch. A start finding the workflow running is harmless, and every run marks the action started
// in its first step.
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from '../shared/config.js';
import type { Database } from '../db/index.js';
import { unstartedBulkActions } from '../db/repos/bulk-actions.js';
import { startBulkActionWorkflow } from '../workflows/bulk-action-client.js';

const BATCH = 100;

type Deps = { config: Config; db: Database; client: Client; logger: Logger };

/** Starts the workflows of bulk actions left unstarted `afterMs` or more; returns the Temporal calls made. */
export async function startUnstartedBulkActions(deps: Deps, afterMs: number): Promise<number> {
  const rows = await unstartedBulkActions(deps.db, new Date(Date.now() - afterMs), BATCH);
  for (const a of rows) {
    await startBulkActionWorkflow(deps.client, { id: a.id, workspaceId: a.workspace_id, action: a.action, jobCount: a.job_count }, deps.config).catch(
      (err: unknown) => deps.logger.warn({ bulkActionId: a.id, err: (err as Error).message }, 'bulk action workflow start failed; the next pass tries again'),
    );
  }
  return rows.length;
}
