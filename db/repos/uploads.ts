// File uploads. Multipart and from-URL uploads write their row only once the object is fully
// stored (status `completed`), so a refused or failed upload leaves no row behind. Direct uploads
// write a `pending` row first (the client then sends the bytes to storage); completing moves it to
// `completed` or `failed` exactly once, and the sweep removes pending rows past their expiry.
// Only `completed` uploads before their `expires_at` are served and usable as new job inputs; an
// upload that expired or was deleted stays as a tombstone (status `expired` / `deleted`), and its
// objects are removed once no job in flight reads them. Plain functions over Kysely | Transaction.
import { sql } from 'kysely';
import type { Database, Queryable } from '../index.js';
import type { FileUpload, NewFileUpload } from '../schema.js';
import type { StoredUpload } from '../../shared/uploads.js';
import { uploadParamKeys } from '../../kinds/index.js';

export async function insertUpload(db: Queryable, row: NewFileUpload): Promise<FileUpload> {
  return db.insertInto('file_uploads').values(row).returningAll().executeTakeFirstOrThrow();
}

/** Bytes the workspace's uploads hold in storage: completed ones, and pending ones at their declared size. */
async function uploadBytesOfWorkspace(db: Queryable, workspaceId: string): Promise<number> {
  const row = await db
    .selectFrom('file_uploads')
    .select(sql<string>`coalesce(sum(file_size), 0)`.as('bytes'))
    .where('workspace_id', '=', workspaceId)
    .where('status', 'in', ['pending', 'completed'])
    .executeTakeFirstOrThrow();
  return Number(row.bytes);
}

/**
 * Inserts the upload only if the workspace's uploads stay within `quotaBytes` with it; answers the
 * row, or the bytes already used when it would not fit. Inserts of one workspace are serialized
 * (an advisory lock for the transaction), so concurrent uploads cannot overshoot the quota together.
 */
export async function insertUploadWithinQuota(db: Database, row: NewFileUpload, quotaBytes: number): Promise<{ row: FileUpload } | { usedBytes: number }> {
  return db.transaction().execute(async (tx) => {
    await sql`select pg_advisory_xact_lock(hashtext(${`upload_quota/${row.workspace_id}`}))`.execute(tx);
    const usedBytes = await uploadBytesOfWorkspace(tx, row.workspace_id);
    if (usedBytes + Number(row.file_size) > quotaBytes) return { usedBytes };
    return { row: await insertUpload(tx, row) };
  });
}

/** Any upload row by id (activity retries use it to stay idempotent). */
export async function findUploadById(db: Queryable, id: string): Promise<FileUpload | undefined> {
  return db.selectFrom('file_uploads').selectAll().where('id', '=', id).executeTakeFirst();
}

/** A completed upload visible to the workspace, or undefined (missing, other workspace, not completed). */
export async function findCompletedUpload(db: Queryable, workspaceId: string, id: string): Promise<FileUpload | undefined> {
  return db
    .selectFrom('file_uploads')
    .selectAll()
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .where('status', '=', 'completed')
    .executeTakeFirst();
}

/** Whether the project exists in the workspace (a project of another workspace counts as absent). */
export async function projectBelongsToWorkspace(db: Queryable, workspaceId: string, projectId: string): Promise<boolean> {
  const row = await db.selectFrom('projects').select('id').where('id', '=', projectId).where('workspace_id', '=', workspaceId).executeTakeFirst();
  return row !== undefined;
}

/** Any upload of the workspace by id, whatever its status (undefined for another workspace's). */
export async function findUploadInWorkspace(db: Queryable, workspaceId: string, id: string): Promise<FileUpload | undefined> {
  return db.selectFrom('file_uploads').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
}

/**
 * Moves a pending upload to `completed` at its final object key. Undefined when it is no longer
 * pending (completed or refused by a concurrent call, or swept): the caller re-reads the row.
 */
export async function completePendingUpload(db: Queryable, id: string, objectKey: string, defaultRetentionSeconds: number): Promise<FileUpload | undefined> {
  return db
    .updateTable('file_uploads')
    .set({
      status: 'completed',
      object_key: objectKey,
      expires_at: sql<Date>`now() + make_interval(secs => coalesce(retention_seconds, ${defaultRetentionSeconds}))`,
      updated_at: sql<Date>`now()`,
    })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .returningAll()
    .executeTakeFirst();
}

