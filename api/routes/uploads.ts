// POST /v1/upload (multipart) and POST /v1/upload-from-url (JSON).
//
// Multipart: the `file` part streams straight into object storage under its final, unguessable key
// while busboy parses; `project_id` may come before or after the file. When it comes first, the
// project is checked at once and a foreign project cuts the upload before storing; when it comes
// after, the stored object is removed if the check fails. The type is decided from the magic bytes
// (a declared part Content-Type that disagrees is refused); limits (20 MB, 10 MB for images) are
// enforced while streaming. Any refusal answers at once, stops reading into storage, aborts the
// storage upload and removes what was stored before answering: no object and no row remain. The
// row (status `completed`) is written only after the object is complete.
//
// Direct uploads (POST /v1/uploads, POST /v1/uploads/{id}/complete, GET /v1/uploads/{id}): the
// bytes go from the client straight to storage with a presigned POST; completion inspects them with
// the same rules (api/direct-uploads.ts). Records of these endpoints carry `status`.
//
// Decisions: a project that does not exist or belongs to another workspace is 403 `forbidden`
// (both are "outside the workspace"); a size limit crossed is 413 `payload_too_large`; every other
// refusal of the request (missing/duplicate/unknown parts, extra files, wrong Content-Type,
// unsupported or mislabelled file) is 400 `invalid_request`.
import { Router, type Request, type RequestHandler, type Response } from 'express';
import busboy from 'busboy';
import { pipeline } from 'node:stream';
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure, TemporalFailure } from '@temporalio/common';
import type { AppDeps } from '../deps.js';
import { authOf, type Auth } from '../auth.js';
import { Endpoints } from '../endpoint.js';
import { IDEMPOTENCY_NOTE, idempotent, setMultipartFingerprint } from '../idempotency.js';
import { ApiError, forbidden, invalidRequest } from '../errors.js';
import { NOT_BLANK_PATTERN, PUBLIC_HTTPS_URL_PATTERN } from '../validate.js';
import { mediaUrl, publicBaseUrl } from './media.js';
import { newId } from '../../shared/ids.js';
import { findUploadInWorkspace, insertUploadWithinQuota, projectBelongsToWorkspace, storedUploadOf, uploadUnavailable } from '../../db/repos/uploads.js';
import { acceptedMimeTypes, createMediaGuard, MB, MediaError, mediaTypeOf, type MediaGuard } from '../../shared/media-type.js';
import { StreamEndedEarly } from '../../shared/storage.js';
import { completedObjectKey, directUploadLimit, incomingObjectKey, quotaExceededMessage, sanitizeFileName, uploadFailureTypes, uploadLimits, uploadObjectKey, uploadStatuses } from '../../shared/uploads.js';
import { FetchError, precheckUrl } from '../../shared/fetch-remote.js';
import { completeDirectUpload, DirectUploadRefused } from '../direct-uploads.js';
import { deleteUpload } from '../../db/upload-lifecycle.js';
import type { FileUpload } from '../../db/schema.js';
import { taskQueues } from '../../workflows/definitions.js';
import type { StoredUpload, UploadFromUrlInput } from '../../workflows/upload-from-url.js';

const projectId = z.string().min(1).max(128);

const expiresInSeconds = z
  .number()
  .int()
  .min(1)
  .describe('how long the upload is served and usable as a job input, from when it is stored (default UPLOAD_RETENTION_SECONDS, 30 days; at most UPLOAD_MAX_RETENTION_SECONDS, 90 days)');

/** The upload's lifetime in seconds: the requested one within the configured maximum, or the default. */
function retentionSeconds(deps: AppDeps, requested: number | undefined): number {
  if (requested === undefined) return deps.config.UPLOAD_RETENTION_SECONDS;
  if (requested > deps.config.UPLOAD_MAX_RETENTION_SECONDS) throw invalidRequest(`expires_in_seconds: at most ${deps.config.UPLOAD_MAX_RETENTION_SECONDS} seconds`);
  return requested;
}

