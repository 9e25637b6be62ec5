// Object storage over any S3-compatible server through the `minio` client. Media bytes stream
// through here; they never travel inside a Temporal payload.
import { Client, CopyDestinationOptions, CopySourceOptions } from 'minio';
import { applyLifecycleRules, type LifecycleResult } from './retention.js';
import { createHash, createHmac } from 'node:crypto';
import { once } from 'node:events';
import { PassThrough, Readable } from 'node:stream';
import type { Config } from './config.js';
import { SpanKind, withSpan } from './tracing.js';
import { redactPath } from './redact.js';
import { awsCredentialProvider, type AwsChainEnv, type CredentialProvider } from './aws-credentials.js';

interface StoredObject {
  key: string;
  size: number;
  contentType: string;
  /** The store's entity tag of the object's content (stat only): equal tags, equal bytes. */
  etag?: string;
}

export interface Storage {
  readonly bucket: string;
  /**
   * Stores a Buffer or a stream. For a stream, `opts.atLeast` is a size the stream is known to reach
   * (e.g. from a request's Content-Length): that much is streamed straight through in parts without
   * being held in memory; a stream that ends sooner fails with StreamEndedEarly.
   */
  putStream(key: string, body: Readable | Buffer, contentType: string, size?: number, opts?: { atLeast?: number }): Promise<StoredObject>;
  getStream(key: string): Promise<Readable>;
  /** An object's bytes with the ETag storage answered for exactly those bytes. */
  getWithEtag(key: string): Promise<{ body: Readable; etag: string }>;
  /** Bytes [offset, offset + length) of an object: only that range leaves the store. */
  getRange(key: string, offset: number, length: number): Promise<Readable>;
  stat(key: string): Promise<StoredObject | null>;
  remove(key: string): Promise<void>;
  /** Removes every object whose key starts with `prefix`; returns how many. */
  removePrefix(prefix: string): Promise<number>;
  /**
   * Where a job's media (outputs, fetched inputs, intermediate files) is written:
   * `jobs/<job id>/<token>/`. The token is keyed by the storage secret, so keys cannot be guessed
   * even when S3_PUBLIC_BASE_URL serves the bucket publicly, yet a retried activity writes the
   * same keys again instead of leaving copies behind.
   */
  jobMediaPrefix(jobId: string): string;
  /** A time-limited GET URL (or a public URL when S3_PUBLIC_BASE_URL is configured). */
  url(key: string, expirySeconds?: number): Promise<string>;
  ping(): Promise<void>;
  /**
   * A presigned POST (browser-form upload straight to storage) whose signed policy fixes the key,
   * the Content-Type and the exact size: storage refuses any other. The client sends `fields`
   * first, then the file as the form's `file` field, to `url`.
   */
  presignedPost(key: string, opts: { contentType: string; size: number; expirySeconds: number }): Promise<PresignedPost>;
  /**
   * Server-side copy inside the bucket (no bytes pass through this process). With `ifEtag`, storage
   * copies only while the source still has that ETag, else it throws ObjectChanged.
   */
  copy(fromKey: string, toKey: string, opts?: { ifEtag?: string }): Promise<void>;
  /** Keys (and last-modified times) of every object under `prefix`. */
  list(prefix: string): AsyncIterable<{ key: string; lastModified: Date }>;
  /** Puts the bucket lifecycle rules of shared/retention.ts in place (idempotent). */
  applyLifecycle(outputRetentionDays: number | null): Promise<LifecycleResult>;
}

export interface PresignedPost {
  url: string;
  fields: Record<string, string>;
  expiresAt: Date;
}

/** A conditional copy found its source changed (another ETag): the bytes it would copy were never checked. */
export class ObjectChanged extends Error {
  override name = 'ObjectChanged';
}

/** S3's minimum multipart part size; also the most a streamed upload holds in memory. */
export const PART_SIZE = 5 * 1024 * 1024;

/** A stream promised (`atLeast`) more bytes than it produced; the upload is aborted. */
export class StreamEndedEarly extends Error {
  override name = 'StreamEndedEarly';
}

/** Every object of a job lives under this prefix; a failed job's media is removed by it. */
export const jobPrefix = (jobId: string): string => `jobs/${jobId}/`;

type StorageConfig = Pick<
  Config,
  'S3_ENDPOINT' | 'S3_ACCESS_KEY' | 'S3_SECRET_KEY' | 'S3_BUCKET' | 'S3_REGION' | 'S3_PUBLIC_BASE_URL' | 'PRESIGN_EXPIRY_SECONDS'
