// The end of an upload's life, for the gateway's DELETE and the reconciler's sweep alike: the row
// becomes a tombstone first (`deleted`, or `expired` past its `expires_at`), so from that moment it
// is neither served nor accepted by a new job; then its objects go, unless a job in flight reads
// the upload (a job accepted before the deletion or the expiry keeps its inputs until it ends; the
// sweep removes them afterwards). A storage failure leaves the tombstone without
// `objects_removed_at`, and the next sweep finishes.
import type { Database } from './index.js';
import type { FileUpload } from './schema.js';
import type { Storage } from '../shared/storage.js';
import { completedObjectKey, incomingObjectKeyOf, INCOMING, UPLOADS } from '../shared/uploads.js';
import { expireUploads, markObjectsRemoved, markUploadDeleted, uploadReadByJobInFlight, uploadsWithObjectsToRemove } from './repos/uploads.js';

interface Deps {
  db: Database;
  storage: Pick<Storage, 'remove'>;
}

/**
 * Every key the upload's bytes may be stored under: its public key and, for direct uploads, the
 * incoming one. None for an upload registered over a job's output (a pipeline step's): that object
 * is the job's, and goes with the job's media.
 */
function objectKeysOf(row: Pick<FileUpload, 'object_key'>): string[] {
  const key = row.object_key;
  if (key.startsWith(INCOMING)) return [key, completedObjectKey(key)];
  return key.startsWith(UPLOADS) ? [key, incomingObjectKeyOf(key)] : [];
}

async function removeObjects(deps: Deps, row: Pick<FileUpload, 'id' | 'object_key'>): Promise<void> {
  for (const key of objectKeysOf(row)) await deps.storage.remove(key);
  await markObjectsRemoved(deps.db, row.id);
}

/**
 * DELETE /v1/uploads/{id}: the workspace's upload as it stands after the deletion (idempotent), or
 * undefined when the workspace has no such upload.
 */
export async function deleteUpload(deps: Deps, workspaceId: string, id: string): Promise<FileUpload | undefined> {
  const row = await markUploadDeleted(deps.db, workspaceId, id);
  if (!row || row.objects_removed_at !== null) return row;
  if (!(await uploadReadByJobInFlight(deps.db, row.id))) await removeObjects(deps, row);
  return row;
}

/**
 * One sweep pass: completed uploads past their expiry become `expired`, then the objects of expired
 * and deleted uploads no job in flight reads are removed. Returns how many uploads expired and how
 * many had their objects removed.
 */
export async function sweepUploadLifetimes(deps: Deps, now = new Date(), batch = 500): Promise<{ expired: number; removed: number }> {
  const expired = await expireUploads(deps.db, now, batch);
  let removed = 0;
  for (const row of await uploadsWithObjectsToRemove(deps.db, batch)) {
    await removeObjects(deps, row);
    removed++;
  }
  return { expired, removed };
}
