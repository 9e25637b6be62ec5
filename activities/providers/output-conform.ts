// Outputs conformed after they are stored, so a model's stored output has the same format whatever
// route served it (shared/catalog.ts storedFormat): an image a provider answered as JPEG or WebP
// (BytePlus's Seedream, say) is re-encoded to PNG, which loses nothing of the decoded image and takes
// well under a second. A video is re-encoded only on a route whose frame is not documented
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

/** Image types re-encoded to PNG before the job completes. */
const toPng = new Set(['image/jpeg', 'image/webp']);

/** The key of the PNG an output at `key` is re-encoded into (its extension replaced). */
const pngKeyOf = (key: string): string => key.replace(/\.[^./]+$/, '') + '.png';

/**
 * The stored output as the job keeps it: a JPEG or WebP image re-encoded to PNG next to it (the
 * original removed), with `converted_from` saying what the provider answered. A PNG an earlier
 * attempt already wrote is taken as it is. Anything else is returned unchanged.
 */
export async function conformOutput(
  storage: Storage,
  tools: MediaTools,
  out: JobOutput,
  opts: { signal?: AbortSignal; heartbeat?: () => void; frame?: { width: number; height: number } | undefined } = {},
): Promise<JobOutput> {
  if (opts.frame && out.content_type.startsWith('video/')) return scaleVideo(storage, tools, out, opts.frame, opts);
  if (!toPng.has(out.content_type)) return out;
  const target = pngKeyOf(out.key);
  const dir = await mediaTempDir('output-conform-');
  try {
    const input = join(dir, 'in');
    const output = join(dir, 'out.png');
    await pipeline(await storage.getStream(out.key), createWriteStream(input));
    opts.heartbeat?.();
    const inspected = await inspectUntrusted(input, 'image', 'the provider output', tools, opts.signal);
    await runFfmpegUntrusted(
      ['-y', ...untrustedInputArgs(inspected, tools), ...outputThreadArgs(tools), '-frames:v', '1', '-c:v', 'png', '-f', 'image2', output],
      tools,
      { signal: opts.signal, timeoutMs: 60_000 },
    );
    const bytes = await readFile(output);
    const put = await storage.putStream(target, bytes, 'image/png', bytes.length);
    await storage.remove(out.key);
    return { key: target, content_type: 'image/png', size: put.size, converted_from: out.content_type };
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
 * An output whose original is gone but whose PNG is stored: an earlier attempt converted it and
 * failed before reporting. Undefined when that is not the case.
 */
export async function alreadyConformed(storage: Storage, key: string, contentType: string | undefined): Promise<JobOutput | undefined> {
  if (!contentType || !toPng.has(contentType)) return undefined;
  const st = await storage.stat(pngKeyOf(key));
  return st ? { key: pngKeyOf(key), content_type: 'image/png', size: st.size, converted_from: contentType } : undefined;
}
