// Direct uploads (POST /v1/uploads, POST /v1/uploads/{id}/complete) and the calls on any upload
// record (GET and DELETE /v1/uploads/{id}): the bytes go from the client straight to storage with a
// presigned POST; completion inspects them with the multipart rules (api/direct-uploads.ts).
import type { AppDeps } from '../deps.js';
import { ApiError, invalidRequest } from '../errors.js';
import { publicBaseUrl } from '../routes/media.js';
import { newId } from '../../shared/ids.js';
import { findUploadInWorkspace, insertUploadWithinQuota } from '../../db/repos/uploads.js';
import { MB, mediaTypeOf, type AcceptedMime } from '../../shared/media/type.js';
import { directUploadLimit, incomingObjectKey, sanitizeFileName } from '../../shared/uploads.js';
import { deleteUpload } from '../../db/upload-lifecycle.js';
import { completeDirectUpload, DirectUploadRefused } from '../direct-uploads.js';
import { directUploadRecord, type DirectUploadRecord } from './records.js';
import { quotaBytes, quotaExceeded, requireProject, retentionSeconds } from './rules.js';

interface DirectUploadRequest {
  project_id: string;
  name: string;
  mime_type: AcceptedMime;
  size: number;
  expires_in_seconds?: number | undefined;
}

export interface PresignedPost {
  method: 'POST';
  url: string;
  fields: Record<string, string>;
  expires_at: number;
}

/** A pending upload row and the presigned POST that sends its bytes to storage. */
export async function startDirectUpload(
  deps: AppDeps,
  workspaceId: string,
  body: DirectUploadRequest,
): Promise<DirectUploadRecord & { upload: PresignedPost }> {
  const limit = directUploadLimit(body.mime_type);
  const type = mediaTypeOf(body.mime_type);
  if (body.size > limit) throw invalidRequest(`size: a ${type.fileType} may be at most ${limit / MB} MB (${limit} bytes)`);
  const retention = retentionSeconds(deps, body.expires_in_seconds);
  await requireProject(deps, workspaceId, body.project_id);
  const id = newId('upl');
  const key = incomingObjectKey(workspaceId, id, body.mime_type);
  const post = await deps.storage.presignedPost(key, { contentType: body.mime_type, size: body.size, expirySeconds: deps.config.DIRECT_UPLOAD_EXPIRY_SECONDS });
  const inserted = await insertUploadWithinQuota(
    deps.db,
    {
      id,
      workspace_id: workspaceId,
      project_id: body.project_id,
      name: sanitizeFileName(body.name, type),
      object_key: key,
      file_type: type.fileType,
      mime_type: type.mime,
      file_size: body.size,
      status: 'pending',
      source_url: null,
      expires_at: new Date(Date.now() + deps.config.PENDING_UPLOAD_TTL_SECONDS * 1000),
      retention_seconds: retention,
    },
    quotaBytes(deps),
  );
  if (!('row' in inserted)) throw quotaExceeded(deps, inserted.usedBytes, body.size);
  const { row } = inserted;
  return {
    ...directUploadRecord(row, publicBaseUrl(deps.config)),
    upload: { method: 'POST', url: post.url, fields: post.fields, expires_at: post.expiresAt.getTime() },
  };
}

function notFound(id: string): ApiError {
  return new ApiError(404, 'not_found', `file upload ${id} not found`);
}

/** Completes a direct upload once its bytes are in storage (again on a repeated call). */
export async function completeUpload(deps: AppDeps, workspaceId: string, id: string): Promise<DirectUploadRecord> {
  const row = await findUploadInWorkspace(deps.db, workspaceId, id);
  if (!row) throw notFound(id);
  try {
    const done = await completeDirectUpload(deps, row);
    return directUploadRecord(done, publicBaseUrl(deps.config));
  } catch (err) {
    if (err instanceof DirectUploadRefused) {
      if (err.reason === 'bytes') throw invalidRequest(err.message);
      // A well-formed request the upload's state does not allow: a conflict, with the status.
      throw new ApiError(409, err.status === 'pending' ? 'not_ready' : 'upload_refused', err.message, { status: err.status });
    }
    throw err;
  }
}

export async function getUpload(deps: AppDeps, workspaceId: string, id: string): Promise<DirectUploadRecord> {
  const row = await findUploadInWorkspace(deps.db, workspaceId, id);
  if (!row) throw notFound(id);
  return directUploadRecord(row, publicBaseUrl(deps.config));
}

/** Deletes any upload of the workspace whatever its status (db/upload-lifecycle.ts); again answers the same. */
export async function removeUpload(deps: AppDeps, workspaceId: string, id: string): Promise<DirectUploadRecord> {
  const row = await deleteUpload(deps, workspaceId, id);
  if (!row) throw notFound(id);
  return directUploadRecord(row, publicBaseUrl(deps.config));
}