export const uploadRecordSchema = z.object({
  id: z.string(),
  name: z.string(),
  path: z.url().describe('where the stored file is served (GET /media/...)'),
  workspace_id: z.string(),
  project_id: z.string(),
  file_type: z.enum(['image', 'video']),
  mime_type: z.enum(['image/jpeg', 'image/png', 'image/webp', 'video/mp4', 'video/quicktime', 'video/webm']),
  file_size: z.number().int().describe('exact size in bytes'),
  expires_at: z
    .number()
    .int()
    .nullable()
    .describe('ms since the Unix epoch: from then on `path` answers 410 gone and a job naming the upload answers 400 upload_unavailable (pending direct uploads: when an upload never completed is removed)'),
  created_at: z.number().int().describe('ms since the Unix epoch'),
  updated_at: z.number().int().describe('ms since the Unix epoch'),
});
export type UploadRecord = z.infer<typeof uploadRecordSchema>;

const multipartSchema = z.object({
  // The part is trimmed before use: the document says it must not be blank.
  project_id: projectId.describe('project in the key\'s workspace (a part before or after `file`)').meta({ pattern: NOT_BLANK_PATTERN }),
  expires_in_seconds: z.string().regex(/^[0-9]{1,10}$/).optional().describe('optional part: ' + expiresInSeconds.description),
  file: z.string().describe('the file (binary part): image/jpeg, image/png, image/webp up to 10 MB; video/mp4, video/quicktime, video/webm up to 20 MB; type decided from the bytes'),
});

export const uploadFromUrlSchema = z
  .object({
    url: z.string().min(1).max(2048).meta({ pattern: PUBLIC_HTTPS_URL_PATTERN }).describe('public HTTPS URL (port 443, no credentials) of an image (≤ 10 MB) or video (≤ 50 MB)'),
    project_id: projectId,
    expires_in_seconds: expiresInSeconds.optional(),
  })
  .strict();

export const uploadStatusSchema = z.enum(uploadStatuses);

export const directUploadRecordSchema = uploadRecordSchema.extend({
  status: uploadStatusSchema.describe(
    'pending until completed; failed when the stored bytes were refused (the object is deleted); expired once past `expires_at`; deleted by DELETE /v1/uploads/{id}',
  ),
});
export type DirectUploadRecord = z.infer<typeof directUploadRecordSchema>;

export const directUploadSchema = z
  .object({
    project_id: projectId,
    name: z.string().min(1).max(255).describe('display name of the file'),
    mime_type: z.enum(acceptedMimeTypes).describe('the type the bytes must have (checked from the bytes at completion)'),
    size: z
      .number()
      .int()
      .min(1)
      .max(20 * MB)
      .describe('exact size in bytes: images up to 10 MB, videos up to 20 MB (storage refuses any other size)'),
    expires_in_seconds: expiresInSeconds.optional().describe('counted from completion; ' + expiresInSeconds.description),
  })
  .strict()
  // The size limit of each type, for the document (the route checks it with directUploadLimit).
  .meta({
    oneOf: (['image', 'video'] as const).map((fileType) => ({
      properties: {
        mime_type: { enum: acceptedMimeTypes.filter((m) => mediaTypeOf(m).fileType === fileType) },
        size: { maximum: uploadLimits.direct[fileType] },
      },
    })),
  });

const presignedPostSchema = z.object({
  method: z.literal('POST'),
  url: z.url().describe('the storage endpoint to POST the form to'),
  fields: z.record(z.string(), z.string()).describe('form fields to send, in this order, before the file field `file`'),
  expires_at: z.number().int().describe('ms since the Unix epoch; the policy is refused afterwards'),
});

export const directUploadCreatedSchema = directUploadRecordSchema.extend({
  upload: presignedPostSchema.describe(
    'a presigned POST whose policy fixes the object key, the Content-Type (= mime_type) and the exact size: send `fields` then the file as `file` (multipart/form-data)',
  ),
});



export function uploadRecord(stored: StoredUpload, base: string): UploadRecord {
  const { object_key, ...rest } = stored;
  return { ...rest, path: mediaUrl(base, object_key), mime_type: rest.mime_type as UploadRecord['mime_type'] };
}

