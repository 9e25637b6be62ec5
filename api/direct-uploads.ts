// Direct uploads: the client sends its bytes straight to object storage with a presigned POST, so
// large inputs never pass through a gateway. The flow:
//
//   create   → a `pending` row, and a presigned POST whose signed policy fixes the key (under
//              `incoming/`, never served), the Content-Type and the exact size;
//   complete → the object must exist with that size; its first bytes are inspected with the same
//              magic-byte rules, size limits and image pixel cap as multipart uploads; an accepted
//              file is copied (server side) to its public `uploads/` key and the row becomes
//              `completed`; a refused one is deleted and the row becomes `failed`;
//   sweep    → pending rows never completed are removed after PENDING_UPLOAD_TTL_SECONDS with their
//              incoming object (the worker's reconciler role runs it).
//
// Every step is idempotent: concurrent completions copy the same bytes to the same key and only one
// moves the row; the sweep deletes a row only while it is still pending.
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream';
import type { Database } from '../db/index.js';
import type { FileUpload } from '../db/schema.js';
import type { Config } from '../shared/config.js';
import type { Storage } from '../shared/storage.js';
import { completePendingUpload, failPendingUpload } from '../db/repos/uploads.js';
import { createMediaGuard, MediaError, mediaTypeOf, type AcceptedMime, type MediaInspection } from '../shared/media-type.js';
import { completedObjectKey, directUploadLimit } from '../shared/uploads.js';

/** Why a completion was refused; `final` refusals delete the object and fail the upload. */
export class DirectUploadRefused extends Error {
  override name = 'DirectUploadRefused';
  constructor(
    message: string,
    readonly final: boolean,
  ) {
    super(message);
  }
}

/**
 * Reads a stored object only as far as its type and (for images) dimensions need, through the
 * same guard as every other upload path; throws MediaError when it is refused.
 */
export async function inspectStoredObject(storage: Storage, key: string, opts: { declaredType: AcceptedMime; limit: number; maxPixels: number }): Promise<MediaInspection> {
  const kind = mediaTypeOf(opts.declaredType).fileType;
  const guard = createMediaGuard({ limits: { [kind]: opts.limit }, declaredType: opts.declaredType, maxPixels: opts.maxPixels });
  const source = await storage.getStream(key);
  const discard = new Writable({ write: (_chunk, _enc, cb) => cb() });
  pipeline(source, guard, discard, () => undefined);
  try {
    return await guard.inspected;
  } finally {
    source.destroy();
  }
}

export interface DirectUploadDeps {
  db: Database;
  storage: Storage;
  config: Pick<Config, 'UPLOAD_MAX_IMAGE_PIXELS'>;
}

/**
 * Completes a pending direct upload (see the header). Answers the row as it stands afterwards;
 * throws DirectUploadRefused when the upload cannot be completed (a final refusal has already
 * deleted the object and failed the row).
 */
export async function completeDirectUpload(deps: DirectUploadDeps, row: FileUpload): Promise<FileUpload> {
  if (row.status === 'completed') return row;
  if (row.status === 'failed') throw new DirectUploadRefused(`upload ${row.id} was refused and cannot be completed; create a new upload`, false);
  const mime = row.mime_type as AcceptedMime;
  const incomingKey = row.object_key;
  const stat = await deps.storage.stat(incomingKey);
  if (!stat) throw new DirectUploadRefused(`no file has been sent to storage for upload ${row.id} yet: send it with the presigned POST, then complete`, false);

  const refuse = async (message: string): Promise<never> => {
    await deps.storage.remove(incomingKey).catch(() => undefined);
    await failPendingUpload(deps.db, row.id);
    throw new DirectUploadRefused(message, true);
  };
  if (stat.size !== Number(row.file_size)) await refuse(`the stored file has ${stat.size} bytes, not the ${row.file_size} declared`);
  try {
    await inspectStoredObject(deps.storage, incomingKey, { declaredType: mime, limit: directUploadLimit(mime), maxPixels: deps.config.UPLOAD_MAX_IMAGE_PIXELS });
  } catch (err) {
    if (err instanceof MediaError) await refuse(err.message);
    throw err;
  }

  const finalKey = completedObjectKey(incomingKey);
  await deps.storage.copy(incomingKey, finalKey);
  const completed = await completePendingUpload(deps.db, row.id, finalKey);
  await deps.storage.remove(incomingKey).catch(() => undefined);
  if (completed) return completed;
  // Someone else moved the row first: a concurrent completion (same final key), or the sweep.
  const now = await deps.db.selectFrom('file_uploads').selectAll().where('id', '=', row.id).executeTakeFirst();
  if (now?.status === 'completed') return now;
  await deps.storage.remove(finalKey).catch(() => undefined);
  throw new DirectUploadRefused(`upload ${row.id} expired before it was completed; create a new upload`, false);
}
