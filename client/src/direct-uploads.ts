// `client.uploads`: direct uploads, whose bytes go straight to storage with a presigned POST and
// never through a gateway (`client.uploadDirect` does all three steps for a Blob).
import type { DirectUpload, DirectUploadCreate, DirectUploadRecord, RequestOptions, SendOptions } from './types.js';

interface Requester {
  request<T>(method: string, path: string, opts?: SendOptions): Promise<T>;
}

export function directUploadsApi(client: Requester) {
  const data = async <T>(method: string, path: string, o?: SendOptions) => (await client.request<{ data: T }>(method, path, o)).data;
  const at = (id: string) => `/v1/uploads/${encodeURIComponent(id)}`;
  return {
    /** POST /v1/uploads: a pending upload and the presigned POST for its bytes. */
    create: (body: DirectUploadCreate, o?: RequestOptions) => data<DirectUpload>('POST', '/v1/uploads', { ...o, body, idempotent: true }),
    /** POST /v1/uploads/{id}/complete: checks the stored bytes; completed (or 400 when refused, failed; 409 before the bytes are sent or once refused). */
    complete: (id: string, o?: RequestOptions) => data<DirectUploadRecord>('POST', `${at(id)}/complete`, o),
    /** GET /v1/uploads/{id}: any upload of the workspace, with its status. */
    get: (id: string, o?: RequestOptions) => data<DirectUploadRecord>('GET', at(id), o),
    /** DELETE /v1/uploads/{id}: any upload of the workspace; its link then answers 410 and jobs refuse it. Idempotent. */
    delete: (id: string, o?: RequestOptions) => data<DirectUploadRecord>('DELETE', at(id), o),
  };
}
