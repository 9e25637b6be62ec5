// What the pipeline endpoints share: their services, the pipeline of the request's key, and the
// limit on a workspace's pipelines pending or running.
import type { Request, Response } from 'express';
import { sql } from 'kysely';
import type { AppDeps } from '../../deps.js';
import { authOf } from '../../auth.js';
import { ApiError } from '../../errors.js';
import type { Database, Queryable } from '../../../db/index.js';
import type { Pipeline } from '../../../db/pipeline-schema.js';
import * as repo from '../../../db/repos/pipelines.js';
import type { JobService } from '../../../jobs/index.js';

export const TAG = 'Pipelines';

/** When a create refused for the workspace's pipelines in flight is worth retrying: a guess, as a pipeline's end cannot be foreseen. */
const RETRY_AFTER_MS = 10_000;

export interface PipelineServices {
  deps: AppDeps;
  jobs: JobService;
}

/** The pipeline `:id` of the key's workspace; 404 for an unknown id or another workspace's. */
export async function loadPipelineOfKey(db: Database, req: Request, res: Response): Promise<Pipeline> {
  const p = await repo.getPipelineInWorkspace(db, authOf(res).workspaceId, String(req.params.id));
  if (!p) throw new ApiError(404, 'not_found', `pipeline ${String(req.params.id)} not found`);
  return p;
}

/** 429 while the workspace has PIPELINE_MAX_ACTIVE pipelines pending or running (serialized per workspace by the caller's transaction). */
export async function refuseOverActive(tx: Queryable, deps: AppDeps, res: Response, workspaceId: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtext(${`pipelines/${workspaceId}`}))`.execute(tx);
  const active = await repo.activePipelines(tx, workspaceId);
  if (active >= deps.config.PIPELINE_MAX_ACTIVE) {
    res.setHeader('Retry-After', String(RETRY_AFTER_MS / 1000));
    throw new ApiError(
      429,
      'rate_limited',
      `this workspace has ${active} pipelines pending or running, the most it may have at once (PIPELINE_MAX_ACTIVE); retry when one has ended`,
      { retry_after_ms: RETRY_AFTER_MS },
    );
  }
}
