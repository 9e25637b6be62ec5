// Uploads as both processes see them: size limits, object keys, display names, the failure types of
// the remote fetch, and the stored upload record the fetch workflow returns.
import { randomToken } from './ids.js';
import { MB, mediaTypeOf, type AcceptedMime, type MediaKind, type MediaType } from './media/type.js';

/** ApplicationFailure types of the fetch activity; all but FetchUnavailable are final (never retried). */
/** An upload's states: `expired` and `deleted` keep the row (its links answer 410, jobs refuse it). */
export const uploadStatuses = ['pending', 'completed', 'failed', 'expired', 'deleted'] as const;
export type UploadStatus = (typeof uploadStatuses)[number];

export const uploadFailureTypes = {
  urlRefused: 'UrlRefused',
  tooLarge: 'TooLarge',
  unsupportedType: 'UnsupportedType',
  fetchFailed: 'FetchFailed',
  /** Transient (connection refused/reset, connect timeout, 5xx, 429): retried by the workflow's policy. */
  fetchUnavailable: 'FetchUnavailable',
  /** The file does not fit in the workspace's upload quota (WORKSPACE_UPLOAD_QUOTA_MB). */
  quotaExceeded: 'StorageQuotaExceeded',
} as const;

/** The message of a refusal by the workspace's upload quota (the same on every upload path). */
export function quotaExceededMessage(quotaMb: number, usedBytes: number, size: number): string {
  const mb = (n: number) => (n / MB).toFixed(1);
  return `the workspace's uploads hold ${mb(usedBytes)} MB of its ${quotaMb} MB storage quota; this ${mb(size)} MB file does not fit`;
}

/** Size limits per kind: direct multipart uploads, and files fetched from a URL. */
export const uploadLimits = {
  direct: { image: 10 * MB, video: 20 * MB },
  remote: { image: 10 * MB, video: 50 * MB },
} as const satisfies Record<string, Record<MediaKind, number>>;

/** Unguessable object key of an upload: served publicly under /media/, so it must carry randomness. */
export function uploadObjectKey(workspaceId: string, uploadId: string, ext: string): string {
  return `uploads/${workspaceId}/${uploadId}/${randomToken(24)}.${ext}`;
}

/** A safe display name: the base name, no control characters, at most 255 characters. */
export function sanitizeFileName(name: string | undefined, type: MediaType): string {
  const base = (name ?? '').split(/[/\\]/).pop() ?? '';
  const clean = base
    .replace(/[\u0000-\u001f\u007f]/g, '')
    .trim()
    .slice(0, 255);
  return clean === '' || clean === '.' || clean === '..' ? `upload.${type.ext}` : clean;
}

export const INCOMING = 'incoming/';
export const UPLOADS = 'uploads/';

/** Where a direct upload's bytes land before completion: a prefix the media route never serves. */
export function incomingObjectKey(workspaceId: string, uploadId: string, mime: AcceptedMime): string {
  return `${INCOMING}${workspaceId}/${uploadId}/${randomToken(24)}.${mediaTypeOf(mime).ext}`;
}

/** The public key an accepted direct upload is copied to (same unguessable token). */
export function completedObjectKey(incomingKey: string): string {
  if (!incomingKey.startsWith(INCOMING)) throw new Error('not an incoming upload key');
  return UPLOADS + incomingKey.slice(INCOMING.length);
}

/** The incoming key a completed direct upload's public key was copied from. */
export function incomingObjectKeyOf(publicKey: string): string {
  if (!publicKey.startsWith(UPLOADS)) throw new Error('not a public upload key');
  return INCOMING + publicKey.slice(UPLOADS.length);
}

/** The upload id in a public upload key (`uploads/<workspace>/<upload id>/<token>.<ext>`), or null. */
export function uploadIdOfPublicKey(key: string): string | null {
  const parts = key.split('/');
  return parts.length === 4 && parts[0] === 'uploads' && parts[2] ? parts[2] : null;
}

/** The byte limit of a declared type (the same limits as multipart uploads). */
export function directUploadLimit(mime: AcceptedMime): number {
  return uploadLimits.direct[mediaTypeOf(mime).fileType];
}

/** The stored upload as the activity returns it (timestamps in ms); the gateway adds `path`. */
export interface StoredUpload {
  id: string;
  name: string;
  object_key: string;
  workspace_id: string;
  project_id: string;
  file_type: 'image' | 'video';
  mime_type: string;
  file_size: number;
  /** ms since the Unix epoch after which the upload is no longer served nor usable (null: never). */
  expires_at: number | null;
  created_at: number;
  updated_at: number;
}
