// Media type from magic bytes, and the stream guard every upload path pipes through: it holds the
// first bytes until the type is known, refuses unsupported or mislabelled files, then passes bytes
// on while counting them against the size limit of the detected kind (so limits hold mid-stream).
import { Transform, type TransformCallback } from 'node:stream';

export type MediaKind = 'image' | 'video';

export const acceptedMimeTypes = ['image/jpeg', 'image/png', 'image/webp', 'video/mp4', 'video/quicktime', 'video/webm'] as const;
export type AcceptedMime = (typeof acceptedMimeTypes)[number];

export interface MediaType {
  mime: AcceptedMime;
  fileType: MediaKind;
  /** File extension used in object keys (no dot). */
  ext: string;
}

/** Sizes are binary megabytes: "10 MB" = 10 × 2^20 bytes. */
export const MB = 1024 * 1024;

/** Bytes held back before deciding the type (enough for every signature we read, incl. the WebM EBML header). */
export const SNIFF_BYTES = 4096;

/** The one MIME type → file extension map: upload and output keys, and the files ffmpeg reads. */
const extensions: Readonly<Record<string, string>> = {
  'image/jpeg': 'jpg',
  'image/jpg': 'jpg',
  'image/png': 'png',
  'image/webp': 'webp',
  'image/gif': 'gif',
  'video/mp4': 'mp4',
  'video/quicktime': 'mov',
  'video/webm': 'webm',
  'video/x-matroska': 'mkv',
};

/** The extension (without the dot) of a content type, parameters and case ignored; undefined when unknown. */
export function extensionOf(contentType: string): string | undefined {
  return extensions[contentType.split(';')[0]!.trim().toLowerCase()];
}

const typeOf = (mime: AcceptedMime, fileType: MediaKind): MediaType => ({ mime, fileType, ext: extensions[mime]! });
const types: Record<AcceptedMime, MediaType> = {
  'image/jpeg': typeOf('image/jpeg', 'image'),
  'image/png': typeOf('image/png', 'image'),
  'image/webp': typeOf('image/webp', 'image'),
  'video/mp4': typeOf('video/mp4', 'video'),
  'video/quicktime': typeOf('video/quicktime', 'video'),
  'video/webm': typeOf('video/webm', 'video'),
};

export function mediaTypeOf(mime: AcceptedMime): MediaType {
  return types[mime];
}

// ISO base media major brands that mean an MP4 video. Image (HEIF/AVIF) and audio-only (M4A)
// brands are deliberately absent: those files are not accepted videos.
const mp4Brands = new Set([
  'isom', 'iso2', 'iso3', 'iso4', 'iso5', 'iso6', 'iso7', 'iso8', 'iso9',
  'mp41', 'mp42', 'mp71', 'avc1', 'av01', 'hvc1', 'M4V ', 'M4VH', 'M4VP', 'dash', 'mmp4', 'MSNV', 'f4v ', 'NDAS', 'XAVC',
]);
const nonVideoBrands = new Set(['heic', 'heix', 'heim', 'heis', 'hevc', 'hevx', 'mif1', 'msf1', 'avif', 'avis', 'M4A ', 'M4B ', 'M4P ', 'F4A ', 'F4B ', 'crx ', 'jp2 ']);

const ascii = (b: Uint8Array, from: number, to: number) => Buffer.from(b.subarray(from, to)).toString('latin1');

/** The accepted media type of a file from its first bytes, or null when it is none of them. */
export function sniffMediaType(head: Uint8Array): MediaType | null {
  if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return types['image/jpeg'];
  if (head.length >= 8 && [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a].every((v, i) => head[i] === v)) return types['image/png'];
  if (head.length >= 16 && ascii(head, 0, 4) === 'RIFF' && ascii(head, 8, 12) === 'WEBP' && ['VP8 ', 'VP8L', 'VP8X'].includes(ascii(head, 12, 16))) {
    return types['image/webp'];
  }
  if (head.length >= 12 && ascii(head, 4, 8) === 'ftyp') return sniffIsoBmff(head);
  if (head.length >= 4 && head[0] === 0x1a && head[1] === 0x45 && head[2] === 0xdf && head[3] === 0xa3) {
    return ebmlDocType(head) === 'webm' ? types['video/webm'] : null;
  }
  return null;
}

function sniffIsoBmff(head: Uint8Array): MediaType | null {
  const major = ascii(head, 8, 12);
  if (major === 'qt  ') return types['video/quicktime'];
  if (mp4Brands.has(major)) return types['video/mp4'];
  if (nonVideoBrands.has(major)) return null;
  // Unknown major brand: accept when a compatible brand says MP4 (box bytes 16..size).
  const boxSize = ((head[0]! << 24) | (head[1]! << 16) | (head[2]! << 8) | head[3]!) >>> 0;
  const end = Math.min(head.length, boxSize);
  for (let i = 16; i + 4 <= end; i += 4) {
    const brand = ascii(head, i, i + 4);
    if (brand === 'qt  ') return types['video/quicktime'];
    if (mp4Brands.has(brand)) return types['video/mp4'];
  }
  return null;
}

