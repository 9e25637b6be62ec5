// Uploads as a client sends them, for tests: multipart through the gateway, and a direct upload
// (create, the presigned POST to storage, complete). The storage endpoint must be on loopback.
import assert from 'node:assert/strict';
import { api } from './services.js';

export interface UploadAnswer {
  status: number;
  body: any;
  text: string;
}

/** POST /v1/upload with `file` and `project_id` (plus any extra fields, e.g. expires_in_seconds). */
export async function multipartUpload(
  baseUrl: string,
  apiKey: string,
  projectId: string,
  file: { name: string; mime: string; bytes: Buffer },
  extra: Record<string, string> = {},
): Promise<UploadAnswer> {
  const form = new FormData();
  form.append('project_id', projectId);
  for (const [k, v] of Object.entries(extra)) form.append(k, v);
  form.append('file', new Blob([file.bytes], { type: file.mime }), file.name);
  const res = await fetch(`${baseUrl}/v1/upload`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}` }, body: form });
  const text = await res.text();
  let body: any = null;
  try {
    body = JSON.parse(text);
  } catch {
    body = null;
  }
  return { status: res.status, body, text };
}

/** A completed direct upload: create (with any extra body fields), send the bytes to storage, complete; answers the completed record. */
export async function completedDirectUpload(
  baseUrl: string,
  apiKey: string,
  projectId: string,
  file: { name: string; mime: string; bytes: Buffer },
  extra: Record<string, unknown> = {},
): Promise<any> {
  const c = api(baseUrl, apiKey);
  const created = await c.post('/v1/uploads', { project_id: projectId, name: file.name, mime_type: file.mime, size: file.bytes.length, ...extra });
  assert.equal(created.status, 200, created.text);
  const { url, fields } = created.body.data.upload as { url: string; fields: Record<string, string> };
  assert.match(new URL(url).hostname, /^(127\.\d+\.\d+\.\d+|localhost|\[::1\])$/, 'the test stack stores on loopback only');
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  form.append('file', new Blob([file.bytes], { type: file.mime }), file.name);
  const sent = await fetch(url, { method: 'POST', body: form });
  assert.equal(sent.status, 204, await sent.text());
  const done = await c.post(`/v1/uploads/${created.body.data.id}/complete`);
  assert.equal(done.status, 200, done.text);
  return done.body.data;
}

/** The access token of an upload: the random last segment of its media path, without the extension. */
export function uploadTokenOf(path: string): string {
  const last = new URL(path).pathname.split('/').pop()!;
  return last.replace(/\.[a-z0-9]+$/i, '');
}
