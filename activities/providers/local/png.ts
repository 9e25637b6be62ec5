// The local renderer's pure image code: a deterministic picture from a prompt and a seed, and a
// PNG encoder (zlib only: no binary, no I/O). The ffmpeg and espeak-ng runners are media.ts.
import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';

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

/** Raw RGB pixels: a two-colour gradient at an angle plus a few translucent shapes, all from the hash. */
export function renderImagePixels(prompt: string, width: number, height: number, seed = 0): Buffer {
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
  const px = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const t = (x * dx + y * dy - offset) / span;
      const i = (y * width + x) * 3;
      px[i] = c1[0] + (c2[0] - c1[0]) * t;
      px[i + 1] = c1[1] + (c2[1] - c1[1]) * t;
      px[i + 2] = c1[2] + (c2[2] - c1[2]) * t;
    }
  }
  const minSide = Math.min(width, height);
  const shapes = 3 + (next() % 5);
  for (let s = 0; s < shapes; s++) {
    const color = hsl(unit() * 360, 0.5 + unit() * 0.5, 0.35 + unit() * 0.4);
    const alpha = 0.45 + unit() * 0.45;
    const cx = unit() * width;
    const cy = unit() * height;
    const r = minSide * (0.06 + unit() * 0.22);
    const circle = next() % 2 === 0;
    const x0 = Math.max(0, Math.floor(cx - r));
    const x1 = Math.min(width - 1, Math.ceil(cx + r));
    const y0 = Math.max(0, Math.floor(cy - r));
    const y1 = Math.min(height - 1, Math.ceil(cy + r));
    for (let y = y0; y <= y1; y++) {
      for (let x = x0; x <= x1; x++) {
        if (circle && (x - cx) ** 2 + (y - cy) ** 2 > r * r) continue;
        const i = (y * width + x) * 3;
        px[i] = px[i]! + (color[0] - px[i]!) * alpha;
        px[i + 1] = px[i + 1]! + (color[1] - px[i + 1]!) * alpha;
        px[i + 2] = px[i + 2]! + (color[2] - px[i + 2]!) * alpha;
      }
    }
  }
  // A stripe of hash cells along the bottom: different prompts differ visibly even when colours are close.
  const cells = 32;
  const cellW = width / cells;
  const stripeH = Math.max(2, Math.round(height / 40));
  for (let c = 0; c < cells; c++) {
    const v = next() & 1 ? 235 : 20;
    for (let y = height - stripeH; y < height; y++) {
      for (let x = Math.floor(c * cellW); x < Math.floor((c + 1) * cellW); x++) px.fill(v, (y * width + x) * 3, (y * width + x) * 3 + 3);
    }
  }
  return px;
}

const crcTable = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32(buf: Buffer): number {
  let c = 0xffffffff;
  for (let i = 0; i < buf.length; i++) c = crcTable[(c ^ buf[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'ascii');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

/** Encodes 8-bit RGB pixels as a PNG (filter type 0 per row). */
export function encodePng(rgb: Buffer, width: number, height: number): Buffer {
  const stride = width * 3;
  const raw = Buffer.alloc((stride + 1) * height);
  for (let y = 0; y < height; y++) rgb.copy(raw, y * (stride + 1) + 1, y * stride, (y + 1) * stride);
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // colour type RGB
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', deflateSync(raw, { level: 6 })),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A colour (ffmpeg 0xRRGGBB) derived from the prompt, for video backgrounds. */
export function hexColor(prompt: string, salt: number): string {
  const [r, g, b] = hsl(byteStream(prompt, salt)() * (360 / 255), 0.8, 0.6);
  return `0x${[r, g, b].map((v) => v.toString(16).padStart(2, '0')).join('')}`;
}