/** The record of any upload row with its status; a pending one's `path` is where it will be served once completed. */
function directUploadRecord(row: FileUpload, base: string): DirectUploadRecord {
  const stored = storedUploadOf(row);
  if (row.status !== 'completed' && row.object_key.startsWith('incoming/')) stored.object_key = completedObjectKey(row.object_key);
  // Past its expiry an upload is expired already, before the sweep marks it.
  return { ...uploadRecord(stored, base), status: uploadUnavailable(row) === 'expired' ? 'expired' : row.status };
}

async function requireProject(deps: AppDeps, workspaceId: string, id: string): Promise<void> {
  if (!(await projectBelongsToWorkspace(deps.db, workspaceId, id))) {
    throw forbidden(`project ${id} does not exist in this workspace`);
  }
}

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

/**
 * Stops reading the request into anything: the rest of the body is discarded so the client can
 * read the answer (an abrupt close while it still sends would often lose the answer to a reset),
 * but only for a bounded time and size; then the connection is cut.
 */
export function discardRest(req: Request): void {
  req.unpipe();
  // Already read to the end: nothing to discard, and no timer may outlive the request (the socket
  // goes on to carry the connection's next request, which the cut would kill).
  if (req.readableEnded || req.destroyed) return;
  let extra = 0;
  const cut = () => req.socket.destroy();
  const timer = setTimeout(cut, 5_000).unref();
  req.on('data', (chunk: Buffer) => {
    extra += chunk.length;
    if (extra > 64 * 1024 * 1024) cut();
  });
  req.on('end', () => clearTimeout(timer));
  req.on('close', () => clearTimeout(timer));
  req.resume();
}

/**
 * Multipart bytes after the file part that a request may carry (closing boundary, a late
 * `project_id`). Bounding them lets storage stream most of a file straight through: the file is at
 * least Content-Length minus what came before it minus this.
 */
const MAX_AFTER_FILE = 64 * 1024;

async function handleMultipart(deps: AppDeps, req: Request, res: Response): Promise<UploadRecord> {
  const { workspaceId } = authOf(res);
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

  return new Promise<UploadRecord>((resolve, reject) => {
    let settled = false;
    const stopRateCheck = enforceMinimumRate(deps, req, () => fail(tooSlow(deps)));
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      stopRateCheck();
      discardRest(req);
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
      if (settled) return void stream.resume();
      if (name !== 'file') return fail(invalidRequest(`unexpected file part "${name}": send the file in the part named "file"`));
      if (fileSeen) return fail(invalidRequest('only one file may be uploaded per request'));
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
          setMultipartFingerprint(res, { projectId: p, fileName: fileHash!.name, fileSha256: fileHash!.hash.digest('hex') });
          resolve(uploadRecord(storedUploadOf(row), publicBaseUrl(deps.config)));
        })
        .catch((err: unknown) => fail(err));
    });

    pipeline(req, bb, () => undefined);
  });
}

/**
 * Cuts an upload that receives fewer than UPLOAD_MIN_BYTES_PER_SEC on average over a window of
 * UPLOAD_RATE_WINDOW_MS (a trickling client would hold a socket, a storage upload and a slot of its
 * key's concurrency for as long as it likes). Returns the function that stops the check.
 */
function enforceMinimumRate(deps: AppDeps, req: Request, tooSlow: () => void): () => void {
  const { UPLOAD_MIN_BYTES_PER_SEC: perSecond, UPLOAD_RATE_WINDOW_MS: windowMs } = deps.config;
  if (perSecond === 0 || req.readableEnded) return () => undefined;
  let inWindow = 0;
  const count = (chunk: Buffer) => (inWindow += chunk.length);
  const timer = setInterval(() => {
    if (inWindow < (perSecond * windowMs) / 1000) tooSlow();
    inWindow = 0;
  }, windowMs);
  timer.unref();
  // Once the body has arrived, what is left (storage, the database) is the gateway's own time.
  const stop = () => {
    clearInterval(timer);
    req.off('data', count);
  };
  req.on('data', count);
  req.once('end', stop);
  req.once('close', stop);
  return stop;
}

