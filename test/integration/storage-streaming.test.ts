// Storage.putStream on the real MinIO: streams of unknown size (one reused part buffer, a single PUT
// when they fit in one part), streams with a known floor (`atLeast`, streamed through in parts of at
// least the S3 minimum, the tail buffered), and failures that must leave neither an object nor an
// incomplete multipart upload.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import type { Client as MinioClient } from 'minio';
import { createStorage, PART_SIZE, StreamEndedEarly, type Storage } from '../../shared/storage.js';
import { rawMinioClient, requireStackEnv, testConfig } from '../support/stack.js';
import type { Config } from '../../shared/config.js';

let config: Config;
let storage: Storage;
let minio: MinioClient;
const prefix = `test-streaming/${randomBytes(6).toString('hex')}/`;

before(() => {
  requireStackEnv();
  config = testConfig(process.env.DATABASE_URL!);
  storage = createStorage(config);
  minio = rawMinioClient(config);
});

after(async () => {
  for await (const o of minio.listObjectsV2(config.S3_BUCKET, prefix, true)) await minio.removeObject(config.S3_BUCKET, (o as { name: string }).name);
});

/** `bytes` as a stream of uneven chunks (as sockets deliver them). */
function chunked(bytes: Buffer, failAfter?: number): Readable {
  let offset = 0;
  return new Readable({
    read() {
      if (failAfter !== undefined && offset >= failAfter) return void this.destroy(new Error('source failed'));
      if (offset >= bytes.length) return void this.push(null);
      const n = 1 + Math.floor(Math.random() * 100_000);
      this.push(bytes.subarray(offset, offset + n));
      offset += n;
    },
  });
}

async function readBack(key: string): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of await storage.getStream(key)) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

/** The object's ETag: a multipart upload's ends in "-<part count>". */
async function partCount(key: string): Promise<number> {
  const st = await minio.statObject(config.S3_BUCKET, key);
  const m = /-(\d+)$/.exec(st.etag);
  return m ? Number(m[1]) : 1;
}

async function leftovers(key: string) {
  const objects: string[] = [];
  for await (const o of minio.listObjectsV2(config.S3_BUCKET, key, true)) objects.push((o as { name: string }).name);
  const incomplete: string[] = [];
  for await (const u of minio.listIncompleteUploads(config.S3_BUCKET, key, true)) incomplete.push((u as { key: string }).key);
  return { objects, incomplete };
}

describe('Storage.putStream', () => {
  test('unknown size within one part: one PUT, exact bytes and content type', async () => {
    const bytes = randomBytes(PART_SIZE - 1);
    const key = `${prefix}small.bin`;
    const r = await storage.putStream(key, chunked(bytes), 'video/mp4');
    assert.equal(r.size, bytes.length);
    assert.deepEqual(await readBack(key), bytes);
    assert.equal(await partCount(key), 1);
    assert.equal((await storage.stat(key))?.contentType, 'video/mp4');
  });

  test('unknown size over several parts: buffered parts of PART_SIZE', async () => {
    const bytes = randomBytes(2 * PART_SIZE + 12_345);
    const key = `${prefix}buffered.bin`;
    await storage.putStream(key, chunked(bytes), 'video/mp4');
    assert.deepEqual(await readBack(key), bytes);
    assert.equal(await partCount(key), 3);
  });

  test('a known floor is streamed through (the last streamed part takes the remainder) and the tail is buffered', async () => {
    const atLeast = 2 * PART_SIZE + 777_777; // streamed: PART_SIZE, then PART_SIZE + 777,777
    const bytes = randomBytes(atLeast + 50_000); // a buffered final part of 50,000
    const key = `${prefix}streamed.bin`;
    const r = await storage.putStream(key, chunked(bytes), 'video/mp4', undefined, { atLeast });
    assert.equal(r.size, bytes.length);
    assert.deepEqual(await readBack(key), bytes);
    assert.equal(await partCount(key), 3);
  });

  test('a floor met exactly needs no tail part', async () => {
    const bytes = randomBytes(PART_SIZE + 10);
    const key = `${prefix}exact.bin`;
    await storage.putStream(key, chunked(bytes), 'video/mp4', undefined, { atLeast: bytes.length });
    assert.deepEqual(await readBack(key), bytes);
    assert.equal(await partCount(key), 1);
  });

  test('a stream that ends before its floor fails with StreamEndedEarly and leaves nothing', async () => {
    const bytes = randomBytes(PART_SIZE + 100);
    const key = `${prefix}short.bin`;
    await assert.rejects(storage.putStream(key, chunked(bytes), 'video/mp4', undefined, { atLeast: 2 * PART_SIZE }), StreamEndedEarly);
    assert.deepEqual(await leftovers(key), { objects: [], incomplete: [] });
  });

  test('a source that fails mid-part (streamed or buffered) leaves nothing', async () => {
    const bytes = randomBytes(3 * PART_SIZE);
    for (const [name, atLeast] of [
      ['fail-streamed.bin', 3 * PART_SIZE],
      ['fail-buffered.bin', 0],
    ] as const) {
      const key = `${prefix}${name}`;
      await assert.rejects(storage.putStream(key, chunked(bytes, PART_SIZE + 1_000_000), 'video/mp4', undefined, { atLeast }), /source failed/);
      assert.deepEqual(await leftovers(key), { objects: [], incomplete: [] }, name);
    }
  });
});
