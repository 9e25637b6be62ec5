// Decodes a PNG (8-bit RGB or RGBA, not interlaced: what Chromium's screenshots and the local
// renderer write) into pixels, and summarises a picture as its mean colour and spread, so a browser
// test can check what was rendered without an image library.
import { inflateSync } from 'node:zlib';

export interface Pixels {
  width: number;
  height: number;
  /** RGBA, 4 bytes a pixel, rows top to bottom. */
  rgba: Buffer;
}

export function decodePng(png: Buffer): Pixels {
  if (png.readUInt32BE(0) !== 0x89504e47) throw new Error('not a PNG');
  let width = 0;
  let height = 0;
  let colorType = 0;
  const idat: Buffer[] = [];
  for (let at = 8; at < png.length;) {
    const length = png.readUInt32BE(at);
    const type = png.toString('latin1', at + 4, at + 8);
    const data = png.subarray(at + 8, at + 8 + length);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      colorType = data[9]!;
      if (data[8] !== 8 || data[12] !== 0 || (colorType !== 2 && colorType !== 6)) throw new Error('only 8-bit RGB/RGBA PNGs without interlace');
    } else if (type === 'IDAT') idat.push(data);
    at += 12 + length;
  }
  const channels = colorType === 6 ? 4 : 3;
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const out = Buffer.alloc(width * height * 4);
  let prev = Buffer.alloc(stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const line = Buffer.from(raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1)));
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? line[x - channels]! : 0;
      const b = prev[x]!;
      const c = x >= channels ? prev[x - channels]! : 0;
      const p = a + b - c;
      const pa = Math.abs(p - a);
      const pb = Math.abs(p - b);
      const pc = Math.abs(p - c);
      const predictor = [0, a, b, (a + b) >> 1, pa <= pb && pa <= pc ? a : pb <= pc ? b : c][filter];
      if (predictor === undefined) throw new Error(`unknown PNG filter ${filter}`);
      line[x] = (line[x]! + predictor) & 0xff;
    }
    for (let x = 0; x < width; x++) {
      line.copy(out, (y * width + x) * 4, x * channels, x * channels + 3);
      out[(y * width + x) * 4 + 3] = channels === 4 ? line[x * channels + 3]! : 255;
    }
    prev = line;
  }
  return { width, height, rgba: out };
}

/** Mean red, green and blue, and the mean distance of each pixel from that mean (0 for one flat colour). */
export function colourSummary(p: Pixels): { mean: [number, number, number]; spread: number } {
  const n = p.width * p.height;
  const sum = [0, 0, 0];
  for (let i = 0; i < n; i++) for (let c = 0; c < 3; c++) sum[c]! += p.rgba[i * 4 + c]!;
  const mean = sum.map((s) => s / n) as [number, number, number];
  let spread = 0;
  for (let i = 0; i < n; i++) spread += Math.hypot(...mean.map((m, c) => p.rgba[i * 4 + c]! - m));
  return { mean, spread: spread / n };
}
