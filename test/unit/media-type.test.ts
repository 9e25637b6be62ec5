import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createMediaGuard, declaredTypeMatches, MediaError, sniffMediaType, SNIFF_BYTES, mediaTypeOf, MB } from '../../activities/media-type.js';
import { makeSampleMedia, type SampleMedia } from '../support/https-server.js';

let media: SampleMedia;
before(async () => {
  media = await makeSampleMedia();
});

/** Pipes `chunks` through a guard; returns bytes passed on, or the error. */
async function runGuard(chunks: Buffer[], limits: { image?: number; video?: number }, declaredType?: string) {
  const guard = createMediaGuard({ limits, declaredType });
  const out: Buffer[] = [];
  try {
    await pipeline(
      Readable.from(chunks),
      guard,
      new Writable({
        write(c: Buffer, _e, cb) {
          out.push(c);
          cb();
        },
      }),
    );
    return { bytes: Buffer.concat(out), guard };
  } catch (err) {
    return { error: err as Error, guard, passed: Buffer.concat(out).length };
  }
}

describe('sniffMediaType', () => {
  test('recognises every accepted type from real ffmpeg output', () => {
    for (const mime of ['image/jpeg', 'image/png', 'image/webp', 'video/mp4', 'video/quicktime', 'video/webm'] as const) {
      assert.equal(sniffMediaType(media[mime])?.mime, mime, mime);
    }
  });

  test('refuses Matroska, GIF, text and empty input', () => {
    assert.equal(sniffMediaType(media.mkv), null);
    assert.equal(sniffMediaType(media.gif), null);
    assert.equal(sniffMediaType(Buffer.from('<html>hello</html>')), null);
    assert.equal(sniffMediaType(Buffer.alloc(0)), null);
  });

  test('refuses ISO-BMFF image and audio brands (HEIC, AVIF, M4A)', () => {
    for (const brand of ['heic', 'avif', 'M4A ']) {
      const box = Buffer.concat([Buffer.from([0, 0, 0, 16]), Buffer.from('ftyp'), Buffer.from(brand), Buffer.alloc(4)]);
      assert.equal(sniffMediaType(box), null, brand);
    }
  });
});

describe('declaredTypeMatches', () => {
  test('no claim (missing, octet-stream) is fine; aliases normalise; a different type is a mismatch', () => {
    const jpeg = mediaTypeOf('image/jpeg');
    assert.equal(declaredTypeMatches(undefined, jpeg), true);
    assert.equal(declaredTypeMatches('application/octet-stream', jpeg), true);
    assert.equal(declaredTypeMatches('text/plain', jpeg), true);
    assert.equal(declaredTypeMatches('image/jpg', jpeg), true);
    assert.equal(declaredTypeMatches('IMAGE/JPEG; charset=binary', jpeg), true);
    assert.equal(declaredTypeMatches('image/png', jpeg), false);
    assert.equal(declaredTypeMatches('video/mp4', jpeg), false);
  });
});

describe('MediaGuard', () => {
  test('passes a small file through byte for byte and reports its type and exact size', async () => {
    const r = await runGuard([media['image/png']], { image: 10 * MB });
    assert.ok(r.bytes);
    assert.deepEqual(r.bytes, media['image/png']);
    assert.equal(r.guard.type?.mime, 'image/png');
    assert.equal(r.guard.bytes, media['image/png'].length);
  });

  test('detects across tiny chunks', async () => {
    const file = media['video/webm'];
    const chunks = Array.from({ length: file.length }, (_, i) => file.subarray(i, i + 1));
    const r = await runGuard(chunks, { video: 50 * MB });
    assert.equal(r.guard.type?.mime, 'video/webm');
    assert.deepEqual(r.bytes, file);
  });

  test('a spoofed declared type is refused before any byte passes', async () => {
    const r = await runGuard([media['image/jpeg']], { image: 10 * MB }, 'image/png');
    assert.ok(r.error instanceof MediaError);
    assert.equal(r.error.kind, 'mismatch');
    assert.equal(r.passed, 0);
  });

  test('an unsupported file is refused', async () => {
    const r = await runGuard([media.gif], { image: 10 * MB, video: 20 * MB });
    assert.ok(r.error instanceof MediaError);
    assert.equal(r.error.kind, 'unsupported');
  });

  test('a kind without a limit is refused (video where an image is expected)', async () => {
    const r = await runGuard([media['video/mp4']], { image: 10 * MB });
    assert.ok(r.error instanceof MediaError);
    assert.equal(r.error.kind, 'unsupported');
  });

  test('the limit holds mid-stream: one byte over fails, having passed at most the limit', async () => {
    const limit = SNIFF_BYTES * 4;
    const head = media['image/png'].subarray(0, 64);
    const body = Buffer.concat([head, Buffer.alloc(limit + 1 - head.length)]);
    const chunks = Array.from({ length: Math.ceil(body.length / 1000) }, (_, i) => body.subarray(i * 1000, (i + 1) * 1000));
    const r = await runGuard(chunks, { image: limit });
    assert.ok(r.error instanceof MediaError);
    assert.equal(r.error.kind, 'too_large');
    assert.ok((r.passed ?? 0) <= limit);

    const exact = await runGuard([body.subarray(0, limit)], { image: limit });
    assert.equal(exact.error, undefined);
    assert.equal(exact.guard.bytes, limit);
  });

  test('an empty file is refused', async () => {
    const r = await runGuard([], { image: 10 * MB });
    assert.ok(r.error instanceof MediaError);
    assert.equal(r.error.kind, 'empty');
  });
});
