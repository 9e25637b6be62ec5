// The local renderer's pure image code: a deterministic picture from a prompt and a seed, and a
// PNG encoder (zlib only: no binary, no I/O). The ffmpeg and espeak-ng runners are media.ts.
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { crc32, deflate } from 'node:zlib';

const deflateAsync = promisify(deflate);

type Rgb = [number, number, number];

/** A deterministic byte stream from prompt and seed (SHA-256 in counter mode). */
function byteStream(prompt: string, seed: number): () => number {
  let block = Buffer.alloc(0);
  let pos = 0;
  let counter = 0;
  return () => {
    if (pos >= block.length) {
      block = createHash('sha256').update(`${seed}\u0000${counter++}\u0000${prompt}`).digest();
      pos = 0;
    }
    return block[pos++]!;
  };
}

function hsl(h: number, s: number, l: number): Rgb {
  const a = s * Math.min(l, 1 - l);
  const f = (n: number) => {
    const k = (n + h / 30) % 12;
    return Math.round(255 * (l - a * Math.max(-1, Math.min(k - 3, 9 - k, 1))));
  };
  return [f(0), f(8), f(4)];
}

/**
 * Raw RGB pixels: a two-colour gradient at an angle plus a few translucent shapes, all from the hash.
 * `reference` paints every pixel one by one, the slow way the fast one is tested against.
 */
export function renderImagePixels(prompt: string, width: number, height: number, seed = 0, reference = false): Buffer {
  return paint(prompt, width, height, seed, 0, reference);
}

/**
 * The picture as a PNG: painted straight into the scanlines the encoder compresses (no copy), and
 * compressed on libuv's thread pool, off the event loop the worker's other activities share.
 */
export function renderImagePng(prompt: string, width: number, height: number, seed = 0): Promise<Buffer> {
  return pngOfScanlines(paint(prompt, width, height, seed, 1), width, height);
}

interface Shape {
  /** The blend of each channel as a table over its 256 values. */
  blend: [Uint8Array, Uint8Array, Uint8Array];
  cx: number;
  cy: number;
  r: number;
  circle: boolean;
}

/** dst[i] = the blend of src[i], channel by channel, for the RGB bytes [from, to); returns dst. */
function blendInto([blendR, blendG, blendB]: Shape['blend'], src: Buffer, dst: Buffer, from: number, to: number): Buffer {
  for (let i = from; i < to; i += 3) {
    dst[i] = blendR[src[i]!]!;
    dst[i + 1] = blendG[src[i + 1]!]!;
    dst[i + 2] = blendB[src[i + 2]!]!;
  }
  return dst;
}

/** The columns [from, to] a shape covers on row y (from > to: none). */
function shapeSpan(s: Shape, y: number, width: number): [number, number] {
  if (y < Math.floor(s.cy - s.r) || y > Math.ceil(s.cy + s.r)) return [1, 0];
  const x0 = Math.max(0, Math.floor(s.cx - s.r));
  const x1 = Math.min(width - 1, Math.ceil(s.cx + s.r));
  if (!s.circle) return [x0, x1];
  const h = s.r * s.r - (y - s.cy) ** 2;
  if (h < 0) return [1, 0];
  const half = Math.sqrt(h);
  return [Math.max(x0, Math.ceil(s.cx - half)), Math.min(x1, Math.floor(s.cx + half))];
}

/**
 * Paints into rows of `lead` bytes (zero: PNG's filter type None) and then width × RGB.
 * The gradient's rows are windows of one ramp (paintGradient); a shape over the bare gradient is the
 * same window of the ramp blended with the shape's colour, so each shape blends the ramp once and
 * copies it row by row. Only where an earlier shape lies under it does it blend pixel by pixel.
 */
