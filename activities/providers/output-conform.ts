// Outputs conformed after they are stored, so a model's stored output has the same format whatever
// route served it (shared/catalog.ts storedFormat): an image a provider answered as JPEG or WebP
// (BytePlus's Seedream, say) is re-encoded to PNG, which loses nothing of the decoded image and takes
// well under a second; a job that asked for JPEG or WebP (shared/output-format.ts) has its image
// re-encoded into that format at its quality instead. A video is re-encoded only on a route whose frame is not documented
// (shared/catalog.ts outputFrame: Alibaba's Wan Animate): when its frame is not the asked one it is
// scaled and center-cropped to it; routes that document another frame are never alternates
// (shared/catalog.ts sameOutput). The provider's file is untrusted media: it goes through
// media-tools.ts's inspection and caps.
import { createWriteStream } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { JobOutput } from '../../shared/job-model.js';
import type { Storage } from '../../shared/storage.js';
import { coverFrame, H264_MP4_ARGS, inspectUntrusted, outputThreadArgs, runFfmpegUntrusted, untrustedInputArgs, type MediaTools } from './media-tools.js';
import { mediaTempDir } from './media-sandbox.js';
import { DEFAULT_OUTPUT_QUALITY, imageFormatFiles, type ImageTarget } from '../../shared/output-format.js';

/** Image types the store re-encodes into the job's format (another image type is kept as answered). */
const convertible = new Set(['image/png', 'image/jpeg', 'image/webp']);

/** The key of the file an output at `key` is re-encoded into (its extension replaced). */
const keyWithExt = (key: string, ext: string): string => key.replace(/\.[^./]+$/, '') + '.' + ext;

/** ffmpeg's output arguments for an image format: PNG lossless, JPEG at a qscale from the quality (100 → 2, 1 → 31), WebP at the quality. */
function encoderArgs(target: ImageTarget): string[] {
  const quality = target.quality ?? DEFAULT_OUTPUT_QUALITY;
  switch (target.format) {
    case 'png':
      return ['-c:v', 'png', '-f', 'image2'];
    case 'jpeg':
      return ['-c:v', 'mjpeg', '-pix_fmt', 'yuvj420p', '-q:v', String(2 + Math.round(((100 - quality) * 29) / 99)), '-f', 'image2'];
    case 'webp':
      return ['-c:v', 'libwebp', '-quality', String(quality), '-f', 'webp'];
  }
}

/** Whether an image of `contentType` is re-encoded for `target`: another format, or a quality asked. */
const needsReencode = (contentType: string, target: ImageTarget): boolean =>
  convertible.has(contentType) && (contentType !== imageFormatFiles[target.format].mime || target.quality !== undefined);

/**
 * The stored output as the job keeps it: an image in the job's format (`opts.image`, PNG by default),
 * re-encoded next to the original (the original removed) when the provider answered another format
 * or the job asked a quality, with `converted_from` saying what the provider answered. A file an
 * earlier attempt already wrote is taken as it is. Anything else is returned unchanged.
 */
export async function conformOutput(
  storage: Storage,
  tools: MediaTools,
  out: JobOutput,
  opts: { signal?: AbortSignal; heartbeat?: () => void; frame?: { width: number; height: number } | undefined; image?: ImageTarget | undefined } = {},
): Promise<JobOutput> {
  if (opts.frame && out.content_type.startsWith('video/')) return scaleVideo(storage, tools, out, opts.frame, opts);
  const target = opts.image ?? { format: 'png' };
  if (!needsReencode(out.content_type, target)) return out;
  const { mime, ext } = imageFormatFiles[target.format];
  const targetKey = keyWithExt(out.key, ext);
  const dir = await mediaTempDir('output-conform-');
  try {
    const input = join(dir, 'in');
    const output = join(dir, `out.${ext}`);
    await pipeline(await storage.getStream(out.key), createWriteStream(input));
    opts.heartbeat?.();
    const inspected = await inspectUntrusted(input, 'image', 'the provider output', tools, opts.signal);
    await runFfmpegUntrusted(
      ['-y', ...untrustedInputArgs(inspected, tools), ...outputThreadArgs(tools), '-frames:v', '1', ...encoderArgs(target), output],
      tools,
      {
        signal: opts.signal,
        timeoutMs: 60_000,
      },
    );
    const bytes = await readFile(output);
    const put = await storage.putStream(targetKey, bytes, mime, bytes.length);
    if (targetKey !== out.key) await storage.remove(out.key);
    return { key: targetKey, content_type: mime, size: put.size, converted_from: out.content_type };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The video at `frame` (same key), unless it already is; `scaled_from` says what the provider answered. */
async function scaleVideo(
  storage: Storage,
  tools: MediaTools,
  out: JobOutput,
  frame: { width: number; height: number },
  opts: { signal?: AbortSignal; heartbeat?: () => void },
): Promise<JobOutput> {
  const dir = await mediaTempDir('output-conform-');
  const beat = setInterval(() => opts.heartbeat?.(), 10_000);
  try {
    const input = join(dir, 'in');
    const output = join(dir, 'out.mp4');
    await pipeline(await storage.getStream(out.key), createWriteStream(input));
    const inspected = await inspectUntrusted(input, 'video', 'the provider output', tools, opts.signal);
    if (inspected.width === frame.width && inspected.height === frame.height) return out;
    const { width, height } = frame;
    await runFfmpegUntrusted(
      [
        '-y',
        ...untrustedInputArgs(inspected, tools),
        ...outputThreadArgs(tools),
        '-map',
        '0:v:0',
        '-map',
        '0:a?',
        '-vf',
        coverFrame(width, height),
        ...H264_MP4_ARGS,
        '-c:a',
        'copy',
        '-f',
        'mp4',
        output,
      ],
      tools,
      { signal: opts.signal, timeoutMs: 120_000 + (inspected.durationSeconds ?? 60) * 10_000 },
    );
    const bytes = await readFile(output);
    const put = await storage.putStream(out.key, bytes, 'video/mp4', bytes.length);
    return { key: out.key, content_type: 'video/mp4', size: put.size, scaled_from: `${inspected.width}x${inspected.height}` };
  } finally {
    clearInterval(beat);
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * An output whose original is gone but whose re-encoded file (in the job's format) is stored: an
 * earlier attempt converted it and failed before reporting. Undefined when that is not the case.
 */
export async function alreadyConformed(
  storage: Storage,
  key: string,
  contentType: string | undefined,
  target: ImageTarget = { format: 'png' },
): Promise<JobOutput | undefined> {
  if (!contentType || !needsReencode(contentType, target)) return undefined;
  const { mime, ext } = imageFormatFiles[target.format];
  const targetKey = keyWithExt(key, ext);
  if (targetKey === key) return undefined;
  const st = await storage.stat(targetKey);
  return st ? { key: targetKey, content_type: mime, size: st.size, converted_from: contentType } : undefined;
}
