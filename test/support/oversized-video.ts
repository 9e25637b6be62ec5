// A decompression bomb for video inputs: a valid, tiny H.264 MP4 made with ffmpeg whose sequence
// parameter set (and sample entry) is rewritten to declare frames of any size, e.g. 30,000×30,000.
// ffprobe reports the declared size; a decoder that trusts it allocates frames of that size.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runTool } from '../../activities/providers/local/media.js';

/** An MP4 of a second of 64×64 H.264 that declares width×height frames (multiples of 16). */
export async function oversizedMp4(width: number, height: number, ffmpegPath = 'ffmpeg'): Promise<Buffer> {
  if (width % 16 || height % 16) throw new RangeError('width and height must be multiples of 16 (whole macroblocks, no cropping)');
  const dir = await mkdtemp(join(tmpdir(), 'oversized-'));
  try {
    const out = join(dir, 'small.mp4');
    // Baseline profile keeps the SPS simple; no +faststart, so the moov box follows the media data
    // and growing it moves no chunk offset.
    await runTool(ffmpegPath, [
      '-hide_banner',
      '-loglevel',
      'error',
      '-y',
      '-f',
      'lavfi',
      '-i',
      'color=c=red:s=64x64:r=5:d=1',
      '-c:v',
      'libx264',
      '-profile:v',
      'baseline',
      '-pix_fmt',
      'yuv420p',
      '-f',
      'mp4',
      out,
    ]);
    return declareFrameSize(await readFile(out), width, height);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Rewrites the avc1 sample entry's and the SPS's frame size of an MP4 with one H.264 track. */
export function declareFrameSize(mp4: Buffer, width: number, height: number): Buffer {
  const stsd = mp4.indexOf('stsd');
  const avc1 = mp4.indexOf('avc1', stsd);
  const avcC = mp4.indexOf('avcC', avc1);
  if (stsd < 0 || avc1 < 0 || avcC < 0) throw new Error('not an MP4 with an avc1 sample entry');
  const b = Buffer.from(mp4);
  // Sample entry: 6 reserved, data reference index (2), 16 pre-defined/reserved, then width, height.
  b.writeUInt16BE(width, avc1 + 4 + 24);
  b.writeUInt16BE(height, avc1 + 4 + 26);
  // avcC: version, profile, compatibility, level, length size (4 bytes after the type, then one),
  // the SPS count, then each SPS as a 16-bit length and the NAL unit.
  let p = avcC + 4 + 5;
  if ((b[p]! & 31) !== 1) throw new Error('expected exactly one SPS');
  p += 1;
  const length = b.readUInt16BE(p);
  const sps = b.subarray(p + 2, p + 2 + length);
  const patched = patchSps(sps, width, height);
  const delta = patched.length - sps.length;
  const out = Buffer.concat([b.subarray(0, p), u16(patched.length), patched, b.subarray(p + 2 + length)]);
  // Every box enclosing the SPS grows by delta.
  for (const type of ['moov', 'trak', 'mdia', 'minf', 'stbl', 'stsd', 'avc1', 'avcC']) {
    const at = out.lastIndexOf(type, avcC) - 4;
    out.writeUInt32BE(out.readUInt32BE(at) + delta, at);
  }
  return out;
}

const u16 = (n: number) => {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n);
  return b;
};

class BitReader {
  pos = 0;
  constructor(private readonly bytes: Uint8Array) {}
  get remaining(): number {
    return this.bytes.length * 8 - this.pos;
  }
  u(n: number): number {
    let v = 0;
    for (let i = 0; i < n; i++, this.pos++) v = v * 2 + ((this.bytes[this.pos >> 3]! >> (7 - (this.pos & 7))) & 1);
    return v;
  }
  ue(): number {
    let zeros = 0;
    while (this.u(1) === 0) zeros++;
    return 2 ** zeros - 1 + this.u(zeros);
  }
}

class BitWriter {
  bits: number[] = [];
  u(n: number, v: number): void {
    for (let i = n - 1; i >= 0; i--) this.bits.push(Math.floor(v / 2 ** i) % 2);
  }
  ue(v: number): void {
    const n = (v + 1).toString(2).length;
    this.u(n - 1, 0);
    this.u(n, v + 1);
  }
  bytes(): Buffer {
    while (this.bits.length % 8) this.bits.push(0);
    const out = Buffer.alloc(this.bits.length / 8);
    for (let i = 0; i < out.length; i++) out[i] = parseInt(this.bits.slice(i * 8, i * 8 + 8).join(''), 2);
    return out;
  }
}

/** The RBSP of a NAL unit payload (emulation prevention bytes removed), and back. */
function unescapeRbsp(b: Uint8Array): Buffer {
  const out: number[] = [];
  let zeros = 0;
  for (const x of b) {
    if (zeros >= 2 && x === 3) {
      zeros = 0;
      continue;
    }
    out.push(x);
    zeros = x === 0 ? zeros + 1 : 0;
  }
  return Buffer.from(out);
}
function escapeRbsp(b: Uint8Array): Buffer {
  const out: number[] = [];
  let zeros = 0;
  for (const x of b) {
    if (zeros >= 2 && x <= 3) {
      out.push(3);
      zeros = 0;
    }
    out.push(x);
    zeros = x === 0 ? zeros + 1 : 0;
  }
  return Buffer.from(out);
}

const highProfiles = new Set([100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135]);

/** An SPS NAL unit with pic_width_in_mbs / pic_height_in_map_units replaced (progressive frames). */
function patchSps(nal: Uint8Array, width: number, height: number): Buffer {
  const r = new BitReader(unescapeRbsp(nal.subarray(1)));
  const w = new BitWriter();
  const copy = (n: number) => {
    const v = r.u(n);
    w.u(n, v);
    return v;
  };
  const copyUe = () => {
    const v = r.ue();
    w.ue(v);
    return v;
  };
  const profile = copy(8);
  copy(8); // constraint flags
  copy(8); // level
  copyUe(); // seq_parameter_set_id
  if (highProfiles.has(profile)) {
    if (copyUe() === 3) copy(1); // chroma_format_idc, separate_colour_plane_flag
    copyUe(); // bit_depth_luma_minus8
    copyUe(); // bit_depth_chroma_minus8
    copy(1); // qpprime_y_zero_transform_bypass_flag
    if (copy(1)) throw new Error('SPS scaling matrices are not supported here');
  }
  copyUe(); // log2_max_frame_num_minus4
  const pocType = copyUe();
  if (pocType === 0) copyUe();
  else if (pocType === 1) throw new Error('pic_order_cnt_type 1 is not supported here');
  copyUe(); // max_num_ref_frames
  copy(1); // gaps_in_frame_num_value_allowed_flag
  r.ue();
  r.ue();
  w.ue(width / 16 - 1);
  w.ue(height / 16 - 1);
  while (r.remaining > 0) copy(1); // the rest, trailing bits included
  // The copied trailing bits end the RBSP; drop a byte of padding zeros the writer may add after them.
  const rbsp = w.bytes();
  let end = rbsp.length;
  while (end > 1 && rbsp[end - 1] === 0) end--;
  return Buffer.concat([Buffer.from([nal[0]!]), escapeRbsp(rbsp.subarray(0, end))]);
}
