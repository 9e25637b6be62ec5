// Media type from magic bytes, and the stream guard every upload path pipes through: it holds the
// first bytes until the type is known, refuses unsupported or mislabelled files, then passes bytes
// on while counting them against the size limit of the detected kind (so limits hold mid-stream).
import { Transform, type TransformCallback } from 'node:stream';
import {
  acceptedMimeTypes,
  declaredTypeMatches,
  MB,
  MediaError,
  normalizeDeclaredType,
  sniffMediaType,
  SNIFF_BYTES,
  type MediaKind,
  type MediaType,
} from './sniff.js';
import { DEFAULT_MAX_IMAGE_PIXELS, ImageDimensionScanner, checkImagePixels, type ImageDimensions } from './image-dimensions.js';

// The sniffer and the dimension reader live in their own modules; callers import all of it from here.
export * from './sniff.js';
export * from './image-dimensions.js';

interface MediaGuardOptions {
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
      return cb(
        new MediaError('mismatch', `declared type ${normalizeDeclaredType(this.options.declaredType)} does not match the file's content (${type.mime})`),
      );
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