function paint(prompt: string, width: number, height: number, seed: number, lead: number, reference = false): Buffer {
  const rowBytes = lead + width * 3;
  const next = byteStream(prompt, seed);
  const unit = () => next() / 255;
  const baseHue = unit() * 360;
  const c1 = hsl(baseHue, 0.55 + unit() * 0.4, 0.3 + unit() * 0.25);
  const c2 = hsl((baseHue + 90 + unit() * 180) % 360, 0.55 + unit() * 0.4, 0.45 + unit() * 0.3);
  const angle = unit() * Math.PI * 2;
  const dx = Math.cos(angle);
  const dy = Math.sin(angle);
  const span = Math.abs(dx) * width + Math.abs(dy) * height || 1;
  const offset = Math.min(0, dx * width) + Math.min(0, dy * height);
  const px = Buffer.allocUnsafe(rowBytes * height);
  if (lead > 0) for (let y = 0; y < height; y++) px.fill(0, y * rowBytes, y * rowBytes + lead);
  const gradient = paintGradient(px, lead, width, height, c1, c2, dx / span, dy / span, -offset / span, reference);

  const minSide = Math.min(width, height);
  const shapes: Shape[] = [];
  for (let n = 3 + (next() % 5); shapes.length < n;) {
    const color = hsl(unit() * 360, 0.5 + unit() * 0.5, 0.35 + unit() * 0.4);
    const alpha = 0.45 + unit() * 0.45;
    const blend = color.map((c) => {
      const table = new Uint8Array(256);
      for (let v = 0; v < 256; v++) table[v] = v * (1 - alpha) + c * alpha;
      return table;
    }) as Shape['blend'];
    shapes.push({ blend, cx: unit() * width, cy: unit() * height, r: minSide * (0.06 + unit() * 0.22), circle: next() % 2 === 0 });
  }
  // One buffer for the blended ramp, reused by each shape in turn.
  const blended = gradient && Buffer.allocUnsafe(gradient.ramp.length);
  for (const [k, s] of shapes.entries()) {
    const y0 = Math.max(0, Math.floor(s.cy - s.r));
    const y1 = Math.min(height - 1, Math.ceil(s.cy + s.r));
    // The ramp under this shape's colour, where the shape's rows take their windows (row starts
    // move monotonically with y): a row's window of it is the shape over the bare gradient.
    if (gradient && blended) {
      const [a, b] = [gradient.rowStart(y0), gradient.rowStart(y1)];
      const from = (Math.min(a, b) + Math.max(0, Math.floor(s.cx - s.r))) * 3;
      const to = (Math.max(a, b) + Math.min(width - 1, Math.ceil(s.cx + s.r)) + 1) * 3;
      blendInto(s.blend, gradient.ramp, blended, from, to);
    }
    for (let y = y0; y <= y1; y++) {
      const [from, to] = shapeSpan(s, y, width);
      if (from > to) continue;
      const row = y * rowBytes + lead;
      if (!gradient || !blended) {
        blendInto(s.blend, px, px, row + from * 3, row + (to + 1) * 3);
        continue;
      }
      // Columns an earlier shape covers on this row: one interval around all of them, blended pixel by pixel.
      let under0 = to + 1;
      let under1 = from - 1;
      for (let e = 0; e < k; e++) {
        const [a, b] = shapeSpan(shapes[e]!, y, width);
        if (a > to || b < from || a > b) continue;
        under0 = Math.min(under0, Math.max(a, from));
        under1 = Math.max(under1, Math.min(b, to));
      }
      const window = gradient.rowStart(y) * 3;
      const copy = (a: number, b: number) => {
        if (a <= b) blended.copy(px, row + a * 3, window + a * 3, window + (b + 1) * 3);
      };
      if (under0 > under1) {
        copy(from, to);
      } else {
        copy(from, under0 - 1);
        blendInto(s.blend, px, px, row + under0 * 3, row + (under1 + 1) * 3);
        copy(under1 + 1, to);
      }
    }
  }
  // A stripe of hash cells along the bottom: different prompts differ visibly even when colours are close.
  const cells = 32;
  const cellW = width / cells;
  const stripeH = Math.max(2, Math.round(height / 40));
  for (let c = 0; c < cells; c++) {
    const v = next() & 1 ? 235 : 20;
    const from = Math.floor(c * cellW);
    const to = Math.floor((c + 1) * cellW);
    for (let y = height - stripeH; y < height; y++) px.fill(v, y * rowBytes + lead + from * 3, y * rowBytes + lead + to * 3);
  }
  return px;
}

