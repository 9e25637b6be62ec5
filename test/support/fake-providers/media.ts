// Media of the shape a provider documents for a request, for the fakes to answer with when a test
// asks for it (`documentedMedia.on`): an image of the asked pixel size in the provider's format, or a
// one-second MP4 at the asked frame. Rendered by ffmpeg once per shape. Off, the fakes answer their
// tiny placeholder, which keeps the other suites fast.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface MediaShape {
  format: 'png' | 'jpeg' | 'webp' | 'mp4';
  width: number;
  height: number;
}

/** Whether the fakes answer media of the documented shape, and the files they named, by URL path. */
export const documentedMedia = { on: false, files: new Map<string, MediaShape | Promise<MediaShape | undefined>>() };

/** Notes the shape of a file a fake named in an answer (only while `documentedMedia.on`). */
export function noteFile(path: string, shape: MediaShape | Promise<MediaShape | undefined> | undefined): void {
  if (documentedMedia.on && shape) documentedMedia.files.set(path, shape);
}

/**
 * The frame of a video that follows an input video (Wan Animate's output follows its motion video),
 * at a resolution label: the input's aspect ratio with the label as its short side. Undefined when
 * the input cannot be read.
 */
export async function followingFrame(videoUrl: unknown, resolution: string): Promise<MediaShape | undefined> {
  if (!documentedMedia.on || typeof videoUrl !== 'string') return undefined;
  const dir = await mkdtemp(join(tmpdir(), 'fake-probe-'));
  try {
    const res = await fetch(videoUrl);
    if (!res.ok) return undefined;
    await writeFile(join(dir, 'in'), Buffer.from(await res.arrayBuffer()));
    const { stdout } = await run(process.env.FFPROBE_PATH ?? 'ffprobe', [
      '-v',
      'error',
      '-select_streams',
      'v:0',
      '-show_entries',
      'stream=width,height',
      '-of',
      'csv=p=0',
      join(dir, 'in'),
    ]);
    const [w, h] = stdout.trim().split(',').map(Number) as [number, number];
    const short = Number.parseInt(resolution, 10);
    const even = (n: number) => Math.round(n / 2) * 2;
    return w <= h ? { format: 'mp4', width: short, height: even((short * h) / w) } : { format: 'mp4', width: even((short * w) / h), height: short };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The frame of a video at an aspect ratio and resolution label: the label is the short side, as the providers' pages give it. */
export function documentedFrame(aspectRatio: unknown, resolution: unknown): { width: number; height: number } | undefined {
  if (typeof aspectRatio !== 'string' || typeof resolution !== 'string') return undefined;
  const short = Number.parseInt(resolution, 10);
  const [w, h] = aspectRatio.split(':').map(Number);
  if (!short || !w || !h) return undefined;
  const even = (n: number) => Math.round(n / 2) * 2;
  if (w === h) return { width: short, height: short };
  return w > h ? { width: even((short * w) / h), height: short } : { width: short, height: even((short * h) / w) };
}

/** "2560x1440" as a size. */
export function sizeOf(size: unknown): { width: number; height: number } | undefined {
  const m = typeof size === 'string' ? /^(\d+)x(\d+)$/.exec(size) : null;
  return m ? { width: Number(m[1]), height: Number(m[2]) } : undefined;
}

const rendered = new Map<string, Promise<Buffer>>();

/** The bytes of a file of this shape (rendered once). */
export function shapedMedia(shape: MediaShape): Promise<Buffer> {
  const key = `${shape.format}:${shape.width}x${shape.height}`;
  let bytes = rendered.get(key);
  if (!bytes) {
    bytes = render(shape);
    rendered.set(key, bytes);
  }
  return bytes;
}

async function render({ format, width, height }: MediaShape): Promise<Buffer> {
  const dir = await mkdtemp(join(tmpdir(), 'fake-media-'));
  const out = join(dir, `out.${format}`);
  const ffmpeg = process.env.FFMPEG_PATH ?? 'ffmpeg';
  const source = ['-f', 'lavfi', '-i', `testsrc2=s=${width}x${height}:r=10:d=1`];
  const encode: Record<MediaShape['format'], string[]> = {
    png: ['-frames:v', '1', '-c:v', 'png', '-f', 'image2'],
    jpeg: ['-frames:v', '1', '-c:v', 'mjpeg', '-pix_fmt', 'yuvj420p', '-f', 'image2'],
    webp: ['-frames:v', '1', '-c:v', 'libwebp', '-f', 'image2'],
    mp4: ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-movflags', '+faststart', '-f', 'mp4'],
  };
  try {
    await run(ffmpeg, ['-hide_banner', '-loglevel', 'error', '-y', ...source, '-threads', '1', ...encode[format], out]);
    return await readFile(out);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
