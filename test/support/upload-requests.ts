// Multipart uploads written by hand over a raw HTTP request, so a test controls when and how fast
// the bytes go (held open, trickled), and what an upload left behind in storage and the database.
import assert from 'node:assert/strict';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import type { Config } from '../../shared/config.js';
import type { Database } from '../../db/index.js';
import { rawMinioClient } from './stack.js';

export interface OpenUpload {
  /** Sends more of the file (nothing once the request was answered or closed). */
  write(bytes: Buffer): void;
  /** Sends the rest of the file and the closing boundary. */
  finish(rest: Buffer): void;
  /** The answer (status and parsed body), whenever the gateway sends it. */
  answer: Promise<{ status: number; body: any; headers: http.IncomingHttpHeaders }>;
  destroy(): void;
}

/**
 * POST /v1/upload with `project_id` first, then the file part's headers; the file's bytes are
 * sent by the caller. Loopback gateways only.
 */
export function openUpload(baseUrl: string, key: string, projectId: string, opts: { fileName: string; mime: string }): OpenUpload {
  const url = new URL('/v1/upload', baseUrl);
  assert.equal(url.hostname, '127.0.0.1', 'test traffic stays on loopback');
  const boundary = `----upload-${randomBytes(8).toString('hex')}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="project_id"\r\n\r\n${projectId}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${opts.fileName}"\r\nContent-Type: ${opts.mime}\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const req = http.request(url, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}` } });
  let done = false;
  const answer = new Promise<{ status: number; body: any; headers: http.IncomingHttpHeaders }>((resolve, reject) => {
    req.on('response', (res) => {
      done = true;
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => (text += d));
      res.on('end', () => {
        let body: any = null;
        try {
          body = JSON.parse(text);
        } catch {
          body = text;
        }
        resolve({ status: res.statusCode ?? 0, body, headers: res.headers });
      });
      res.on('error', reject);
    });
    req.on('error', (err) => (done ? undefined : reject(err)));
  });
  req.write(head);
  return {
    write(bytes) {
      if (!done && !req.destroyed) req.write(bytes);
    },
    finish(rest) {
      if (done || req.destroyed) return;
      req.end(Buffer.concat([rest, tail]));
    },
    answer,
    destroy: () => req.destroy(),
  };
}

/** A workspace's upload objects, incomplete storage uploads and upload rows. */
export async function storedUploadsOf(config: Config, db: Database, workspaceId: string): Promise<{ objects: string[]; incomplete: string[]; rows: number }> {
  const minio = rawMinioClient(config);
  const prefix = `uploads/${workspaceId}/`;
  const objects: string[] = [];
  for await (const o of minio.listObjectsV2(config.S3_BUCKET, prefix, true)) objects.push((o as { name: string }).name);
  const incomplete: string[] = [];
  for await (const u of minio.listIncompleteUploads(config.S3_BUCKET, prefix, true)) incomplete.push((u as { key: string }).key);
  const rows = await db.selectFrom('file_uploads').select('id').where('workspace_id', '=', workspaceId).execute();
  return { objects, incomplete, rows: rows.length };
}