function tooSlow(deps: AppDeps): ApiError {
  const { UPLOAD_MIN_BYTES_PER_SEC: perSecond, UPLOAD_RATE_WINDOW_MS: windowMs } = deps.config;
  return new ApiError(408, 'request_timeout', `the upload was cut: it arrived slower than the minimum of ${perSecond} bytes/s over ${windowMs / 1000} s; nothing was stored`);
}

/**
 * At most UPLOAD_MAX_CONCURRENT_PER_KEY multipart uploads of one API key at once on this gateway:
 * each holds a socket and a storage upload for as long as it streams. A slot is freed when its
 * answer is sent or its connection closes.
 */
function limitConcurrentUploads(deps: AppDeps): RequestHandler {
  const max = deps.config.UPLOAD_MAX_CONCURRENT_PER_KEY;
  const running = new Map<string, number>();
  return (req, res, next) => {
    const { apiKeyId } = authOf(res);
    const count = running.get(apiKeyId) ?? 0;
    if (count >= max) {
      discardRest(req);
      res.setHeader('Retry-After', String(Math.ceil(UPLOAD_SLOT_RETRY_MS / 1000)));
      next(new ApiError(429, 'rate_limited', `at most ${max} uploads of one API key may run at once; retry when one has finished`, { retry_after_ms: UPLOAD_SLOT_RETRY_MS }));
      return;
    }
    running.set(apiKeyId, count + 1);
    res.once('close', () => {
      const left = (running.get(apiKeyId) ?? 1) - 1;
      if (left <= 0) running.delete(apiKeyId);
      else running.set(apiKeyId, left);
    });
    next();
  };
}

/** What a client refused an upload slot is told to wait: about the time a small upload takes. */
const UPLOAD_SLOT_RETRY_MS = 1_000;

const quotaBytes = (deps: AppDeps) => deps.config.WORKSPACE_UPLOAD_QUOTA_MB * MB;

function quotaExceeded(deps: AppDeps, usedBytes: number, size: number): ApiError {
  return new ApiError(413, 'storage_quota_exceeded', quotaExceededMessage(deps.config.WORKSPACE_UPLOAD_QUOTA_MB, usedBytes, size));
}

function findApplicationFailure(err: unknown): ApplicationFailure | undefined {
  let cur: unknown = err;
  while (cur instanceof Error) {
    if (cur instanceof ApplicationFailure && cur.type) return cur;
    cur = cur instanceof TemporalFailure || cur instanceof WorkflowFailedError ? cur.cause : undefined;
  }
  return undefined;
}

const refusalTypes = new Set<string>(Object.values(uploadFailureTypes));