> &
  Partial<Pick<Config, 'S3_PRESIGN_ENDPOINT' | 'S3_PATH_STYLE' | 'S3_MEDIA_PREFIX_SECRET'>> &
  AwsChainEnv;

function s3Options(config: StorageConfig, endpointUrl: string, credentialsProvider: CredentialProvider | undefined) {
  const endpoint = new URL(endpointUrl);
  const useSSL = endpoint.protocol === 'https:';
  return {
    endPoint: endpoint.hostname,
    port: endpoint.port ? Number(endpoint.port) : useSSL ? 443 : 80,
    useSSL,
    ...(credentialsProvider ? { credentialsProvider } : { accessKey: config.S3_ACCESS_KEY, secretKey: config.S3_SECRET_KEY }),
    // With the region given, presigning is computed locally (no bucket-location request).
    region: config.S3_REGION,
    // minio-js puts the bucket in the host name when pathStyle is false (and always for the bare
    // s3.amazonaws.com endpoint), except for a dotted bucket over HTTPS
    // (node_modules/minio/dist/esm/internal/helper.mjs isVirtualHostStyle).
    pathStyle: config.S3_PATH_STYLE ?? true,
  };
}

export function createStorage(config: StorageConfig): Storage {
  // Keys given: those. Otherwise the AWS chain, one provider for every client of this storage so
  // they share its cached credentials and renewals.
  const credentials = config.S3_ACCESS_KEY && config.S3_SECRET_KEY ? undefined : awsCredentialProvider(config, config.S3_REGION, config.PRESIGN_EXPIRY_SECONDS);
  const prefixSecret = config.S3_MEDIA_PREFIX_SECRET ?? config.S3_SECRET_KEY;
  if (!prefixSecret) throw new Error('S3_MEDIA_PREFIX_SECRET (or S3_SECRET_KEY) is needed for the job media prefixes');
  const options = s3Options(config, config.S3_ENDPOINT, credentials);
  const useSSL = options.useSSL;
  const client = new Client(options);
  // Signing only: a signature covers the host, so URLs for clients are signed for the endpoint they reach.
  const presigner = config.S3_PRESIGN_ENDPOINT ? new Client(s3Options(config, config.S3_PRESIGN_ENDPOINT, credentials)) : client;
  const bucket = config.S3_BUCKET;
  // Parts whose bytes are streamed while they arrive cannot be hashed before sending, so they go
  // with an unsigned payload (the signature still covers the request; minio-js does the same over
  // TLS) and without minio's retry, which would resend an already consumed stream. Over plain HTTP
  // each part's ETag is checked against the MD5 of the bytes sent.
  const streamingClient = new Client({ ...options, retryOptions: { disableRetry: true } });
  streamingClient.enableSHA256 = false;

  // Streams go up in S3 multipart parts. Bytes a stream is known to produce (`atLeast`) are streamed
  // through as they arrive, in parts of PART_SIZE (the last of them takes the remainder, so none is
  // under the S3 minimum): nothing is held. What follows (the tail beyond `atLeast`, or a whole
  // stream of unknown size) is copied once into a single reused part buffer: at most one part in
  // memory per upload, and a stream that ends within it goes up as one PUT. Either way nothing is
  // read from the source while storage is not taking bytes, so storage's pace reaches the client
  // socket as backpressure. (minio's own stream upload buffers up to a ~500 MB part when the size is
  // unknown, copies again in putObject, and never settles when the source stream fails.) A source
  // error aborts the multipart upload: nothing is left behind.
  const headersOf = (bytes: Buffer) => ({ 'Content-Length': bytes.length, 'Content-MD5': createHash('md5').update(bytes).digest('base64') });

  async function putReadable(key: string, body: Readable, contentType: string, atLeast = 0): Promise<StoredObject> {
    let uploadId: string | undefined;
    const parts: { part: number; etag: string }[] = [];
    const chunks = body[Symbol.asyncIterator]() as AsyncIterator<Buffer | string>;
    let leftover: Buffer | undefined;
    let total = 0;
    const read = async (): Promise<Buffer | null> => {
      if (leftover) {
        const b = leftover;
        leftover = undefined;
        return b;
      }
      const next = await chunks.next();
      if (next.done) return null;
      const buf = Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value);
      total += buf.length;
      return buf;
    };
    const start = async () => (uploadId ??= await client.initiateNewMultipartUpload(bucket, key, { 'Content-Type': contentType }));

    const streamPart = async (size: number) => {
      const id = await start();
      const partNumber = parts.length + 1;
      const pass = new PassThrough({ highWaterMark: 64 * 1024 });
      const md5 = createHash('md5');
      const request = streamingClient.makeRequestStreamAsync(
        { method: 'PUT', bucketName: bucket, objectName: key, query: `uploadId=${id}&partNumber=${partNumber}`, headers: { 'Content-Length': String(size) } },
        pass,
        '',
        [200],
        config.S3_REGION,
      );
      request.catch(() => undefined);
      try {
        let sent = 0;
        while (sent < size) {
          let piece = await read();
          if (!piece) throw new StreamEndedEarly(`the stream ended after ${total} bytes, before the ${atLeast} it announced`);
          if (piece.length > size - sent) {
            leftover = piece.subarray(size - sent);
            piece = piece.subarray(0, size - sent);
          }
          md5.update(piece);
          sent += piece.length;
          if (!pass.write(piece)) await Promise.race([once(pass, 'drain'), request]);
        }
        pass.end();
        const res = await request;
        res.resume();
        const etag = String(res.headers.etag ?? '').replace(/"/g, '');
        // Over plain HTTP nothing else protects the unsigned bytes; over TLS the channel does (and
        // an ETag under SSE-KMS is not an MD5).
        if (!useSSL && /^[0-9a-f]{32}$/.test(etag) && etag !== md5.digest('hex')) {
          throw new Error(`storage acknowledged part ${partNumber} with a checksum that differs from the bytes sent`);
        }
        parts.push({ part: partNumber, etag });
      } catch (err) {
        pass.destroy();
        throw err;
      }
    };

    // allocUnsafeSlow: outside the shared pool, and pages are only resident once written, so a
    // small file costs its own size, not PART_SIZE.
    let part: Buffer | undefined;
    let filled = 0;
    const sendPart = async () => {
      const id = await start();
      const bytes = part!.subarray(0, filled);
      const partNumber = parts.length + 1;
      const res = await client.uploadPart({ bucketName: bucket, objectName: key, uploadID: id, partNumber, headers: headersOf(bytes) }, bytes);
      parts.push({ part: partNumber, etag: res.etag });
      filled = 0;
    };
    try {
      let streamed = 0;
      while (atLeast - streamed >= PART_SIZE) {
        const remaining = atLeast - streamed;
        const size = remaining >= 2 * PART_SIZE ? PART_SIZE : remaining;
        await streamPart(size);
        streamed += size;
      }
      for (let buf = await read(); buf; buf = await read()) {
        let offset = 0;
        while (offset < buf.length) {
          part ??= Buffer.allocUnsafeSlow(PART_SIZE);
          // A full part is sent only once more bytes arrive, so the last part is never empty.
          if (filled === PART_SIZE) await sendPart();
          const n = buf.copy(part, filled, offset);
          filled += n;
          offset += n;
        }
      }
      if (uploadId === undefined) {
        // Within one part: a single PUT of the part buffer (minio's putObject would copy it again).
        const bytes = (part ?? Buffer.alloc(0)).subarray(0, filled);
        await client.makeRequestAsyncOmit(
          { method: 'PUT', bucketName: bucket, objectName: key, headers: { ...headersOf(bytes), 'Content-Type': contentType } },
          bytes,
          [200],
        );
      } else {
        if (filled > 0) await sendPart();
        await client.completeMultipartUpload(bucket, key, uploadId, parts);
      }
    } catch (err) {
      body.destroy();
      if (uploadId !== undefined) await client.abortMultipartUpload(bucket, key, uploadId).catch(() => undefined);
      throw err;
    } finally {
      part = undefined;
    }
    return { key, size: total, contentType };
  }

  async function putObject(key: string, body: Buffer | Readable, contentType: string, opts?: { atLeast?: number }): Promise<StoredObject> {
    if (!Buffer.isBuffer(body)) return putReadable(key, body, contentType, opts?.atLeast);
    if (body.length > PART_SIZE) return putReadable(key, Readable.from([body]), contentType, body.length);
    // Bytes in memory within one part: one PUT, its Content-MD5 checked by storage.
    await client.makeRequestAsyncOmit(
      { method: 'PUT', bucketName: bucket, objectName: key, headers: { ...headersOf(body), 'Content-Type': contentType } },
      body,
      [200],
    );
    return { key, size: body.length, contentType };
  }

  return {
    bucket,
    putStream(key, body, contentType, size, opts) {
      return withSpan(
        'storage put',
        { 'mediagen.storage.bucket': bucket, 'mediagen.storage.key': redactPath(key), 'mediagen.storage.content_type': contentType },
        async (span) => {
          const stored = await putObject(key, body, contentType, opts);
          span?.setAttribute('mediagen.storage.size', stored.size);
          return stored;
        },
        SpanKind.CLIENT,
      );
    },
    async getStream(key) {
      return client.getObject(bucket, key);
    },
    async getWithEtag(key) {
      // minio answers the HTTP response itself: its ETag header belongs to the bytes it carries.
      const body = (await client.getObject(bucket, key)) as Readable & { headers?: Record<string, string | string[] | undefined> };
      const etag = body.headers?.etag;
      if (typeof etag !== 'string' || etag === '') {
        body.destroy();
        throw new Error(`storage answered ${key} without an ETag`);
      }
      return { body, etag };
    },
    async getRange(key, offset, length) {
      return client.getPartialObject(bucket, key, offset, length);
    },
    async stat(key) {
      try {
        const st = await client.statObject(bucket, key);
        const ct = (st.metaData?.['content-type'] as string | undefined) ?? 'application/octet-stream';
        return { key, size: st.size, contentType: ct, ...(st.etag ? { etag: st.etag } : {}) };
      } catch (err) {
        if ((err as { code?: string }).code === 'NotFound' || (err as { code?: string }).code === 'NoSuchKey') return null;
        throw err;
      }
    },
    async remove(key) {
      await client.removeObject(bucket, key);
    },
    async removePrefix(prefix) {
      const keys: string[] = [];
      for await (const item of client.listObjectsV2(bucket, prefix, true) as AsyncIterable<{ name?: string }>) {
        if (item.name) keys.push(item.name);
      }
      for (let i = 0; i < keys.length; i += 1000) await client.removeObjects(bucket, keys.slice(i, i + 1000));
      return keys.length;
    },
    jobMediaPrefix(jobId) {
      const token = createHmac('sha256', prefixSecret).update(`job-media:${jobId}`).digest('base64url').slice(0, 22);
      return `${jobPrefix(jobId)}${token}`;
    },
    async url(key, expirySeconds = config.PRESIGN_EXPIRY_SECONDS) {
      if (config.S3_PUBLIC_BASE_URL) {
        return `${config.S3_PUBLIC_BASE_URL.replace(/\/$/, '')}/${key.split('/').map(encodeURIComponent).join('/')}`;
      }
      return presigner.presignedGetObject(bucket, key, expirySeconds);
    },
    async applyLifecycle(outputRetentionDays) {
      return applyLifecycleRules(client, bucket, outputRetentionDays);
    },
    async ping() {
      const exists = await client.bucketExists(bucket);
      if (!exists) throw new Error(`bucket ${bucket} does not exist`);
    },
    async presignedPost(key, { contentType, size, expirySeconds }) {
      const policy = presigner.newPostPolicy();
      const expiresAt = new Date(Date.now() + expirySeconds * 1000);
      policy.setBucket(bucket);
      policy.setKey(key);
      policy.setContentType(contentType);
      policy.setContentLengthRange(size, size);
      policy.setExpires(expiresAt);
      const { postURL, formData } = await presigner.presignedPostPolicy(policy);
      return { url: postURL, fields: formData, expiresAt };
    },
    async copy(fromKey, toKey, opts) {
      try {
        await client.copyObject(
          new CopySourceOptions({ Bucket: bucket, Object: fromKey, ...(opts?.ifEtag ? { MatchETag: opts.ifEtag } : {}) }),
          new CopyDestinationOptions({ Bucket: bucket, Object: toKey }),
        );
      } catch (err) {
        if ((err as { code?: string }).code === 'PreconditionFailed') throw new ObjectChanged(`${fromKey} changed since it was read`);
        throw err;
      }
    },
    async *list(prefix) {
      for await (const item of client.listObjectsV2(bucket, prefix, true) as AsyncIterable<{ name?: string; lastModified?: Date }>) {
        if (item.name) yield { key: item.name, lastModified: item.lastModified ?? new Date(0) };
      }
    },
  };
}
