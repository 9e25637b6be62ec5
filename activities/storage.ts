// Object storage over any S3-compatible server through the `minio` client. Media bytes stream
// through here; they never travel inside a Temporal payload.
import { Client } from 'minio';
import { createHash, createHmac } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Config } from '../worker/config.js';

export interface StoredObject {
  key: string;
  size: number;
  contentType: string;
}

export interface Storage {
  readonly bucket: string;
  putStream(key: string, body: Readable | Buffer, contentType: string, size?: number): Promise<StoredObject>;
  getStream(key: string): Promise<Readable>;
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
}

/** S3's minimum multipart part size; also the most a streamed upload holds in memory. */
const PART_SIZE = 5 * 1024 * 1024;

/** Every object of a job lives under this prefix; a failed job's media is removed by it. */
export const jobPrefix = (jobId: string): string => `jobs/${jobId}/`;

type StorageConfig = Pick<Config, 'S3_ENDPOINT' | 'S3_ACCESS_KEY' | 'S3_SECRET_KEY' | 'S3_BUCKET' | 'S3_REGION' | 'S3_PUBLIC_BASE_URL' | 'PRESIGN_EXPIRY_SECONDS'> &
  Partial<Pick<Config, 'S3_PRESIGN_ENDPOINT'>>;

function s3Client(config: StorageConfig, endpointUrl: string): Client {
  const endpoint = new URL(endpointUrl);
  const useSSL = endpoint.protocol === 'https:';
  return new Client({
    endPoint: endpoint.hostname,
    port: endpoint.port ? Number(endpoint.port) : useSSL ? 443 : 80,
    useSSL,
    accessKey: config.S3_ACCESS_KEY,
    secretKey: config.S3_SECRET_KEY,
    // With the region given, presigning is computed locally (no bucket-location request).
    region: config.S3_REGION,
    pathStyle: true,
  });
}

export function createStorage(config: StorageConfig): Storage {
  const client = s3Client(config, config.S3_ENDPOINT);
  // Signing only: a signature covers the host, so URLs for clients are signed for the endpoint they reach.
  const presigner = config.S3_PRESIGN_ENDPOINT ? s3Client(config, config.S3_PRESIGN_ENDPOINT) : client;
  const bucket = config.S3_BUCKET;

  // Streams go up in S3 multipart parts of PART_SIZE, one part in memory at a time (minio's own
  // stream upload buffers up to a ~500 MB part when the size is unknown, and never settles when
  // the source stream fails). A source error aborts the multipart upload: nothing is left behind.
  async function putReadable(key: string, body: Readable, contentType: string): Promise<StoredObject> {
    let uploadId: string | undefined;
    const parts: { part: number; etag: string }[] = [];
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    let total = 0;
    const uploadPending = async () => {
      uploadId ??= await client.initiateNewMultipartUpload(bucket, key, { 'Content-Type': contentType });
      const part = Buffer.concat(pending, pendingBytes);
      pending = [];
      pendingBytes = 0;
      const partNumber = parts.length + 1;
      const md5 = createHash('md5').update(part).digest('base64');
      const res = await client.uploadPart(
        { bucketName: bucket, objectName: key, uploadID: uploadId, partNumber, headers: { 'Content-Length': part.length, 'Content-MD5': md5 } },
        part,
      );
      parts.push({ part: partNumber, etag: res.etag });
    };
    try {
      for await (const chunk of body) {
        const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
        pending.push(buf);
        pendingBytes += buf.length;
        total += buf.length;
        if (pendingBytes >= PART_SIZE) await uploadPending();
      }
      if (uploadId === undefined) {
        // Smaller than one part: a single PUT.
        await client.putObject(bucket, key, Buffer.concat(pending, pendingBytes), pendingBytes, { 'Content-Type': contentType });
      } else {
        if (pendingBytes > 0) await uploadPending();
        await client.completeMultipartUpload(bucket, key, uploadId, parts);
      }
    } catch (err) {
      body.destroy();
      if (uploadId !== undefined) await client.abortMultipartUpload(bucket, key, uploadId).catch(() => undefined);
      throw err;
    }
    return { key, size: total, contentType };
  }

  return {
    bucket,
    async putStream(key, body, contentType, size) {
      if (!Buffer.isBuffer(body)) return putReadable(key, body, contentType);
      await client.putObject(bucket, key, body, size, { 'Content-Type': contentType });
      const st = await client.statObject(bucket, key);
      return { key, size: st.size, contentType };
    },
    async getStream(key) {
      return client.getObject(bucket, key);
    },
    async getRange(key, offset, length) {
      return client.getPartialObject(bucket, key, offset, length);
    },
    async stat(key) {
      try {
        const st = await client.statObject(bucket, key);
        const ct = (st.metaData?.['content-type'] as string | undefined) ?? 'application/octet-stream';
        return { key, size: st.size, contentType: ct };
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
      const token = createHmac('sha256', config.S3_SECRET_KEY).update(`job-media:${jobId}`).digest('base64url').slice(0, 22);
      return `${jobPrefix(jobId)}${token}`;
    },
    async url(key, expirySeconds = config.PRESIGN_EXPIRY_SECONDS) {
      if (config.S3_PUBLIC_BASE_URL) {
        return `${config.S3_PUBLIC_BASE_URL.replace(/\/$/, '')}/${key.split('/').map(encodeURIComponent).join('/')}`;
      }
      return presigner.presignedGetObject(bucket, key, expirySeconds);
    },
    async ping() {
      const exists = await client.bucketExists(bucket);
      if (!exists) throw new Error(`bucket ${bucket} does not exist`);
    },
  };
}
