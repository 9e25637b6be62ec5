// An image job's output format (shared/output-format.ts): the stored image is re-encoded into the
// asked format at the asked quality (activities/providers/output-conform.ts), in MinIO, probed with
// ffprobe: JPEG and WebP next to the original (removed), a lower quality a smaller file, a PNG job's
// JPEG answer as PNG (as before), a JPEG answer kept as it is for a JPEG job without a quality, and a
// retried step finding the file an earlier attempt re-encoded.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { alreadyConformed, conformOutput } from '../../activities/providers/output-conform.js';
import { mediaToolsFrom } from '../../activities/providers/media-tools.js';
import { renderImage } from '../../activities/providers/local/media.js';
import { stackStorage } from '../support/fake-providers/context.js';
import { newId } from '../../shared/ids.js';
import type { Storage } from '../../shared/storage.js';
import type { JobOutput } from '../../shared/job-model.js';

const run = promisify(execFile);
const tools = mediaToolsFrom({});
let storage: Storage;
let dir: string;

before(async () => {
  storage = stackStorage();
  dir = await mkdtemp(join(tmpdir(), 'output-format-'));
});
after(() => rm(dir, { recursive: true, force: true }));

/** A PNG stored as a job's first output: its output record. */
async function storedPng(): Promise<JobOutput> {
  const key = `jobs/${newId('img')}/media/output-1.png`;
  const put = await storage.putStream(key, await renderImage({ prompt: 'a lighthouse at dusk', width: 512, height: 512 }), 'image/png');
  return { key, content_type: 'image/png', size: put.size };
}

/** The codec and frame of a stored object, by ffprobe. */
async function probe(key: string): Promise<{ codec: string; width: number; height: number }> {
  const file = join(dir, key.replace(/\W/g, '_'));
  const chunks: Buffer[] = [];
  for await (const c of await storage.getStream(key)) chunks.push(c as Buffer);
  await writeFile(file, Buffer.concat(chunks));
  const { stdout } = await run(process.env.FFPROBE_PATH ?? 'ffprobe', ['-v', 'error', '-show_streams', '-of', 'json', file]);
  const s = (JSON.parse(stdout) as { streams: { codec_name: string; width: number; height: number }[] }).streams[0]!;
  return { codec: s.codec_name, width: s.width, height: s.height };
}

describe('image outputs in the format the job asked', () => {
  test('jpeg at a quality: a .jpg next to the removed original, image/jpeg, a lower quality a smaller file', async () => {
    const high = await conformOutput(storage, tools, await storedPng(), { image: { format: 'jpeg', quality: 95 } });
    const original = await storedPng();
    const low = await conformOutput(storage, tools, original, { image: { format: 'jpeg', quality: 10 } });
    for (const out of [high, low]) {
      assert.match(out.key, /output-1\.jpg$/);
      assert.equal(out.content_type, 'image/jpeg');
      assert.equal(out.converted_from, 'image/png');
      assert.deepEqual(await probe(out.key), { codec: 'mjpeg', width: 512, height: 512 });
      assert.equal((await storage.stat(out.key))?.contentType, 'image/jpeg');
    }
    assert.ok(low.size < high.size, `quality 10 (${low.size} B) is smaller than quality 95 (${high.size} B)`);
    assert.equal(await storage.stat(original.key), null, 'the original is removed');
    // A retried step whose original is gone finds the file the first attempt wrote.
    assert.deepEqual(await alreadyConformed(storage, original.key, 'image/png', { format: 'jpeg', quality: 10 }), low);
  });

  test('webp: a .webp, image/webp, decoded by ffprobe', async () => {
    const out = await conformOutput(storage, tools, await storedPng(), { image: { format: 'webp', quality: 80 } });
    assert.match(out.key, /output-1\.webp$/);
    assert.equal(out.content_type, 'image/webp');
    assert.deepEqual(await probe(out.key), { codec: 'webp', width: 512, height: 512 });
  });

  test('a JPEG answer: kept for a jpeg job without a quality, re-encoded to PNG for a png job (as before)', async () => {
    const jpeg = await conformOutput(storage, tools, await storedPng(), { image: { format: 'jpeg', quality: 90 } });
    const kept = await conformOutput(storage, tools, { key: jpeg.key, content_type: 'image/jpeg', size: jpeg.size }, { image: { format: 'jpeg' } });
    assert.deepEqual(kept, { key: jpeg.key, content_type: 'image/jpeg', size: jpeg.size });
    const png = await conformOutput(storage, tools, { key: jpeg.key, content_type: 'image/jpeg', size: jpeg.size });
    assert.match(png.key, /output-1\.png$/);
    assert.equal(png.converted_from, 'image/jpeg');
    assert.equal((await probe(png.key)).codec, 'png');
  });

  test('a PNG for a png job is left as it is', async () => {
    const original = await storedPng();
    assert.deepEqual(await conformOutput(storage, tools, original, { image: { format: 'png' } }), original);
    assert.deepEqual(await conformOutput(storage, tools, original), original);
  });
});
