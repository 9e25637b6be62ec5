import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  createMediaGuard,
  declaredTypeMatches,
  MediaError,
  sniffMediaType,
  SNIFF_BYTES,
  mediaTypeOf,
  MB,
  readImageDimensions,
  DEFAULT_MAX_IMAGE_PIXELS,
} from '../../shared/media/type.js';
import { makeSampleMedia, type SampleMedia } from '../support/https-server.js';

let media: SampleMedia;
before(async () => {
  media = await makeSampleMedia();
});

/** Pipes `chunks` through a guard; returns bytes passed on, or the error. */
async function runGuard(chunks: Buffer[], limits: { image?: number; video?: number }, declaredType?: string, maxPixels?: number) {
  const guard = createMediaGuard({ limits, declaredType, maxPixels });
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

// Crafted headers: only the bytes each format's dimension field needs, then filler.
function png(width: number, height: number, filler = 64): Buffer {
  const ihdr = Buffer.alloc(25);
  ihdr.writeUInt32BE(13, 0);
  ihdr.write('IHDR', 4, 'latin1');
  ihdr.writeUInt32BE(width, 8);
  ihdr.writeUInt32BE(height, 12);
  ihdr[16] = 8; // bit depth
  ihdr[17] = 6; // RGBA
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), ihdr, Buffer.alloc(filler)]);
}

function jpegSegment(marker: number, payload: Buffer): Buffer {
  const head = Buffer.from([0xff, marker, 0, 0]);
  head.writeUInt16BE(payload.length + 2, 2);
  return Buffer.concat([head, payload]);
}

