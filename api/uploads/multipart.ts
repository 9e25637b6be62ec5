// A multipart upload (POST /v1/upload), received while it streams.
//
// The `file` part streams straight into object storage under its final, unguessable key while
// busboy parses; `project_id` may come before or after the file. When it comes first, the project
// is checked at once and a foreign project cuts the upload before storing; when it comes after, the
// stored object is removed if the check fails. The type is decided from the magic bytes (a declared
// part Content-Type that disagrees is refused); limits (20 MB, 10 MB for images) are enforced while
// streaming. Any refusal answers at once, stops reading into storage, aborts the storage upload and
// removes what was stored before answering: no object and no row remain. The row (status
// `completed`) is written only after the object is complete.
import type { Request } from 'express';
import busboy from 'busboy';
import { pipeline } from 'node:stream';
import { createHash } from 'node:crypto';
import type { AppDeps } from '../deps.js';
import { ApiError, invalidRequest } from '../errors.js';
import type { MultipartFingerprint } from '../idempotency.js';
import { publicBaseUrl } from '../routes/media.js';
import { newId } from '../../shared/ids.js';
import { insertUploadWithinQuota, storedUploadOf } from '../../db/repos/uploads.js';
import { createMediaGuard, MediaError, type MediaGuard } from '../../shared/media/type.js';
import { StreamEndedEarly } from '../../shared/storage.js';
import { sanitizeFileName, uploadLimits, uploadObjectKey } from '../../shared/uploads.js';
import { discardRest, enforceMinimumRate, tooSlow } from './limits.js';
import { uploadRecord, type UploadRecord } from './records.js';
import { projectId, quotaBytes, quotaExceeded, requireProject, retentionSeconds } from './rules.js';

/**
 * Multipart bytes after the file part that a request may carry (closing boundary, a late
 * `project_id`). Bounding them lets storage stream most of a file straight through: the file is at
 * least Content-Length minus what came before it minus this.
 */
export const MAX_AFTER_FILE = 64 * 1024;

function mediaErrorToApi(err: unknown): unknown {
  if (err instanceof StreamEndedEarly) {
    return invalidRequest(`the multipart body may carry at most ${MAX_AFTER_FILE / 1024} KB after the file part`);
  }
  if (err instanceof MediaError) {
    if (err.kind === 'too_large') return new ApiError(413, 'payload_too_large', `file too large: ${err.message}`);
    return invalidRequest(err.message);
  }
  return err;
}

/** A stored multipart upload: its record, and what the Idempotency-Key fingerprint takes of it (api/idempotency.ts). */
interface ReceivedUpload {
  record: UploadRecord;
  fingerprint: MultipartFingerprint;
}

