// What every upload endpoint answers: the upload record, and with its status for the endpoints of
// direct uploads. The schemas are the document's; the functions build a record from a stored row.
import { z } from 'zod';
import { mediaUrl } from '../routes/media.js';
import { storedUploadOf, uploadUnavailable } from '../../db/repos/uploads.js';
import { completedObjectKey, uploadStatuses } from '../../shared/uploads.js';
import type { FileUpload } from '../../db/schema.js';
import type { StoredUpload } from '../../workflows/upload-from-url.js';

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
    .describe(
      'ms since the Unix epoch: from then on `path` answers 410 gone and a job naming the upload answers 400 upload_unavailable (pending direct uploads: when an upload never completed is removed)',
    ),
  created_at: z.number().int().describe('ms since the Unix epoch'),
  updated_at: z.number().int().describe('ms since the Unix epoch'),
});
export type UploadRecord = z.infer<typeof uploadRecordSchema>;

const uploadStatusSchema = z.enum(uploadStatuses);

export const directUploadRecordSchema = uploadRecordSchema.extend({
  status: uploadStatusSchema.describe(
    'pending until completed; failed when the stored bytes were refused (the object is deleted); expired once past `expires_at`; deleted by DELETE /v1/uploads/{id}',
  ),
});
export type DirectUploadRecord = z.infer<typeof directUploadRecordSchema>;

export function uploadRecord(stored: StoredUpload, base: string): UploadRecord {
  const { object_key, ...rest } = stored;
  return { ...rest, path: mediaUrl(base, object_key), mime_type: rest.mime_type as UploadRecord['mime_type'] };
}

/** The record of any upload row with its status; a pending one's `path` is where it will be served once completed. */
export function directUploadRecord(row: FileUpload, base: string): DirectUploadRecord {
  const stored = storedUploadOf(row);
  if (row.status !== 'completed' && row.object_key.startsWith('incoming/')) stored.object_key = completedObjectKey(row.object_key);
  // Past its expiry an upload is expired already, before the sweep marks it.
  return { ...uploadRecord(stored, base), status: uploadUnavailable(row) === 'expired' ? 'expired' : row.status };
}
