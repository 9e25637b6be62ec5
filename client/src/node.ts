// Node-only helpers (file paths, streams, downloads): import from `@mediagen/client/node`.
import { openAsBlob } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import { createWriteStream } from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FileUpload, MediaGenClient, RequestOptions, UploadMimeType } from './client.js';
import { MediaGenError } from './errors.js';

/**
 * Uploads a file path, a Node or web readable stream, or a Blob: POST /v1/upload (multipart, through
 * the gateway), or with `direct: true` a direct upload (the bytes go straight to storage with a
 * presigned POST, then POST /v1/uploads/{id}/complete). A path is sent straight from disk
 * (fs.openAsBlob reads it as the request goes out); a stream is collected first (uploads are capped
 * at 20 MB) so a 429 can be retried with the same bytes.
 */
export async function uploadFile(
  client: MediaGenClient,
  input: string | Blob | NodeJS.ReadableStream | ReadableStream<Uint8Array>,
  opts: RequestOptions & { projectId: string; filename?: string; direct?: boolean; mimeType?: UploadMimeType },
): Promise<FileUpload> {
  let blob: Blob;
  let filename = opts.filename;
  if (typeof input === 'string') {
    try {
      if (!(await stat(input)).isFile()) throw Object.assign(new Error('not a file'), { code: 'EISDIR' });
      blob = await openAsBlob(input);
    } catch (cause) {
      const code = (cause as NodeJS.ErrnoException).code;
      throw new MediaGenError({
        status: 0,
        code: code === 'ENOENT' ? 'file_not_found' : 'file_unreadable',
        message: `cannot read ${input}: ${(cause as Error).message}`,
        cause,
      });
    }
    filename ??= basename(input);
  } else if (input instanceof Blob) {
    blob = input;
  } else {
    const readable =
      input instanceof ReadableStream ? Readable.fromWeb(input as import('node:stream/web').ReadableStream<Uint8Array>) : (input as NodeJS.ReadableStream);
    const chunks: Uint8Array<ArrayBuffer>[] = [];
    for await (const chunk of readable) chunks.push(typeof chunk === 'string' ? new TextEncoder().encode(chunk) : new Uint8Array(chunk as Uint8Array));
    blob = new Blob(chunks);
  }
  const o = { ...opts, ...(filename === undefined ? {} : { filename }) };
  return opts.direct ? client.uploadDirect(blob, o) : client.uploadFile(blob, o);
}

/**
 * Downloads each URL to disk. `out` is a directory (existing, or ending in /): files are named
 * `<id>-<n><ext>`; otherwise it is the file for a single output, and `name-2.png`, … for more.
 * Returns the paths written.
 */
export async function downloadOutputs(urls: string[], out: string, opts: { id: string; signal?: AbortSignal; fetch?: typeof fetch }): Promise<string[]> {
  const isDir =
    out.endsWith('/') ||
    (await stat(out).then(
      (s) => s.isDirectory(),
      () => false,
    ));
  const written: string[] = [];
  for (const [i, url] of urls.entries()) {
    const res = await (opts.fetch ?? fetch)(url, { signal: opts.signal ?? null });
    if (!res.ok || !res.body)
      throw new MediaGenError({ status: res.status, code: 'download_failed', message: `downloading output ${i + 1} failed: HTTP ${res.status}` });
    const ext = extname(new URL(url).pathname) || extFor(res.headers.get('content-type'));
    let path: string;
    if (isDir) path = join(out, `${opts.id}-${i + 1}${ext}`);
    else if (i === 0) path = out;
    else path = out.slice(0, out.length - extname(out).length) + `-${i + 1}` + (extname(out) || ext);
    await mkdir(dirname(path), { recursive: true });
    await pipeline(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream<Uint8Array>), createWriteStream(path));
    written.push(path);
  }
  return written;
}

function extFor(contentType: string | null): string {
  const map: Record<string, string> = {
    'image/png': '.png',
    'image/jpeg': '.jpg',
    'image/webp': '.webp',
    'video/mp4': '.mp4',
    'video/webm': '.webm',
    'video/quicktime': '.mov',
  };
  return map[(contentType ?? '').split(';')[0]!.trim()] ?? '';
}
