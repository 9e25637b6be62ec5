// The upload endpoints: POST /v1/upload (multipart), POST /v1/upload-from-url (JSON), and direct
// uploads (POST /v1/uploads, POST /v1/uploads/{id}/complete, GET and DELETE /v1/uploads/{id}). Each
// parses its request, calls the uploads service (api/uploads/) and answers; how uploads stream,
// are checked, limited and stored is told there.
//
// Decisions: a project that does not exist or belongs to another workspace is 403 `forbidden`
// (both are "outside the workspace"); a size limit crossed is 413 `payload_too_large`; every other
// refusal of the request (missing/duplicate/unknown parts, extra files, wrong Content-Type,
// unsupported or mislabelled file) is 400 `invalid_request`.
import type { Router } from 'express';
import { z } from 'zod';
import type { AppDeps } from '../deps.js';
import { authOf, type Auth } from '../auth.js';
import { Endpoints } from '../endpoint.js';
import { IDEMPOTENCY_NOTE, idempotent, setMultipartFingerprint } from '../idempotency.js';
import { NOT_BLANK_PATTERN, PUBLIC_HTTPS_URL_PATTERN } from '../validate.js';
import { acceptedMimeTypes, MB, mediaTypeOf } from '../../shared/media/type.js';
import { uploadLimits } from '../../shared/uploads.js';
import { discardRest, enforceMinimumRate, limitConcurrentUploads, tooSlow } from '../uploads/limits.js';
import { MAX_AFTER_FILE, receiveMultipartUpload } from '../uploads/multipart.js';
import { uploadFromUrl } from '../uploads/from-url.js';
import { completeUpload, getUpload, removeUpload, startDirectUpload } from '../uploads/direct.js';
import { directUploadRecordSchema, uploadRecordSchema } from '../uploads/records.js';
import { projectId } from '../uploads/rules.js';

const expiresInSeconds = z
  .number()
  .int()
  .min(1)
  .describe(
    'how long the upload is served and usable as a job input, from when it is stored (default UPLOAD_RETENTION_SECONDS, 30 days; at most UPLOAD_MAX_RETENTION_SECONDS, 90 days)',
  );

const multipartSchema = z.object({
  // The part is trimmed before use: the document says it must not be blank.
  project_id: projectId.describe("project in the key's workspace (a part before or after `file`)").meta({ pattern: NOT_BLANK_PATTERN }),
  expires_in_seconds: z
    .string()
    .regex(/^[0-9]{1,10}$/)
    .optional()
    .describe('optional part: ' + expiresInSeconds.description),
  file: z
    .string()
    .describe(
      'the file (binary part): image/jpeg, image/png, image/webp up to 10 MB; video/mp4, video/quicktime, video/webm up to 20 MB; type decided from the bytes',
    ),
});

const uploadFromUrlSchema = z
  .object({
    url: z
      .string()
      .min(1)
      .max(2048)
      .meta({ pattern: PUBLIC_HTTPS_URL_PATTERN })
      .describe('public HTTPS URL (port 443, no credentials) of an image (≤ 10 MB) or video (≤ 50 MB)'),
    project_id: projectId,
    expires_in_seconds: expiresInSeconds.optional(),
  })
  .strict();

const directUploadSchema = z
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

const directUploadCreatedSchema = directUploadRecordSchema.extend({
  upload: presignedPostSchema.describe(
    'a presigned POST whose policy fixes the object key, the Content-Type (= mime_type) and the exact size: send `fields` then the file as `file` (multipart/form-data)',
  ),
});

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
    scope: 'uploads',
    rateClass: 'generate',
    multipart: multipartSchema,
    response: uploadRecordSchema,
    creates: '/v1/uploads/:id',
    errors: [400, 401, 403, 408, 409, 413, 422, 429, 500],
    before: (deps) => [
      limitConcurrentUploads(deps),
      idempotent(deps, {
        body: 'multipart',
        discard: discardRest,
        maxMultipartBytes: uploadLimits.direct.video + MAX_AFTER_FILE,
        watchRate: (req, cut) => enforceMinimumRate(deps, req, cut),
        tooSlow: () => tooSlow(deps),
      }),
    ],
    async handler({ req, res, services: deps }) {
      const { record, fingerprint } = await receiveMultipartUpload(deps, req, authOf(res).workspaceId);
      setMultipartFingerprint(res, fingerprint);
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
      "413 storage_quota_exceeded: the file does not fit in the workspace's upload quota. 503 service_unavailable: the fetch did not finish in time." +
      IDEMPOTENCY_NOTE,
    tags: ['Uploads'],
    scope: 'uploads',
    rateClass: 'generate',
    body: uploadFromUrlSchema,
    response: uploadRecordSchema,
    errors: [400, 401, 403, 409, 413, 422, 429, 500, 503],
    before: (deps) => [idempotent(deps, { body: 'json' })],
    async handler({ res, body, services: deps }) {
      res.status(200).json({ data: await uploadFromUrl(deps, authOf(res).workspaceId, body) });
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
      'Pending uploads never completed are removed after a day.' +
      IDEMPOTENCY_NOTE,
    tags: ['Uploads'],
    scope: 'uploads',
    rateClass: 'generate',
    body: directUploadSchema,
    response: directUploadCreatedSchema,
    creates: '/v1/uploads/:id',
    errors: [400, 401, 403, 409, 413, 422, 429, 500],
    before: (deps) => [idempotent(deps, { body: 'json' })],
    async handler({ res, body, services: deps }) {
      res.status(200).json({ data: await startDirectUpload(deps, authOf(res).workspaceId, body) });
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
    scope: 'uploads',
    rateClass: 'generate',
    response: directUploadRecordSchema,
    errors: [400, 401, 404, 409, 429, 500],
    async handler({ req, res, services: deps }) {
      res.status(200).json({ data: await completeUpload(deps, authOf(res).workspaceId, String(req.params.id)) });
    },
  })
  .add({
    method: 'get',
    path: '/v1/uploads/:id',
    summary: 'Get an upload record with its status',
    description: 'Any upload of the workspace. 404 not_found: no such upload in this workspace.',
    tags: ['Uploads'],
    scope: 'read',
    rateClass: 'poll',
    response: directUploadRecordSchema,
    errors: [401, 404, 429, 500],
    async handler({ req, res, services: deps }) {
      res.status(200).json({ data: await getUpload(deps, authOf(res).workspaceId, String(req.params.id)) });
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
    scope: 'uploads',
    rateClass: 'generate',
    response: directUploadRecordSchema,
    errors: [401, 404, 429, 500],
    async handler({ req, res, services: deps }) {
      res.status(200).json({ data: await removeUpload(deps, authOf(res).workspaceId, String(req.params.id)) });
    },
  });

export function createUploadsRouter(deps: AppDeps, auth: Auth): Router {
  return uploadEndpoints.router(deps, auth);
}