/** A gradient painted from a ramp: its pixels, and where row y's window starts in it (in pixels). */
interface Ramp {
  ramp: Buffer;
  rowStart(y: number): number;
}

/**
 * A linear gradient from c1 (t = 0) to c2 (t = 1), t = t0 + x·a + y·b, into rows of `lead` bytes
 * then width × RGB. Each row of such a gradient is a window of one long ramp of pixels, shifted by
 * b / a pixels per row: the ramp is painted once and every row copied from it (rounded to the
 * nearest whole pixel, which moves a colour by less than one level); the ramp is returned. A
 * gradient so close to vertical that the ramp would be huge is painted pixel by pixel, as is every
 * gradient when `direct` (the reference); those return null.
 */
export function paintGradient(
  px: Buffer,
  lead: number,
  width: number,
  height: number,
  c1: Rgb,
  c2: Rgb,
  a: number,
  b: number,
  t0: number,
  direct = false,
): Ramp | null {
  const rowBytes = lead + width * 3;
  const [r1, g1, b1] = c1;
  const dr = c2[0] - r1;
  const dg = c2[1] - g1;
  const db = c2[2] - b1;
  const shift = b / a; // ramp pixels per row
  const first = shift < 0 ? -(height - 1) * shift : 0; // row 0's start in the ramp
  const rampPixels = width + Math.ceil(Math.abs(shift) * (height - 1)) + 1;
  if (direct || !Number.isFinite(shift) || rampPixels > (width * height) / 8) {
    for (let y = 0; y < height; y++) {
      let t = t0 + y * b;
      for (let x = 0, i = y * rowBytes + lead; x < width; x++, i += 3, t += a) {
        px[i] = r1 + dr * t;
        px[i + 1] = g1 + dg * t;
        px[i + 2] = b1 + db * t;
      }
    }
    return null;
  }
  const ramp = Buffer.allocUnsafe(rampPixels * 3);
  for (let j = 0, i = 0; j < rampPixels; j++, i += 3) {
    const t = t0 + (j - first) * a;
    ramp[i] = r1 + dr * t;
    ramp[i + 1] = g1 + dg * t;
    ramp[i + 2] = b1 + db * t;
  }
  const rowStart = (y: number) => Math.round(first + y * shift);
  for (let y = 0; y < height; y++) {
    const from = rowStart(y) * 3;
    ramp.copy(px, y * rowBytes + lead, from, from + width * 3);
  }
  return { ramp, rowStart };
}

function pngChunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'ascii');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(data, crc32(head.subarray(4))), 0);
  return Buffer.concat([head, data, crc]);
}

/** A PNG of scanlines that each start with their filter type byte. */
async function pngOfScanlines(raw: Buffer, width: number, height: number): Promise<Buffer> {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // colour type RGB
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    // Level 3: a third of level 6's time for more bytes (~70 KB for 1024²), which the store takes
    // in no time; the renderer stands in for a remote provider and should not cost more.
    pngChunk('IDAT', await deflateAsync(raw, { level: 3 })),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A colour (ffmpeg 0xRRGGBB) derived from the prompt, for video backgrounds. */
export function hexColor(prompt: string, salt: number): string {
  const [r, g, b] = hsl(byteStream(prompt, salt)() * (360 / 255), 0.8, 0.6);
  return `0x${[r, g, b].map((v) => v.toString(16).padStart(2, '0')).join('')}`;
}
