// A presenter over a background video: the talking actor's clip, as its provider delivered it and
// once it is in our store, composited in front of the job's background video (the customer's upload
// or fetched URL) by ffmpeg on the worker, so every route of the kind gives the same picture. No
// provider of the kind returns an alpha matte (InfiniteTalk and the local renderer answer an opaque
// MP4 of the actor in their own scene), so the presenter is a picture in picture in the lower right
// corner. The background fills the frame (scaled and center-cropped to the job's aspect ratio), is
// looped or cut to the presenter's length, and its own sound is dropped: the output's audio is the
// presenter's, i.e. the speech, and the output ends with it. Both files are untrusted media: they go
// through media-tools.ts's inspection and caps.
import { createWriteStream } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { JobOutput } from '../../shared/job-model.js';
import type { Storage } from '../../shared/storage.js';
import {
  coverFrame,
  H264_MP4_ARGS,
  inspectUntrusted,
  outputThreadArgs,
  runFfmpegUntrusted,
  untrustedInputArgs,
  UntrustedMediaError,
  type MediaTools,
} from './media-tools.js';
import { mediaTempDir } from './media-sandbox.js';

/** The composite's frame rate: InfiniteTalk's own (providers/fal/contract.ts infinitalkFps), above the local renderer's. */
const COMPOSITE_FPS = 25;

/** The part of each side of the frame the presenter's box takes, and its margin from the corner (of the short side). */
const PIP_SCALE = 0.42;
const PIP_MARGIN = 0.04;

const even = (n: number) => Math.max(2, Math.round(n / 2) * 2);

/**
 * Where the presenter sits in a frame: a box of PIP_SCALE of each side in the lower right corner.
 * A presenter of the frame's own aspect ratio (every route conforms it) fills the box exactly.
 */
export function presenterBox(frame: { width: number; height: number }): { x: number; y: number; width: number; height: number } {
  const width = even(frame.width * PIP_SCALE);
  const height = even(frame.height * PIP_SCALE);
  const margin = even(Math.min(frame.width, frame.height) * PIP_MARGIN);
  return { x: frame.width - width - margin, y: frame.height - height - margin, width, height };
}

/**
 * The key the presenter's own clip is kept at beside output `key` (`presenter-<n>` for `output-<n>`):
 * the composite replaces the output, so a retried step composites from this copy, never from a
 * composite. It is job media like the rest: removed with the job's prefix.
 */
export const presenterKeyOf = (key: string): string => key.replace(/\/output-(\d+)(\.[^./]+)?$/, '/presenter-$1$2');

/** A composite refused for one of its inputs: the message names it, never a path or the tool's output. */
export class CompositeError extends Error {
  override name = 'CompositeError';
  constructor(
    readonly input: 'background' | 'presenter',
    message: string,
  ) {
    super(message);
  }
}

/**
 * Replaces the stored presenter clip at `out.key` by the presenter over `backgroundKey` at `frame`
 * (same key, video/mp4). `fresh`: the clip at `out.key` was just stored from the provider, so it is
 * the presenter (kept as presenterKeyOf); otherwise an earlier attempt may already have replaced it,
 * and the kept presenter copy is composited when there is one.
 */
export async function compositeOverBackground(
  storage: Storage,
  tools: MediaTools,
  out: JobOutput,
  backgroundKey: string,
  frame: { width: number; height: number },
  opts: { fresh: boolean; signal?: AbortSignal; heartbeat?: () => void },
): Promise<JobOutput> {
  const presenterKey = presenterKeyOf(out.key);
  if (opts.fresh || !(await storage.stat(presenterKey))) await storage.copy(out.key, presenterKey);
  const dir = await mediaTempDir('background-');
  const beat = setInterval(() => opts.heartbeat?.(), 10_000);
  try {
    const presenterPath = join(dir, 'presenter');
    const backgroundPath = join(dir, 'background');
    const output = join(dir, 'out.mp4');
    await pipeline(await storage.getStream(presenterKey), createWriteStream(presenterPath));
    await pipeline(await storage.getStream(backgroundKey), createWriteStream(backgroundPath));
    opts.heartbeat?.();
    const presenter = await inspected(presenterPath, 'presenter', 'the presenter video', tools, opts.signal);
    const background = await inspected(backgroundPath, 'background', 'the background video', tools, opts.signal);
    const { width, height } = frame;
    const box = presenterBox(frame);
    const filters = [
      `[0:v]fps=${COMPOSITE_FPS},${coverFrame(width, height)}[bg]`,
      `[1:v]scale=${box.width}:${box.height}:force_original_aspect_ratio=decrease,setsar=1[fg]`,
      // Right-aligned and bottom-aligned in the box; the background is endless (looped), so the presenter ends the video.
      `[bg][fg]overlay=x=${box.x + box.width}-overlay_w:y=${box.y + box.height}-overlay_h:shortest=1,format=yuv420p[v]`,
    ];
    try {
      await runFfmpegUntrusted(
        [
          '-y',
          '-stream_loop',
          '-1',
          ...untrustedInputArgs(background, tools),
          ...untrustedInputArgs(presenter, tools),
          ...outputThreadArgs(tools),
          '-filter_complex',
          filters.join(';'),
          '-map',
          '[v]',
          // The speech, as the provider mixed it into the presenter's clip (none when the clip has none).
          '-map',
          '1:a:0?',
          '-c:a',
          'copy',
          ...H264_MP4_ARGS,
          // Ends with the shorter of the presenter's picture and its speech.
          '-shortest',
          '-f',
          'mp4',
          output,
        ],
        tools,
        { signal: opts.signal, timeoutMs: 120_000 + (presenter.durationSeconds ?? 60) * 10_000 },
      );
    } catch (err) {
      if (opts.signal?.aborted) throw err;
      throw new CompositeError('background', 'the presenter could not be composited over the background video (unreadable or unsupported media)');
    }
    const bytes = await readFile(output);
    const put = await storage.putStream(out.key, bytes, 'video/mp4', bytes.length);
    return { key: out.key, content_type: 'video/mp4', size: put.size };
  } finally {
    clearInterval(beat);
    await rm(dir, { recursive: true, force: true });
  }
}

async function inspected(path: string, input: CompositeError['input'], what: string, tools: MediaTools, signal: AbortSignal | undefined) {
  try {
    return await inspectUntrusted(path, 'video', what, tools, signal);
  } catch (err) {
    if (err instanceof UntrustedMediaError) throw new CompositeError(input, err.message);
    throw err;
  }
}
