// Rules every way of uploading shares: the project must be the workspace's, the lifetime stays
// within the configured maximum, and the workspace's quota bounds what it stores.
import { z } from 'zod';
import type { AppDeps } from '../deps.js';
import { ApiError, forbidden, invalidRequest } from '../errors.js';
import { projectBelongsToWorkspace } from '../../db/repos/uploads.js';
import { MB } from '../../shared/media/type.js';
import { quotaExceededMessage } from '../../shared/uploads.js';

/** A project id as every upload endpoint takes it. */
export const projectId = z.string().min(1).max(128);

/** The upload's lifetime in seconds: the requested one within the configured maximum, or the default. */
export function retentionSeconds(deps: AppDeps, requested: number | undefined): number {
  if (requested === undefined) return deps.config.UPLOAD_RETENTION_SECONDS;
  if (requested > deps.config.UPLOAD_MAX_RETENTION_SECONDS)
    throw invalidRequest(`expires_in_seconds: at most ${deps.config.UPLOAD_MAX_RETENTION_SECONDS} seconds`);
  return requested;
}

export async function requireProject(deps: AppDeps, workspaceId: string, id: string): Promise<void> {
  if (!(await projectBelongsToWorkspace(deps.db, workspaceId, id))) {
    throw forbidden(`project ${id} does not exist in this workspace`);
  }
}

export const quotaBytes = (deps: AppDeps) => deps.config.WORKSPACE_UPLOAD_QUOTA_MB * MB;

export function quotaExceeded(deps: AppDeps, usedBytes: number, size: number): ApiError {
  return new ApiError(413, 'storage_quota_exceeded', quotaExceededMessage(deps.config.WORKSPACE_UPLOAD_QUOTA_MB, usedBytes, size));
}
