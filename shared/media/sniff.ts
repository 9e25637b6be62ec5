// Media type from magic bytes: the accepted types, their extensions, the sniffer, how a declared
// type is compared with the bytes, and the error every media check throws.
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
  'isom',
  'iso2',
  'iso3',
  'iso4',
  'iso5',
  'iso6',
  'iso7',
  'iso8',
  'iso9',
  'mp41',
  'mp42',
  'mp71',
  'avc1',
  'av01',
  'hvc1',
  'M4V ',
  'M4VH',
  'M4VP',
  'dash',
  'mmp4',
  'MSNV',
  'f4v ',
  'NDAS',
  'XAVC',
]);
const nonVideoBrands = new Set([
  'heic',
  'heix',
  'heim',
  'heis',
  'hevc',
  'hevx',
  'mif1',
  'msf1',
  'avif',
  'avis',
  'M4A ',
  'M4B ',
  'M4P ',
  'F4A ',
  'F4B ',
  'crx ',
  'jp2 ',
]);

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

type MediaErrorKind = 'unsupported' | 'mismatch' | 'too_large' | 'empty' | 'dimensions' | 'corrupt';

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