/** Moves a pending upload to `failed` (its bytes were refused); false when it was not pending. */
export async function failPendingUpload(db: Queryable, id: string): Promise<boolean> {
  const r = await db
    .updateTable('file_uploads')
    .set({ status: 'failed', expires_at: null, updated_at: sql<Date>`now()` })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

/** Pending uploads whose expiry has passed, oldest first (the sweep's work list). */
export async function findExpiredPendingUploads(db: Queryable, now: Date, limit: number): Promise<FileUpload[]> {
  return db.selectFrom('file_uploads').selectAll().where('status', '=', 'pending').where('expires_at', '<=', now).orderBy('expires_at').limit(limit).execute();
}

/** Which of `ids` are uploads still pending (their incoming objects are kept). */
/** The status of each of these uploads that has a row (an id without one is absent from the map). */
export async function uploadStatuses(db: Queryable, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('file_uploads').select(['id', 'status']).where('id', 'in', ids).execute();
  return new Map(rows.map((r) => [r.id, r.status]));
}

/** Deletes up to `limit` refused (failed) upload rows that failed before `before` (file_uploads_failed_idx); returns how many. */
export async function sweepFailedUploads(db: Queryable, before: Date, limit = 5_000): Promise<number> {
  const r = await db
    .deleteFrom('file_uploads')
    .where(
      'id',
      'in',
      db.selectFrom('file_uploads').select('id').where('status', '=', 'failed').where('updated_at', '<', before).orderBy('updated_at').limit(limit),
    )
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** Deletes an upload row only while it is still pending (a completion that won the race stays). */
export async function deletePendingUpload(db: Queryable, id: string): Promise<boolean> {
  const r = await db.deleteFrom('file_uploads').where('id', '=', id).where('status', '=', 'pending').executeTakeFirst();
  return r.numDeletedRows > 0n;
}

/** Why a referenced upload cannot be used or served; null when it can. */
export function uploadUnavailable(row: Pick<FileUpload, 'status' | 'expires_at'>, now = new Date()): 'expired' | 'deleted' | 'not_completed' | null {
  if (row.status === 'deleted') return 'deleted';
  if (row.status === 'expired' || (row.status === 'completed' && row.expires_at !== null && row.expires_at <= now)) return 'expired';
  return row.status === 'completed' ? null : 'not_completed';
}

/**
 * An upload a job created before its expiry or deletion may still read: completed, or expired or
 * deleted while its objects are kept for the jobs in flight that reference it.
 */
export async function findUploadForJob(db: Queryable, workspaceId: string, id: string): Promise<FileUpload | undefined> {
  return db
    .selectFrom('file_uploads')
    .selectAll()
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .where('status', 'in', ['completed', 'expired', 'deleted'])
    .where('objects_removed_at', 'is', null)
    .executeTakeFirst();
}

/** The upload whose object `key` is, if any (the media route decides from it whether to serve). */
export async function findUploadByObjectKey(db: Queryable, id: string, key: string): Promise<Pick<FileUpload, 'status' | 'expires_at'> | undefined> {
  return db.selectFrom('file_uploads').select(['status', 'expires_at']).where('id', '=', id).where('object_key', '=', key).executeTakeFirst();
}

/**
 * Marks the workspace's upload deleted (from any state); answers the row, already deleted or not,
 * or undefined when the workspace has no such upload.
 */
export async function markUploadDeleted(db: Queryable, workspaceId: string, id: string): Promise<FileUpload | undefined> {
  const updated = await db
    .updateTable('file_uploads')
    .set({ status: 'deleted', updated_at: sql<Date>`now()` })
    .where('id', '=', id)
    .where('workspace_id', '=', workspaceId)
    .where('status', '<>', 'deleted')
    .returningAll()
    .executeTakeFirst();
  return updated ?? (await findUploadInWorkspace(db, workspaceId, id));
}

/** Marks up to `limit` completed uploads past their expiry `expired`; returns how many. */
export async function expireUploads(db: Queryable, now: Date, limit = 5_000): Promise<number> {
  const r = await db
    .updateTable('file_uploads')
    .set({ status: 'expired', updated_at: sql<Date>`now()` })
    .where(
      'id',
      'in',
      db.selectFrom('file_uploads').select('id').where('status', '=', 'completed').where('expires_at', '<=', now).orderBy('expires_at').limit(limit),
    )
    .where('status', '=', 'completed')
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}

// Whether a job's params name the upload under a key its kind declares (kinds/<kind>/descriptor.ts: its `inputs` from uploads):
// a key holds one id or a list of them, and jsonb `@>` matches the id in either.
const namedByJob = sql.join(
  uploadParamKeys.map((k) => sql`j.params->${sql.lit(k)} @> to_jsonb(file_uploads.id)`),
  sql` or `,
);

/** Whether a job in flight (pending or generating) of the upload's workspace names it as an input. */
const readByJobInFlight = sql<boolean>`exists (
  select 1 from jobs j
  where j.workspace_id = file_uploads.workspace_id
    and j.status in ('pending', 'generating')
    and (${namedByJob})
)`;

/** Whether a job in flight still reads the upload (its objects are kept until that job ends). */
export async function uploadReadByJobInFlight(db: Queryable, id: string): Promise<boolean> {
  const row = await db.selectFrom('file_uploads').select(readByJobInFlight.as('read')).where('id', '=', id).executeTakeFirst();
  return row?.read === true;
}

/** Expired or deleted uploads whose objects are still stored and that no job in flight reads, oldest first. */
export async function uploadsWithObjectsToRemove(db: Queryable, limit: number): Promise<FileUpload[]> {
  return db
    .selectFrom('file_uploads')
    .selectAll()
    .where('status', 'in', ['expired', 'deleted'])
    .where('objects_removed_at', 'is', null)
    .where(sql<boolean>`not ${readByJobInFlight}`)
    .orderBy('updated_at')
    .limit(limit)
    .execute();
}

export async function markObjectsRemoved(db: Queryable, id: string): Promise<void> {
  await db
    .updateTable('file_uploads')
    .set({ objects_removed_at: sql<Date>`now()` })
    .where('id', '=', id)
    .where('objects_removed_at', 'is', null)
    .execute();
}

/** The upload record the fetch workflow returns (timestamps in ms). */
export function storedUploadOf(row: FileUpload): StoredUpload {
  return {
    id: row.id,
    name: row.name,
    object_key: row.object_key,
    workspace_id: row.workspace_id,
    project_id: row.project_id,
    file_type: row.file_type,
    mime_type: row.mime_type,
    file_size: Number(row.file_size),
    expires_at: row.expires_at?.getTime() ?? null,
    created_at: row.created_at.getTime(),
    updated_at: row.updated_at.getTime(),
  };
}
