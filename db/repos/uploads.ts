// File uploads: rows are written only once the object is fully stored (status `completed`), so a
// refused or failed upload leaves no row behind. Plain functions over Kysely | Transaction.
import type { Queryable } from '../index.js';
import type { FileUpload, NewFileUpload } from '../schema.js';

export async function insertUpload(db: Queryable, row: NewFileUpload): Promise<FileUpload> {
  return db.insertInto('file_uploads').values(row).returningAll().executeTakeFirstOrThrow();
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