/** Reads an EBML variable-length integer at `pos`; returns its value and length, or null. */
function readVint(b: Uint8Array, pos: number, keepMarker: boolean): { value: number; length: number } | null {
  const first = b[pos];
  if (first === undefined || first === 0) return null;
  let length = 1;
  while (length <= 8 && !(first & (0x80 >> (length - 1)))) length++;
  if (length > 8 || pos + length > b.length) return null;
  let value = keepMarker ? first : first & (0xff >> length);
  for (let i = 1; i < length; i++) value = value * 256 + b[pos + i]!;
  return { value, length };
}

/** The DocType string of an EBML header ("webm", "matroska"), or null. */
function ebmlDocType(b: Uint8Array): string | null {
  const headerSize = readVint(b, 4, false);
  if (!headerSize) return null;
  let pos = 4 + headerSize.length;
  const end = Math.min(b.length, pos + headerSize.value);
  while (pos < end) {
    const id = readVint(b, pos, true);
    if (!id) return null;
    const size = readVint(b, pos + id.length, false);
    if (!size) return null;
    const dataStart = pos + id.length + size.length;
    if (id.value === 0x4282) return ascii(b, dataStart, Math.min(end, dataStart + size.value));
    pos = dataStart + size.value;
  }
  return null;
}

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

const aliases: Record<string, string> = {
  'image/jpg': 'image/jpeg',
  'image/pjpeg': 'image/jpeg',
  'image/x-png': 'image/png',
  'application/mp4': 'video/mp4',
  'video/x-m4v': 'video/mp4',
};

/**
 * The media type a client declared, normalised; null when it made no real claim. Busboy reports a
 * file part without a Content-Type as `text/plain`, so that value and the generic octet-stream types
 * count as "no claim"; everything else must agree with the bytes.
 */
export function normalizeDeclaredType(declared: string | undefined | null): string | null {
  if (!declared) return null;
  const t = declared.split(';')[0]!.trim().toLowerCase();
  if (t === '' || t === 'application/octet-stream' || t === 'binary/octet-stream' || t === 'text/plain') return null;
  return aliases[t] ?? t;
}

export function declaredTypeMatches(declared: string | undefined | null, sniffed: MediaType): boolean {
  const d = normalizeDeclaredType(declared);
  return d === null || d === sniffed.mime;
}

export type MediaErrorKind = 'unsupported' | 'mismatch' | 'too_large' | 'empty' | 'dimensions' | 'corrupt';

export class MediaError extends Error {
  override name = 'MediaError';
  constructor(
    readonly kind: MediaErrorKind,
    message: string,
    readonly limit?: number,
  ) {
    super(message);
  }
}

export interface MediaGuardOptions {
  /** Byte limit per accepted kind; a kind without a limit is refused (e.g. `{ image }` only). */
  limits: Partial<Record<MediaKind, number>>;
  /** The client's declared type (multipart part header); refused when it disagrees with the bytes. */
  declaredType?: string;
  /** Largest image accepted, in pixels (width × height); DEFAULT_MAX_IMAGE_PIXELS when unset. */
  maxPixels?: number;
}

/** What the guard learnt from a file's first bytes. */
export interface MediaInspection {
  type: MediaType;
  /** Images only. */
  dimensions?: ImageDimensions;
}

const describeLimit = (bytes: number) => (bytes % MB === 0 ? `${bytes / MB} MB` : `${bytes} bytes`);

/**
 * A Transform that decides the media type from the first bytes, reads an image's dimensions and
 * refuses one above the pixel cap, then enforces the kind's byte limit while the rest flows
 * through. `detected` resolves once the type is known (before any byte is passed on), so a caller
 * can name the object key and content type, then consume the guard. `inspected` resolves once the
 * type and (for images) the dimensions are known and accepted: a reader that only checks a file
 * can stop there. A PNG or WebP over the cap is refused before any byte passes; a JPEG whose frame
 * header lies past the first bytes is refused as soon as it is read (the stream fails, so storage
 * aborts its upload).
 */
