// Inputs conformed before a live provider sees them, so what it delivers is what was asked (and
// priced). Wan Animate Replace follows its motion video's length and shape and takes no duration or
// aspect ratio: the motion video is trimmed, or padded by holding its last frame, to the asked duration,
// and scaled and center-cropped to the asked aspect ratio at the route's resolution. InfiniteTalk
// follows its image's shape, so the talking actor's image is center-cropped to the asked aspect ratio.
// The inputs are the tenant's files: they go through media-tools.ts's inspection and caps.
import { createWriteStream } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { frameSize } from '../../shared/catalog.js';
import {
  coverFrame,
  defaultMediaTools,
  H264_MP4_ARGS,
  inspectUntrusted,
  outputThreadArgs,
  runFfmpegUntrusted,
  untrustedInputArgs,
  UntrustedMediaError,
  type MediaTools,
} from './media-tools.js';
import type { MediaKind } from '../../shared/media/type.js';
import { ProviderError, type InputFile, type ProviderContext, type ProviderRequest } from './types.js';
import { mediaTempDir } from './media-sandbox.js';

/** The replace-actor motion video at exactly the asked duration and aspect ratio (stored once per job and shape). */
export async function conformMotionVideo(
  req: ProviderRequest,
  video: InputFile,
  ctx: ProviderContext,
  tools: MediaTools = defaultMediaTools,
): Promise<InputFile> {
  const seconds = req.duration ?? req.route.defaultDuration ?? 30;
  const { width, height } = frameSize(req.aspectRatio ?? req.route.defaultAspectRatio, req.resolution ?? req.route.defaultResolution);
  const key = `${ctx.storage.jobMediaPrefix(req.jobId)}/motion-${seconds}s-${width}x${height}.mp4`;
  const filter = `${coverFrame(width, height)},tpad=stop_mode=clone:stop_duration=${seconds}`;
  await transcodeOnce(
    ctx,
    tools,
    { key: video.key, kind: 'video', what: 'the motion video' },
    key,
    'video/mp4',
    120_000 + seconds * 10_000,
    (input, output) => [...input, ...outputThreadArgs(tools), '-vf', filter, '-t', String(seconds), '-an', ...H264_MP4_ARGS, '-f', 'mp4', output],
  );
  return { role: 'video', key, contentType: 'video/mp4' };
}

/** The talking actor's image center-cropped to the asked aspect ratio (InfiniteTalk keeps the image's shape). */
export async function conformActorImage(
  req: ProviderRequest,
  image: InputFile,
  ctx: ProviderContext,
  tools: MediaTools = defaultMediaTools,
): Promise<InputFile> {
  const { width, height } = frameSize(req.aspectRatio ?? req.route.defaultAspectRatio, req.resolution ?? req.route.defaultResolution);
  const key = `${ctx.storage.jobMediaPrefix(req.jobId)}/actor-${width}x${height}.png`;
  await transcodeOnce(ctx, tools, { key: image.key, kind: 'image', what: "the actor's image" }, key, 'image/png', 60_000, (input, output) => [
    ...input,
    ...outputThreadArgs(tools),
    '-vf',
    coverFrame(width, height),
    '-frames:v',
    '1',
    '-c:v',
    'png',
    '-f',
    'image2',
    output,
  ]);
  return { role: 'actor_image', key, contentType: 'image/png' };
}

/**
 * Runs ffmpeg on a stored tenant file into `targetKey`, unless an earlier attempt already stored it;
 * heartbeats meanwhile. The file is inspected first (type from its bytes, frame size and length
 * within the caps); a refusal or a failed run fails the job, naming the input and never our paths.
 */
async function transcodeOnce(
  ctx: ProviderContext,
  tools: MediaTools,
  source: { key: string; kind: MediaKind; what: string },
  targetKey: string,
  contentType: string,
  timeoutMs: number,
  args: (input: string[], output: string) => string[],
): Promise<void> {
  if (await ctx.storage.stat(targetKey)) return; // a retried submit: already done
  const dir = await mediaTempDir('conform-');
  const beat = setInterval(() => ctx.heartbeat({ phase: 'conform-input' }), 10_000);
  try {
    const inputPath = join(dir, 'in');
    const output = join(dir, 'out');
    await pipeline(await ctx.storage.getStream(source.key), createWriteStream(inputPath));
    try {
      const input = await inspectUntrusted(inputPath, source.kind, source.what, tools, ctx.signal);
      await runFfmpegUntrusted(['-y', ...args(untrustedInputArgs(input, tools), output)], tools, { signal: ctx.signal, timeoutMs });
    } catch (err) {
      if (ctx.signal.aborted) throw err;
      throw new ProviderError(err instanceof UntrustedMediaError ? err.message : `${source.what} could not be decoded`, { retryable: false });
    }
    const bytes = await readFile(output);
    await ctx.storage.putStream(targetKey, bytes, contentType, bytes.length);
  } finally {
    clearInterval(beat);
    await rm(dir, { recursive: true, force: true });
  }
}
