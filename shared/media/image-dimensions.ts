// Image dimensions read from the first bytes (PNG, WebP) or as a JPEG streams past, and the
// decompression-bomb cap on pixels.
import { MediaError } from './sniff.js';

const ascii = (b: Uint8Array, from: number, to: number) => Buffer.from(b.subarray(from, to)).toString('latin1');

export interface ImageDimensions {
  width: number;
  height: number;
}

/**
 * Decompression-bomb cap: a few-MB PNG can declare 20k×20k pixels, which every renderer would then
 * decode. Images above this many pixels are refused at upload (UPLOAD_MAX_IMAGE_PIXELS overrides).
 */
export const DEFAULT_MAX_IMAGE_PIXELS = 40_000_000;

/** Bytes a PNG or WebP header needs before its dimensions can be read (all within SNIFF_BYTES). */
const FIXED_HEADER_BYTES = 30;

// JPEG start-of-frame markers (baseline, extended, progressive, lossless, arithmetic): the frame
// header holds the dimensions. C4 (DHT), C8 (JPG) and CC (DAC) share the range but are not frames.
const jpegSofMarkers = new Set([0xc0, 0xc1, 0xc2, 0xc3, 0xc5, 0xc6, 0xc7, 0xc9, 0xca, 0xcb, 0xcd, 0xce, 0xcf]);

/**
 * Reads an image's dimensions as its bytes stream past, holding none of them beyond a few header
 * bytes. PNG (IHDR) and WebP (VP8, VP8L, VP8X) carry them in the first 30 bytes; a JPEG carries
 * them in its start-of-frame segment, which may follow large EXIF/ICC segments, so those are
 * skipped by their declared lengths instead of being buffered. `push` answers the dimensions once
 * known, `null` while more bytes are needed; a malformed header throws MediaError('corrupt').
 */
export class ImageDimensionScanner {
  result: ImageDimensions | undefined;
  private seen = 0;
  private header: number[] = [];
  // JPEG state: bytes of the current segment still to skip, and the marker bytes read so far.
  private skip = 0;
  private segment: number[] = [];

  constructor(private readonly mime: 'image/jpeg' | 'image/png' | 'image/webp') {}

  push(chunk: Uint8Array): ImageDimensions | null {
    if (this.result) return this.result;
    if (this.mime === 'image/jpeg') return this.pushJpeg(chunk);
    for (let i = 0; i < chunk.length && this.header.length < FIXED_HEADER_BYTES; i++) this.header.push(chunk[i]!);
    if (this.header.length < FIXED_HEADER_BYTES) return null;
    const b = Uint8Array.from(this.header);
    const dims = this.mime === 'image/png' ? pngDimensions(b) : webpDimensions(b);
    return this.accept(dims);
  }

  /** Called at the end of the file: dimensions that were never found mean a broken image. */
  end(): ImageDimensions {
    if (this.result) return this.result;
    throw new MediaError('corrupt', 'the image is truncated or malformed: its dimensions could not be read');
  }

  private accept(dims: ImageDimensions | null): ImageDimensions {
    if (!dims || dims.width === 0 || dims.height === 0) throw new MediaError('corrupt', 'the image header is malformed: its dimensions could not be read');
    this.result = dims;
    return dims;
  }

  private pushJpeg(chunk: Uint8Array): ImageDimensions | null {
    let i = 0;
    if (this.seen < 2) {
      // SOI (FF D8) was checked by the sniffer.
      const take = Math.min(2 - this.seen, chunk.length);
      this.seen += take;
      i = take;
    }
    while (i < chunk.length) {
      if (this.skip > 0) {
        const n = Math.min(this.skip, chunk.length - i);
        this.skip -= n;
        i += n;
        continue;
      }
      const byte = chunk[i++]!;
      const seg = this.segment;
      if (seg.length === 0) {
        if (byte !== 0xff) throw new MediaError('corrupt', 'the JPEG is malformed: expected a marker');
        seg.push(byte);
        continue;
      }
      if (seg.length === 1) {
        if (byte === 0xff) continue; // fill byte before a marker
        if (byte === 0xd9 || byte === 0xda) throw new MediaError('corrupt', 'the JPEG has no frame header before its image data');
        if ((byte >= 0xd0 && byte <= 0xd8) || byte === 0x01) {
          this.segment = []; // markers without a length
          continue;
        }
        seg.push(byte);
        continue;
      }
      seg.push(byte);
      if (seg.length === 4) {
        const length = (seg[2]! << 8) | seg[3]!;
        if (length < 2) throw new MediaError('corrupt', 'the JPEG is malformed: a segment length is invalid');
        if (!jpegSofMarkers.has(seg[1]!)) {
          this.skip = length - 2;
          this.segment = [];
        } else if (length < 8) {
          throw new MediaError('corrupt', 'the JPEG frame header is malformed');
        }
      } else if (seg.length === 9) {
        // FF Cn, length (2), precision (1), height (2), width (2)
        return this.accept({ height: (seg[5]! << 8) | seg[6]!, width: (seg[7]! << 8) | seg[8]! });
      }
    }
    return null;
  }
}

function pngDimensions(b: Uint8Array): ImageDimensions | null {
  if (ascii(b, 12, 16) !== 'IHDR') return null;
  const v = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  return { width: v.readUInt32BE(16), height: v.readUInt32BE(20) };
}

function webpDimensions(b: Uint8Array): ImageDimensions | null {
  const v = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  switch (ascii(b, 12, 16)) {
    case 'VP8 ':
      // Key frame: 3-byte frame tag, start code 9D 01 2A, then 14-bit width and height (2 bits of scale each).
      if (b[23] !== 0x9d || b[24] !== 0x01 || b[25] !== 0x2a) return null;
      return { width: v.readUInt16LE(26) & 0x3fff, height: v.readUInt16LE(28) & 0x3fff };
    case 'VP8L': {
      // Signature 0x2F, then width-1 and height-1 as two 14-bit fields, least significant bit first.
      if (b[20] !== 0x2f) return null;
      const bits = v.readUInt32LE(21);
      return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
    }
    case 'VP8X':
      // Flags (1), reserved (3), canvas width-1 and height-1 as 24-bit little-endian fields.
      return { width: v.readUIntLE(24, 3) + 1, height: v.readUIntLE(27, 3) + 1 };
    default:
      return null;
  }
}

/** The dimensions in a whole image's (or its first) bytes, or null when they are not there yet. Throws MediaError('corrupt'). */
export function readImageDimensions(mime: 'image/jpeg' | 'image/png' | 'image/webp', bytes: Uint8Array): ImageDimensions | null {
  return new ImageDimensionScanner(mime).push(bytes);
}

/** Refuses an image above `maxPixels` (MediaError 'dimensions'). */
export function checkImagePixels(dims: ImageDimensions, maxPixels: number): void {
  const pixels = dims.width * dims.height;
  if (pixels > maxPixels) {
    throw new MediaError(
      'dimensions',
      `image is ${dims.width}×${dims.height} (${(pixels / 1e6).toFixed(1)} Mpx); the limit is ${(maxPixels / 1e6).toFixed(1)} Mpx`,
    );
  }
}
