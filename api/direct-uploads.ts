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
//              incoming object, and incoming objects without a pending row (sent again with the
//              still-valid presigned POST after completion or refusal) are removed (the worker's
//              reconciler role runs it, worker/upload-sweeper.ts).
//
// The presigned POST stays usable until it expires, so the object under the incoming key can be
// replaced at any moment. Completion therefore keeps exactly the bytes it inspected: the size
// comes from the same GET as the inspected bytes, and the copy is conditioned on that GET's ETag
// (x-amz-copy-source-if-match); an object replaced in between is refused, never copied.
//
// Every step is idempotent: concurrent completions copy the same bytes to the same key and only one
// moves the row; the sweep deletes a row only while it is still pending.
import { Writable, type Readable } from 'node:stream';
import { pipeline } from 'node:stream';
import type { Database } from '../db/index.js';
import type { FileUpload } from '../db/schema.js';
import type { Config } from '../shared/config.js';
import { ObjectChanged, type Storage } from '../shared/storage.js';
import { completePendingUpload, failPendingUpload } from '../db/repos/uploads.js';
import { createMediaGuard, MediaError, mediaTypeOf, type AcceptedMime, type MediaInspection } from '../shared/media/type.js';
import { completedObjectKey, directUploadLimit } from '../shared/uploads.js';

/**
 * Why a completion was refused. `bytes`: the stored file itself was refused (a bad request; the
 * object is deleted and the upload failed). `state`: the upload cannot be completed in its state
 * (nothing sent yet, already refused, expired, or the file replaced during the check): a conflict.
 */
export class DirectUploadRefused extends Error {
  override name = 'DirectUploadRefused';
  constructor(
    message: string,
    readonly reason: 'bytes' | 'state',
    /** The upload's status after the refusal. */
    readonly status: 'pending' | 'failed' | 'expired' | 'deleted',
  ) {
    super(message);
  }
}

/**
 * Reads a stored object only as far as its type and (for images) dimensions need, through the
 * same guard as every other upload path; throws MediaError when it is refused. Answers the
 * inspection with the ETag and size of exactly the object read.
 */
async function inspectStoredObject(
  storage: Storage,
  key: string,
  opts: { declaredType: AcceptedMime; limit: number; maxPixels: number },
): Promise<{ inspection: MediaInspection; etag: string; size: number }> {
  const kind = mediaTypeOf(opts.declaredType).fileType;
  const guard = createMediaGuard({ limits: { [kind]: opts.limit }, declaredType: opts.declaredType, maxPixels: opts.maxPixels });
  const { body, etag } = await storage.getWithEtag(key);
  const size = Number((body as Readable & { headers?: Record<string, string | undefined> }).headers?.['content-length'] ?? NaN);
  const discard = new Writable({ write: (_chunk, _enc, cb) => cb() });
  pipeline(body, guard, discard, () => undefined);
  try {
    return { inspection: await guard.inspected, etag, size };
  } finally {
    body.destroy();
  }
}

interface DirectUploadDeps {
  db: Database;
  storage: Storage;
  config: Pick<Config, 'UPLOAD_MAX_IMAGE_PIXELS' | 'UPLOAD_RETENTION_SECONDS'>;
}

/**
 * Completes a pending direct upload (see the header). Answers the row as it stands afterwards;
 * throws DirectUploadRefused when the upload cannot be completed (a refusal of the bytes has
 * already deleted the object and failed the row).
 */
export async function completeDirectUpload(deps: DirectUploadDeps, row: FileUpload): Promise<FileUpload> {
  if (row.status === 'completed') return row;
  if (row.status === 'failed') throw new DirectUploadRefused(`upload ${row.id} was refused and cannot be completed; create a new upload`, 'state', 'failed');
  if (row.status === 'expired' || row.status === 'deleted')
    throw new DirectUploadRefused(`upload ${row.id} was ${row.status === 'deleted' ? 'deleted' : 'expired'}; create a new upload`, 'state', row.status);
  const mime = row.mime_type as AcceptedMime;
  const incomingKey = row.object_key;
  const notSent = () =>
    new DirectUploadRefused(`no file has been sent to storage for upload ${row.id} yet: send it with the presigned POST, then complete`, 'state', 'pending');
  if (!(await deps.storage.stat(incomingKey))) throw notSent();

  const refuse = async (message: string, reason: 'bytes' | 'state'): Promise<never> => {
    await deps.storage.remove(incomingKey).catch(() => undefined);
    await failPendingUpload(deps.db, row.id);
    throw new DirectUploadRefused(message, reason, 'failed');
  };
  let inspected: Awaited<ReturnType<typeof inspectStoredObject>>;
  try {
    inspected = await inspectStoredObject(deps.storage, incomingKey, {
      declaredType: mime,
      limit: directUploadLimit(mime),
      maxPixels: deps.config.UPLOAD_MAX_IMAGE_PIXELS,
    });
  } catch (err) {
    if (err instanceof MediaError) return refuse(err.message, 'bytes');
    // Removed between the stat and the read (a sweep): nothing to complete yet.
    if ((err as { code?: string }).code === 'NoSuchKey' || (err as { code?: string }).code === 'NotFound') throw notSent();
    throw err;
  }
  if (inspected.size !== Number(row.file_size)) return refuse(`the stored file has ${inspected.size} bytes, not the ${row.file_size} declared`, 'bytes');

  const finalKey = completedObjectKey(incomingKey);
  try {
    await deps.storage.copy(incomingKey, finalKey, { ifEtag: inspected.etag });
  } catch (err) {
    if (err instanceof ObjectChanged)
      return refuse(`the file of upload ${row.id} was replaced in storage while it was being checked; create a new upload`, 'state');
    // A concurrent completion finished first and removed the incoming object.
    const now = await deps.db.selectFrom('file_uploads').selectAll().where('id', '=', row.id).executeTakeFirst();
    if (now?.status === 'completed') return now;
    throw err;
  }
  const completed = await completePendingUpload(deps.db, row.id, finalKey, deps.config.UPLOAD_RETENTION_SECONDS);
  await deps.storage.remove(incomingKey).catch(() => undefined);
  if (completed) return completed;
  // Someone else moved the row first: a concurrent completion (same final key), or the sweep.
  const now = await deps.db.selectFrom('file_uploads').selectAll().where('id', '=', row.id).executeTakeFirst();
  if (now?.status === 'completed') return now;
  await deps.storage.remove(finalKey).catch(() => undefined);
  if (now?.status === 'deleted') throw new DirectUploadRefused(`upload ${row.id} was deleted; create a new upload`, 'state', 'deleted');
  throw new DirectUploadRefused(`upload ${row.id} expired before it was completed; create a new upload`, 'state', 'failed');
}