async function runUploadFromUrl(deps: AppDeps, temporal: Client, input: UploadFromUrlInput): Promise<StoredUpload> {
  const handle = await temporal.workflow
    .start('uploadFromUrl', {
      taskQueue: taskQueues(deps.config.TASK_QUEUE_PREFIX).workflows,
      workflowId: input.uploadId,
      args: [input],
      workflowExecutionTimeout: deps.config.UPLOAD_FROM_URL_TIMEOUT_MS,
    })
    .catch(() => {
      throw new ApiError(503, 'service_unavailable', 'the upload service is temporarily unavailable; try again later');
    });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ApiError(503, 'service_unavailable', 'fetching the URL did not finish in time; try again later')), deps.config.UPLOAD_FROM_URL_TIMEOUT_MS);
  });
  try {
    // The deadline bounds the long poll itself; the timer turns it into a clean 503.
    const result = temporal.withDeadline(Date.now() + deps.config.UPLOAD_FROM_URL_TIMEOUT_MS + 1_000, () => handle.result());
    return (await Promise.race([result, timeout])) as StoredUpload;
  } catch (err) {
    if (err instanceof ApiError) {
      await handle.terminate('the gateway stopped waiting').catch(() => undefined);
      throw err;
    }
    const failure = findApplicationFailure(err);
    if (failure?.type === uploadFailureTypes.quotaExceeded) throw new ApiError(413, 'storage_quota_exceeded', failure.message);
    if (failure?.type && refusalTypes.has(failure.type)) throw invalidRequest(failure.message);
    if (err instanceof WorkflowFailedError && /timed out|timeout/i.test(String(err.cause?.message ?? ''))) {
      throw new ApiError(503, 'service_unavailable', 'fetching the URL did not finish in time; try again later');
    }
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/** The upload endpoints, each declared once (routing, validation and the OpenAPI document). */
export const uploadEndpoints = new Endpoints<AppDeps>()
  .add({
    method: 'post',
    path: '/v1/upload',
    summary: 'Upload an image or video',
    description:
      'Multipart parts `file` and `project_id`. 400 invalid_request: missing, duplicate or unknown parts, more than one file, ' +
      'not multipart/form-data, unsupported type, or a declared part type that disagrees with the bytes. 403 forbidden: project missing or outside the workspace. ' +
      '413 payload_too_large: over 20 MB, or over 10 MB for an image (checked while streaming; nothing is stored). ' +
      "413 storage_quota_exceeded: the file does not fit in the workspace's upload quota (nothing is stored). " +
      '408 request_timeout: the body arrived slower than the minimum transfer rate (nothing is stored). 429 rate_limited: too many uploads of this key at once.' +
      IDEMPOTENCY_NOTE,
    tags: ['Uploads'],
    rateClass: 'generate',
    multipart: multipartSchema,
    response: uploadRecordSchema,
    creates: '/v1/uploads/:id',
    errors: [400, 401, 403, 408, 409, 413, 422, 429, 500],
    before: (deps) => [limitConcurrentUploads(deps), idempotent(deps, { body: 'multipart', discard: discardRest, maxMultipartBytes: uploadLimits.direct.video + 64 * 1024 })],
    async handler({ req, res, services: deps }) {
      const record = await handleMultipart(deps, req, res);
      res.status(200).json({ data: record });
    },
  })
  .add({
    method: 'post',
    path: '/v1/upload-from-url',
    summary: 'Fetch a public HTTPS image or video URL and store it',
    description:
      '400 invalid_request names why a URL was refused (non-public address, not https, ' +
      'too many redirects, too large, unsupported type, fetch failure). 403 forbidden: project missing or outside the workspace. ' +
      "413 storage_quota_exceeded: the file does not fit in the workspace's upload quota. 503 service_unavailable: the fetch did not finish in time." + IDEMPOTENCY_NOTE,
    tags: ['Uploads'],
    rateClass: 'generate',
    body: uploadFromUrlSchema,
    response: uploadRecordSchema,
    errors: [400, 401, 403, 409, 413, 422, 429, 500, 503],
    before: (deps) => [idempotent(deps, { body: 'json' })],
    async handler({ res, body, services: deps }) {
      const { workspaceId } = authOf(res);
      const retention = retentionSeconds(deps, body.expires_in_seconds);
      try {
        precheckUrl(body.url, deps.config.FETCH_ALLOW_LOOPBACK_ORIGIN);
      } catch (err) {
        if (err instanceof FetchError) throw invalidRequest(`URL refused: ${err.message}`);
        throw err;
      }
      await requireProject(deps, workspaceId, body.project_id);
      const stored = await runUploadFromUrl(deps, deps.temporal, {
        uploadId: newId('upl'),
        workspaceId,
        projectId: body.project_id,
        url: body.url,
        retentionSeconds: retention,
        attemptTimeoutMs: deps.config.FETCH_TOTAL_TIMEOUT_MS + 5_000,
        taskQueuePrefix: deps.config.TASK_QUEUE_PREFIX,
      });
      res.status(200).json({ data: uploadRecord(stored, publicBaseUrl(deps.config)) });
    },
  })
  .add({
    method: 'post',
    path: '/v1/uploads',
    summary: 'Start a direct upload',
    description:
      'Answers a pending upload record and a presigned POST that sends the bytes straight to storage, then call ' +
      'POST /v1/uploads/{id}/complete. 400 invalid_request: bad body, or a size over the limit of the type. 403 forbidden: project missing or outside the workspace. ' +
      "413 storage_quota_exceeded: the declared size does not fit in the workspace's upload quota. " +
      'Pending uploads never completed are removed after a day.' + IDEMPOTENCY_NOTE,
    tags: ['Uploads'],
    rateClass: 'generate',
    body: directUploadSchema,
    response: directUploadCreatedSchema,
    creates: '/v1/uploads/:id',
    errors: [400, 401, 403, 409, 413, 422, 429, 500],
    before: (deps) => [idempotent(deps, { body: 'json' })],
    async handler({ res, body, services: deps }) {
      const { workspaceId } = authOf(res);
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
      res.status(200).json({
        data: { ...directUploadRecord(row, publicBaseUrl(deps.config)), upload: { method: 'POST', url: post.url, fields: post.fields, expires_at: post.expiresAt.getTime() } },
      });
    },
  })
  .add({
    method: 'post',
    path: '/v1/uploads/:id/complete',
    summary: 'Complete a direct upload once its bytes are in storage',
    description:
      'Checks the size and the type from the bytes (same rules and limits as POST /v1/upload, image pixel cap included). ' +
      'Answers the completed record (again on a repeated call); the upload is then usable as a job input. 400 invalid_request: the bytes were refused ' +
      '(the object is deleted and the upload is failed). 409 not_ready (status pending): nothing stored yet, the upload stays pending. 409 upload_refused (status failed, expired or deleted): ' +
      'the upload was already refused, expired or deleted, or its file was replaced in storage while it was checked. 404 not_found: no such upload in this workspace.',
    tags: ['Uploads'],
    rateClass: 'generate',
    response: directUploadRecordSchema,
    errors: [400, 401, 404, 409, 429, 500],
    async handler({ req, res, services: deps }) {
      const { workspaceId } = authOf(res);
      const id = String(req.params.id);
      const row = await findUploadInWorkspace(deps.db, workspaceId, id);
      if (!row) throw new ApiError(404, 'not_found', `file upload ${id} not found`);
      try {
        const done = await completeDirectUpload(deps, row);
        res.status(200).json({ data: directUploadRecord(done, publicBaseUrl(deps.config)) });
      } catch (err) {
        if (err instanceof DirectUploadRefused) {
          if (err.reason === 'bytes') throw invalidRequest(err.message);
          // A well-formed request the upload's state does not allow: a conflict, with the status.
          throw new ApiError(409, err.status === 'pending' ? 'not_ready' : 'upload_refused', err.message, { status: err.status });
        }
        throw err;
      }
    },
  })
  .add({
    method: 'get',
    path: '/v1/uploads/:id',
    summary: 'Get an upload record with its status',
    description: 'Any upload of the workspace. 404 not_found: no such upload in this workspace.',
    tags: ['Uploads'],
    rateClass: 'poll',
    response: directUploadRecordSchema,
    errors: [401, 404, 429, 500],
    async handler({ req, res, services: deps }) {
      const { workspaceId } = authOf(res);
      const id = String(req.params.id);
      const row = await findUploadInWorkspace(deps.db, workspaceId, id);
      if (!row) throw new ApiError(404, 'not_found', `file upload ${id} not found`);
      res.status(200).json({ data: directUploadRecord(row, publicBaseUrl(deps.config)) });
    },
  })
  .add({
    method: 'delete',
    path: '/v1/uploads/:id',
    summary: 'Delete an upload',
    description:
      'Any upload of the workspace, whatever its status: from then on its `path` answers 410 gone and a job naming it answers 400 upload_unavailable; ' +
      'its file is removed from storage (kept until they end for jobs already in flight that read it). Answers the record with status `deleted`; ' +
      'deleting again answers the same. 404 not_found: no such upload in this workspace.',
    tags: ['Uploads'],
    rateClass: 'generate',
    response: directUploadRecordSchema,
    errors: [401, 404, 429, 500],
    async handler({ req, res, services: deps }) {
      const { workspaceId } = authOf(res);
      const id = String(req.params.id);
      const row = await deleteUpload(deps, workspaceId, id);
      if (!row) throw new ApiError(404, 'not_found', `file upload ${id} not found`);
      res.status(200).json({ data: directUploadRecord(row, publicBaseUrl(deps.config)) });
    },
  });

export function createUploadsRouter(deps: AppDeps, auth: Auth): Router {
  return uploadEndpoints.router(deps, auth);
}