/** SOI, `appBytes` of APP1/APP2 segments (EXIF, ICC) before the frame header, SOF (`sof` marker), SOS. */
function jpeg(width: number, height: number, opts: { appBytes?: number; sof?: number } = {}): Buffer {
  const parts: Buffer[] = [Buffer.from([0xff, 0xd8])];
  let app = opts.appBytes ?? 0;
  while (app > 0) {
    const n = Math.min(app, 60_000);
    parts.push(jpegSegment(parts.length % 2 ? 0xe1 : 0xe2, Buffer.alloc(n, 0xff)));
    app -= n;
  }
  parts.push(Buffer.from([0xff])); // a fill byte before the next marker is legal
  const frame = Buffer.from([8, 0, 0, 0, 0, 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
  frame.writeUInt16BE(height, 1);
  frame.writeUInt16BE(width, 3);
  parts.push(jpegSegment(opts.sof ?? 0xc0, frame));
  parts.push(jpegSegment(0xda, Buffer.alloc(10)), Buffer.alloc(256, 0x55), Buffer.from([0xff, 0xd9]));
  return Buffer.concat(parts);
}

function webp(chunk: 'VP8 ' | 'VP8L' | 'VP8X', width: number, height: number): Buffer {
  const b = Buffer.alloc(64);
  b.write('RIFF', 0, 'latin1');
  b.writeUInt32LE(b.length - 8, 4);
  b.write('WEBPVP8', 8, 'latin1');
  b.write(chunk, 12, 'latin1');
  b.writeUInt32LE(b.length - 20, 16);
  if (chunk === 'VP8 ') {
    b.set([0x9d, 0x01, 0x2a], 23);
    b.writeUInt16LE(width, 26);
    b.writeUInt16LE(height, 28);
  } else if (chunk === 'VP8L') {
    b[20] = 0x2f;
    b.writeUInt32LE(((width - 1) | ((height - 1) << 14)) >>> 0, 21);
  } else {
    b.writeUIntLE(width - 1, 24, 3);
    b.writeUIntLE(height - 1, 27, 3);
  }
  return b;
}

describe('readImageDimensions', () => {
  test('reads the real 32×32 samples of every image type', () => {
    for (const mime of ['image/jpeg', 'image/png', 'image/webp'] as const) {
      assert.deepEqual(readImageDimensions(mime, media[mime]), { width: 32, height: 32 }, mime);
    }
  });

  test('PNG IHDR, WebP VP8 / VP8L / VP8X, JPEG SOF0 and progressive SOF2 from crafted headers', () => {
    assert.deepEqual(readImageDimensions('image/png', png(20_000, 20_000)), { width: 20_000, height: 20_000 });
    assert.deepEqual(readImageDimensions('image/webp', webp('VP8 ', 16_383, 1_000)), { width: 16_383, height: 1_000 });
    assert.deepEqual(readImageDimensions('image/webp', webp('VP8L', 16_384, 12_345)), { width: 16_384, height: 12_345 });
    assert.deepEqual(readImageDimensions('image/webp', webp('VP8X', 100_000, 3)), { width: 100_000, height: 3 });
    assert.deepEqual(readImageDimensions('image/jpeg', jpeg(65_000, 700)), { width: 65_000, height: 700 });
    assert.deepEqual(readImageDimensions('image/jpeg', jpeg(640, 480, { sof: 0xc2, appBytes: 150_000 })), { width: 640, height: 480 });
  });

  test('a JPEG whose image data starts before any frame header, or a PNG without IHDR, is corrupt', () => {
    const noFrame = Buffer.concat([Buffer.from([0xff, 0xd8]), jpegSegment(0xda, Buffer.alloc(10))]);
    assert.throws(
      () => readImageDimensions('image/jpeg', noFrame),
      (e: unknown) => e instanceof MediaError && e.kind === 'corrupt',
    );
    const badPng = png(10, 10);
    badPng.write('IDAT', 12, 'latin1');
    assert.throws(
      () => readImageDimensions('image/png', badPng),
      (e: unknown) => e instanceof MediaError && e.kind === 'corrupt',
    );
    assert.throws(
      () => readImageDimensions('image/png', png(0, 10)),
      (e: unknown) => e instanceof MediaError && e.kind === 'corrupt',
    );
  });
});

describe('MediaGuard image dimension cap', () => {
  const limits = { image: 10 * MB };

  test('a 20k×20k PNG bomb of a few bytes is refused before any byte passes', async () => {
    const r = await runGuard([png(20_000, 20_000)], limits);
    assert.ok(r.error instanceof MediaError);
    assert.equal(r.error.kind, 'dimensions');
    assert.match(r.error.message, /20000×20000 \(400\.0 Mpx\); the limit is 40\.0 Mpx/);
    assert.equal(r.passed, 0);
  });

  test('WebP over the cap is refused; exactly at the cap passes', async () => {
    const over = await runGuard([webp('VP8X', 8_001, 5_000)], limits);
    assert.equal((over.error as MediaError | undefined)?.kind, 'dimensions');
    const atCap = await runGuard([webp('VP8X', 8_000, 5_000)], limits);
    assert.equal(atCap.error, undefined);
    assert.equal(8_000 * 5_000, DEFAULT_MAX_IMAGE_PIXELS);
    assert.deepEqual(atCap.guard.dimensions, { width: 8_000, height: 5_000 });
  });

  test('the cap is configurable per guard', async () => {
    const r = await runGuard([media['image/png']], limits, undefined, 32 * 32 - 1);
    assert.equal((r.error as MediaError | undefined)?.kind, 'dimensions');
    const ok = await runGuard([media['image/png']], limits, undefined, 32 * 32);
    assert.equal(ok.error, undefined);
  });

  test('a JPEG frame header behind 150 KB of EXIF/ICC segments is found while streaming in small chunks, and refused over the cap', async () => {
    const bomb = jpeg(10_000, 10_000, { appBytes: 150_000 });
    const chunks = Array.from({ length: Math.ceil(bomb.length / 1000) }, (_, i) => bomb.subarray(i * 1000, (i + 1) * 1000));
    const r = await runGuard(chunks, limits);
    assert.ok(r.error instanceof MediaError);
    assert.equal(r.error.kind, 'dimensions');
    await assert.rejects(r.guard.inspected);

    const fine = jpeg(4_000, 3_000, { appBytes: 150_000 });
    const ok = await runGuard([fine.subarray(0, 5_000), fine.subarray(5_000)], limits);
    assert.equal(ok.error, undefined);
    assert.deepEqual((await ok.guard.inspected).dimensions, { width: 4_000, height: 3_000 });
  });

  test('a JPEG that ends before its frame header is refused as corrupt', async () => {
    const truncated = jpeg(100, 100, { appBytes: 50_000 }).subarray(0, 30_000);
    const r = await runGuard([truncated], limits);
    assert.equal((r.error as MediaError | undefined)?.kind, 'corrupt');
  });

  test('videos need no dimensions: inspected resolves with the type alone', async () => {
    const r = await runGuard([media['video/mp4']], { video: 20 * MB });
    assert.equal(r.error, undefined);
    assert.deepEqual(await r.guard.inspected, { type: mediaTypeOf('video/mp4') });
  });
});