export async function receiveMultipartUpload(deps: AppDeps, req: Request, workspaceId: string): Promise<ReceivedUpload> {
  if (!req.is('multipart/form-data')) throw invalidRequest('Content-Type must be multipart/form-data');
  let bb: busboy.Busboy;
  try {
    bb = busboy({ headers: req.headers, limits: { files: 2, fields: 4, parts: 6, fieldSize: 1024, headerPairs: 20 } });
  } catch {
    throw invalidRequest('malformed multipart/form-data request (boundary missing?)');
  }

  const uploadId = newId('upl');
  let project: string | undefined;
  let retention: number | undefined;
  let projectCheck: Promise<void> | undefined;
  let fileSeen = false;
  let guard: MediaGuard | undefined;
  let storing: Promise<{ key: string; name: string }> | undefined;
  let fileHash: { name: string; hash: ReturnType<typeof createHash> } | undefined;
  const contentLength = Number(req.headers['content-length']);
  let received = 0;
  req.on('data', (chunk: Buffer) => (received += chunk.length));

  return new Promise<ReceivedUpload>((resolve, reject) => {
    let settled = false;
    const stopRateCheck = enforceMinimumRate(deps, req, () => fail(tooSlow(deps)));
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      stopRateCheck();
      discardRest(req);
      // Busboy is torn down, not merely unpiped: a parser left attached would hold its part streams
      // (and their buffers) until the socket goes, and a part stream it destroys later must find the
      // listener every part gets on arrival. Destroyed on the next turn: a refusal can come from
      // inside busboy's own write, which must finish first.
      setImmediate(() => bb.destroy());
      guard?.destroy(err instanceof Error ? err : new Error(String(err)));
      // Answer only once storage is clean: an aborted upload leaves nothing, a finished one is removed.
      const cleanup = storing
        ? storing.then(
            (s) => deps.storage.remove(s.key).catch(() => undefined),
            () => undefined,
          )
        : Promise.resolve();
      void cleanup.then(() => reject(mediaErrorToApi(err)));
    };

    bb.on('file', (name, stream, info) => {
      // Every part stream is owned from its first tick: an error on it (a cut body, busboy torn
      // down) is the request's, handled by the paths below, never an uncaught 'error' event; a part
      // that is refused or ignored is read away so the parser is never stalled on it.
      stream.on('error', () => undefined);
      if (settled) return void stream.resume();
      if (name !== 'file') {
        stream.resume();
        return fail(invalidRequest(`unexpected file part "${name}": send the file in the part named "file"`));
      }
      if (fileSeen) {
        stream.resume();
        return fail(invalidRequest('only one file may be uploaded per request'));
      }
      fileSeen = true;
      const g = createMediaGuard({ limits: uploadLimits.direct, declaredType: info.mimeType, maxPixels: deps.config.UPLOAD_MAX_IMAGE_PIXELS });
      guard = g;
      pipeline(stream, g, (err) => {
        if (err && !(err instanceof MediaError) && !settled) fail(invalidRequest('the file part ended unexpectedly'));
      });
      // The bytes' hash is part of the upload's Idempotency-Key fingerprint (api/idempotency.ts).
      const hash = createHash('sha256');
      stream.on('data', (chunk: Buffer) => hash.update(chunk));
      fileHash = { name: info.filename ?? '', hash };
      // Everything received so far includes the bytes before the file's data, so this is a floor.
      const atLeast = Number.isSafeInteger(contentLength) ? Math.max(0, contentLength - received - MAX_AFTER_FILE) : 0;
      storing = (async () => {
        const type = await g.detected;
        const key = uploadObjectKey(workspaceId, uploadId, type.ext);
        await deps.storage.putStream(key, g, type.mime, undefined, { atLeast });
        return { key, name: sanitizeFileName(info.filename, type) };
      })();
      storing.catch((err: unknown) => fail(err));
    });

    bb.on('field', (name, value, info) => {
      if (settled) return;
      if (name === 'file') return fail(invalidRequest('the "file" part must be a file (a part with a filename)'));
      if (name === 'expires_in_seconds') {
        if (retention !== undefined) return fail(invalidRequest('expires_in_seconds was sent more than once'));
        const n = /^[0-9]{1,10}$/.test(value.trim()) ? Number(value.trim()) : NaN;
        if (!Number.isSafeInteger(n) || n < 1) return fail(invalidRequest('expires_in_seconds must be a whole number of seconds, at least 1'));
        try {
          retention = retentionSeconds(deps, n);
        } catch (err) {
          return fail(err);
        }
        return;
      }
      if (name !== 'project_id') return fail(invalidRequest(`unexpected field "${name}": the parts are "file", "project_id" and "expires_in_seconds"`));
      if (project !== undefined) return fail(invalidRequest('project_id was sent more than once'));
      const parsed = projectId.safeParse(value.trim());
      if (info.valueTruncated || !parsed.success) return fail(invalidRequest('project_id must be a string of 1 to 128 characters'));
      if (parsed.data.includes('\0')) return fail(invalidRequest('project_id must not contain NUL (\\u0000) characters'));
      project = parsed.data;
      projectCheck = requireProject(deps, workspaceId, project);
      projectCheck.catch((err: unknown) => fail(err));
    });

    const tooMany = () => fail(invalidRequest('too many parts: send exactly one "file" and one "project_id"'));
    bb.on('filesLimit', () => fail(invalidRequest('only one file may be uploaded per request')));
    bb.on('fieldsLimit', tooMany);
    bb.on('partsLimit', tooMany);
    bb.on('error', () => fail(invalidRequest('malformed multipart/form-data body')));
    req.on('aborted', () => fail(invalidRequest('the request was aborted')));

    bb.on('close', () => {
      if (settled) return;
      if (!fileSeen || !storing || !guard) return fail(invalidRequest('missing the "file" part'));
      if (project === undefined || !projectCheck) return fail(invalidRequest('missing the "project_id" part'));
      const g = guard;
      const p = project;
      Promise.all([projectCheck, storing])
        .then(async ([, stored]) => {
          if (settled) return;
          const type = g.type!;
          const inserted = await insertUploadWithinQuota(
            deps.db,
            {
              id: uploadId,
              workspace_id: workspaceId,
              project_id: p,
              name: stored.name,
              object_key: stored.key,
              file_type: type.fileType,
              mime_type: type.mime,
              file_size: g.bytes,
              status: 'completed',
              source_url: null,
              expires_at: new Date(Date.now() + (retention ?? deps.config.UPLOAD_RETENTION_SECONDS) * 1000),
              retention_seconds: retention ?? null,
            },
            quotaBytes(deps),
          );
          if (!('row' in inserted)) {
            await deps.storage.remove(stored.key).catch(() => undefined);
            throw quotaExceeded(deps, inserted.usedBytes, g.bytes);
          }
          const { row } = inserted;
          settled = true;
          stopRateCheck();
          resolve({
            record: uploadRecord(storedUploadOf(row), publicBaseUrl(deps.config)),
            fingerprint: { projectId: p, fileName: fileHash!.name, fileSha256: fileHash!.hash.digest('hex') },
          });
        })
        .catch((err: unknown) => fail(err));
    });

    pipeline(req, bb, () => undefined);
  });
}