export class MediaGuard extends Transform {
  /** Bytes seen so far (the exact file size once the stream has ended). */
  bytes = 0;
  type: MediaType | undefined;
  dimensions: ImageDimensions | undefined;
  readonly detected: Promise<MediaType>;
  readonly inspected: Promise<MediaInspection>;
  private head: Buffer[] = [];
  private headLength = 0;
  private limit = 0;
  private scanner: ImageDimensionScanner | undefined;
  private inspectionDone = false;
  private resolveDetected!: (t: MediaType) => void;
  private rejectDetected!: (err: Error) => void;
  private resolveInspected!: (i: MediaInspection) => void;
  private rejectInspected!: (err: Error) => void;

  constructor(private readonly options: MediaGuardOptions) {
    super();
    this.detected = new Promise<MediaType>((resolve, reject) => {
      this.resolveDetected = resolve;
      this.rejectDetected = reject;
    });
    this.inspected = new Promise<MediaInspection>((resolve, reject) => {
      this.resolveInspected = resolve;
      this.rejectInspected = reject;
    });
    // A caller that never awaits `detected` (stream failed early) must not cause an unhandled rejection.
    this.detected.catch(() => undefined);
    this.inspected.catch(() => undefined);
    // Failures reach consumers through pipeline/iteration and `detected`; a guard destroyed after its
    // consumers are gone (a request refused late) must not crash the process with an unhandled 'error'.
    this.on('error', () => undefined);
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.type) {
      if (this.bytes > this.limit) return cb(this.tooLarge());
      if (!this.inspectionDone) {
        try {
          this.scan(chunk);
        } catch (err) {
          return cb(err as Error);
        }
      }
      return cb(null, chunk);
    }
    this.head.push(chunk);
    this.headLength += chunk.length;
    if (this.headLength < SNIFF_BYTES) return cb();
    this.release(cb);
  }

  override _flush(cb: TransformCallback): void {
    if (this.type) {
      if (this.inspectionDone) return cb();
      try {
        this.finishInspection(this.scanner!.end());
      } catch (err) {
        return cb(err as Error);
      }
      return cb();
    }
    if (this.headLength === 0) return cb(new MediaError('empty', 'the file is empty'));
    this.release(cb);
  }

  override _destroy(err: Error | null, cb: (error?: Error | null) => void): void {
    const reason = err ?? new Error('stream closed before the file was inspected');
    if (!this.type) this.rejectDetected(reason);
    if (!this.inspectionDone) this.rejectInspected(reason);
    cb(err);
  }

  /** Decides the type from the held bytes, then passes them on (or fails). */
  private release(cb: TransformCallback): void {
    const held = Buffer.concat(this.head, this.headLength);
    this.head = [];
    const type = sniffMediaType(held);
    if (!type) {
      return cb(new MediaError('unsupported', `unsupported file type: accepted types are ${acceptedMimeTypes.join(', ')}`));
    }
    const limit = this.options.limits[type.fileType];
    if (limit === undefined) return cb(new MediaError('unsupported', `expected ${Object.keys(this.options.limits).join(' or ')}, got ${type.mime}`));
    if (!declaredTypeMatches(this.options.declaredType, type)) {
      return cb(new MediaError('mismatch', `declared type ${normalizeDeclaredType(this.options.declaredType)} does not match the file's content (${type.mime})`));
    }
    let dims: ImageDimensions | null = null;
    if (type.fileType === 'image') {
      this.scanner = new ImageDimensionScanner(type.mime as 'image/jpeg' | 'image/png' | 'image/webp');
      try {
        dims = this.scanner.push(held);
        if (dims) checkImagePixels(dims, this.maxPixels);
      } catch (err) {
        return cb(err as Error);
      }
    }
    this.type = type;
    this.limit = limit;
    this.resolveDetected(type);
    if (type.fileType === 'video' || dims) this.finishInspection(dims ?? undefined);
    if (this.bytes > limit) return cb(this.tooLarge());
    cb(null, held);
  }

  private get maxPixels(): number {
    return this.options.maxPixels ?? DEFAULT_MAX_IMAGE_PIXELS;
  }

  /** Feeds a JPEG's later bytes to the dimension scanner; throws when the image is refused. */
  private scan(chunk: Buffer): void {
    const dims = this.scanner!.push(chunk);
    if (dims) this.finishInspection(dims);
  }

  /** Dimensions known (images) or not needed (videos): checks the cap, then resolves `inspected`. */
  private finishInspection(dims: ImageDimensions | undefined): void {
    if (dims) checkImagePixels(dims, this.maxPixels);
    this.dimensions = dims;
    this.inspectionDone = true;
    this.resolveInspected({ type: this.type!, ...(dims ? { dimensions: dims } : {}) });
  }

  private tooLarge(): MediaError {
    return new MediaError('too_large', `${this.type!.fileType} exceeds the ${describeLimit(this.limit)} limit`, this.limit);
  }
}

export function createMediaGuard(options: MediaGuardOptions): MediaGuard {
  return new MediaGuard(options);
}
