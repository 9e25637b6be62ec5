// The local renderer's media functions: real images, videos, speech and composites derived from
// the request, made offline with the pure-JS PNG encoder (png.ts), ffmpeg/ffprobe and espeak-ng. Pure
// functions (no Temporal, no database) so the seed script can use them too. Tenant inputs (stills,
// motion videos) are read only through media-tools.ts: inspected first, then decoded under its caps.
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { hexColor, renderImagePng } from './png.js';
import {
  coverFrame,
  defaultMediaTools,
  inspectUntrusted,
  outputThreadArgs,
  runFfmpegUntrusted,
  runTool,
  untrustedInputArgs,
  type MediaTools,
  type UntrustedInput,
} from '../media-tools.js';

export { paintGradient, renderImagePixels, renderImagePng } from './png.js';
export { synthesizeSpeech, wavDuration } from './speech.js';
export { probeMedia, type MediaInfo } from './probe.js';
import { renderRun } from './render-run.js';
import { mediaTempDir } from '../media-sandbox.js';
export { MAX_INPUT_PIXELS, MediaToolError, runTool, UntrustedMediaError } from '../media-tools.js';

/** Frame rate of rendered videos: low, because the content is simple and the machines are small. */
const VIDEO_FPS = 15;
/** Stills are downscaled to fit this square before any render loops them, so every frame is cheap. */
export const MAX_STILL_SIDE = 2048;

/** `-i path` for a still this module wrote itself (a PNG from normalizeStill or renderImage), looped. */
function ownStill(path: string, fps: number, durationSeconds?: number): string[] {
  return [
    '-loop',
    '1',
    '-framerate',
    String(fps),
    ...(durationSeconds === undefined ? [] : ['-t', seconds(durationSeconds)]),
    '-f',
    'image2',
    '-c:v',
    'png',
    '-i',
    path,
  ];
}

const X264_ARGS = ['-c:v', 'libx264', '-preset', 'ultrafast', '-tune', 'stillimage', '-pix_fmt', 'yuv420p', '-movflags', '+faststart'];

/** The tools and caps of a render: `media` when the caller has them (the adapter), else the defaults with `ffmpegPath`. */
function toolsOf(opts: { ffmpegPath?: string | undefined; media?: MediaTools | undefined }): MediaTools {
  return opts.media ?? { ...defaultMediaTools, ffmpegPath: opts.ffmpegPath ?? defaultMediaTools.ffmpegPath };
}

// ---------------------------------------------------------------- images

/** An image of exactly width×height whose content is a deterministic function of prompt and seed. */
export async function renderImage(opts: {
  prompt: string;
  width: number;
  height: number;
  seed?: number;
  format?: 'png' | 'jpeg';
  ffmpegPath?: string;
  signal?: AbortSignal;
}): Promise<Buffer> {
  const { width, height } = opts;
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1 || width * height > 16_777_216) {
    throw new RangeError(`invalid image size ${width}x${height}`);
  }
  const png = await renderImagePng(opts.prompt, width, height, opts.seed ?? 0);
  if ((opts.format ?? 'png') === 'png') return png;
  return runTool(
    opts.ffmpegPath ?? 'ffmpeg',
    [
      '-hide_banner',
      '-loglevel',
      'error',
      '-f',
      'png_pipe',
      '-i',
      'pipe:0',
      '-frames:v',
      '1',
      '-c:v',
      'mjpeg',
      '-q:v',
      '3',
      '-pix_fmt',
      'yuvj420p',
      '-fflags',
      '+bitexact',
      '-flags',
      '+bitexact',
      '-f',
      'image2pipe',
      'pipe:1',
    ],
    { stdin: png, stdout: true, ...(opts.signal ? { signal: opts.signal } : {}) },
  );
}

// ---------------------------------------------------------------- videos

/** Scale an image into the frame keeping its aspect ratio, padding the rest. */
function fitFilter(width: number, height: number, pad = 'black'): string {
  return `scale=${width}:${height}:force_original_aspect_ratio=decrease,pad=${width}:${height}:(ow-iw)/2:(oh-ih)/2:color=${pad},setsar=1`;
}

function seconds(n: number): string {
  return n.toFixed(3);
}

/**
 * Decodes the first frame of a tenant's image into a PNG in `dir`, downscaled to fit MAX_STILL_SIDE.
 * A looped image input that cannot be decoded makes ffmpeg retry forever, so inputs are checked this
 * way first, which fails fast; an image declaring more pixels than the cap is refused by the
 * inspection before anything decodes it.
 */
export async function normalizeStill(path: string, dir: string, name: string, tools: MediaTools, signal?: AbortSignal): Promise<string> {
  const out = join(dir, `${name}.png`);
  const fit = `scale='min(iw,${MAX_STILL_SIDE})':'min(ih,${MAX_STILL_SIDE})':force_original_aspect_ratio=decrease`;
  const input = await inspectUntrusted(path, 'image', `the ${name} image`, tools, signal);
  await runFfmpegUntrusted(
    ['-y', ...untrustedInputArgs(input, tools), ...outputThreadArgs(tools), '-frames:v', '1', '-vf', fit, '-c:v', 'png', '-f', 'image2', out],
    tools,
    renderRun(signal),
  );
  return out;
}

/** Inspects a tenant's video and fails fast when it has no decodable video frame. */
async function checkVideo(path: string, tools: MediaTools, signal?: AbortSignal): Promise<UntrustedInput> {
  const input = await inspectUntrusted(path, 'video', 'the motion video', tools, signal);
  await runFfmpegUntrusted(
    [...untrustedInputArgs(input, tools), ...outputThreadArgs(tools), '-map', '0:v:0', '-frames:v', '1', '-f', 'null', '-'],
    tools,
    renderRun(signal),
  );
  return input;
}

async function withTempDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mediaTempDir('media-');
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * An H.264 MP4 of exactly `durationSeconds` at width×height. Without a start frame the background is
 * the prompt's image with a slow hue rotation; a start frame is used as the background and an end
 * frame cross-fades in over the duration; references are cycled in a corner; a marker whose colour
 * comes from the prompt moves across the frame.
 */
export async function renderVideo(opts: {
  prompt: string;
  width: number;
  height: number;
  durationSeconds: number;
  outPath: string;
  startFrame?: string;
  endFrame?: string;
  references?: string[];
  ffmpegPath?: string;
  media?: MediaTools;
  fps?: number;
  signal?: AbortSignal;
}): Promise<void> {
  const { width, height, durationSeconds: d } = opts;
  if (!(d > 0)) throw new RangeError(`invalid duration ${d}`);
  const fps = opts.fps ?? VIDEO_FPS;
  const tools = toolsOf(opts);
  const ffmpeg = tools.ffmpegPath;
  await withTempDir(async (dir) => {
    let background = opts.startFrame && (await normalizeStill(opts.startFrame, dir, 'start', tools, opts.signal));
    const endFrame = opts.endFrame && (await normalizeStill(opts.endFrame, dir, 'end', tools, opts.signal));
    const refs: string[] = [];
    for (const [i, ref] of (opts.references ?? []).entries()) refs.push(await normalizeStill(ref, dir, `ref-${i}`, tools, opts.signal));
    if (!background) {
      background = join(dir, 'background.png');
      await writeFile(background, await renderImage({ prompt: opts.prompt, width, height }));
    }
    const args = ['-hide_banner', '-loglevel', 'error', '-y'];
    const still = (path: string) => args.push(...ownStill(path, fps, d));
    still(background);
    const filters: string[] = [`[0:v]${fitFilter(width, height)},format=yuv420p${opts.startFrame ? '' : `,hue=h='360*t/${seconds(d)}'`}[bg0]`];
    let input = 1;
    let last = 'bg0';
    if (endFrame) {
      still(endFrame);
      // An alpha fade-in overlaid: far cheaper than a per-pixel blend expression.
      filters.push(`[${input}:v]${fitFilter(width, height)},format=yuva420p,fade=t=in:st=0:d=${seconds(d)}:alpha=1[end]`);
      filters.push(`[${last}][end]overlay=x=0:y=0[bg1]`);
      last = 'bg1';
      input++;
    }
    const slot = d / Math.max(1, refs.length);
    const refW = Math.max(2, Math.round(width / 4 / 2) * 2);
    const refH = Math.max(2, Math.round(height / 4 / 2) * 2);
    refs.forEach((ref, i) => {
      still(ref);
      filters.push(`[${input}:v]scale=${refW}:${refH}:force_original_aspect_ratio=decrease,setsar=1[ref${i}]`);
      filters.push(
        `[${last}][ref${i}]overlay=x=W-w-${Math.round(width / 40)}:y=${Math.round(height / 40)}:enable='between(t,${seconds(i * slot)},${seconds((i + 1) * slot)})'[r${i}]`,
      );
      last = `r${i}`;
      input++;
    });
    const marker = Math.max(8, Math.round(Math.min(width, height) / 10 / 2) * 2);
    args.push('-f', 'lavfi', '-i', `color=c=${hexColor(opts.prompt, 7)}:s=${marker}x${marker}:r=${fps}:d=${seconds(d)}`);
    filters.push(
      `[${last}][${input}:v]overlay=x='(W-w)*(0.5+0.42*sin(2*PI*t/${seconds(Math.max(d, 1))}))':y='(H-h)*(0.5+0.42*cos(2*PI*t/${seconds(Math.max(d, 1))}))',format=yuv420p[v]`,
    );
    args.push('-filter_complex', filters.join(';'), '-map', '[v]', '-r', String(fps), '-t', seconds(d), ...X264_ARGS, '-an', opts.outPath);
    await runTool(ffmpeg, args, renderRun(opts.signal, d));
  });
}

// ---------------------------------------------------------------- talking actor

/**
 * The actor's image, fitted to width×height with a slow pan, a waveform of the speech along the
 * bottom (a stand-in for lip movement) and the speech as an AAC track; the length follows the audio.
 */
export async function renderTalkingActor(opts: {
  actorImage: string;
  audioPath: string;
  width: number;
  height: number;
  outPath: string;
  ffmpegPath?: string;
  media?: MediaTools;
  fps?: number;
  signal?: AbortSignal;
}): Promise<void> {
  const { width, height } = opts;
  const fps = opts.fps ?? VIDEO_FPS;
  const tools = toolsOf(opts);
  const ffmpeg = tools.ffmpegPath;
  const bigW = Math.round((width * 1.06) / 2) * 2;
  const bigH = Math.round((height * 1.06) / 2) * 2;
  const waveH = Math.max(16, Math.round(height / 7 / 2) * 2);
  const filters = [
    `[0:v]${fitFilter(width, height)},scale=${bigW}:${bigH},crop=${width}:${height}:x='(iw-ow)/2*(1+sin(t*1.3))':y='(ih-oh)/2*(1+cos(t*0.9))'[bg]`,
    `[1:a]asplit=2[aout][aw]`,
    `[aw]showwaves=s=${width}x${waveH}:mode=cline:scale=cbrt:rate=${fps}:colors=white[wave]`,
    `[bg][wave]overlay=x=0:y=${height - waveH - Math.round(height / 12)}:shortest=1,format=yuv420p[v]`,
  ];
  await withTempDir(async (dir) => {
    const actorImage = await normalizeStill(opts.actorImage, dir, 'actor', tools, opts.signal);
    await runTool(
      ffmpeg,
      [
        '-hide_banner',
        '-loglevel',
        'error',
        '-y',
        ...ownStill(actorImage, fps),
        '-f',
        'wav',
        '-i',
        opts.audioPath,
        '-filter_complex',
        filters.join(';'),
        '-map',
        '[v]',
        '-map',
        '[aout]',
        '-r',
        String(fps),
        ...X264_ARGS,
        '-c:a',
        'aac',
        '-b:a',
        '96k',
        '-shortest',
        opts.outPath,
      ],
      renderRun(opts.signal, 600),
    );
  });
}

// ---------------------------------------------------------------- replace actor

/**
 * The character image composited onto the motion video (looped or trimmed to the duration, cropped
 * to fill width×height), swaying with a period of a few seconds; the motion video's audio is kept.
 */
export async function renderReplaceActor(opts: {
  characterImage: string;
  motionVideo: string;
  width: number;
  height: number;
  durationSeconds: number;
  outPath: string;
  ffmpegPath?: string;
  media?: MediaTools;
  fps?: number;
  signal?: AbortSignal;
}): Promise<void> {
  const { width, height, durationSeconds: d } = opts;
  if (!(d > 0)) throw new RangeError(`invalid duration ${d}`);
  const fps = opts.fps ?? VIDEO_FPS;
  const tools = toolsOf(opts);
  const boxW = Math.round(width * 0.6);
  const boxH = Math.round(height * 0.7);
  const filters = [
    `[0:v]fps=${fps},${coverFrame(width, height)}[bg]`,
    `[1:v]scale=${boxW}:${boxH}:force_original_aspect_ratio=decrease,setsar=1,format=rgba[ch]`,
    `[bg][ch]overlay=x='(W-w)/2+W*0.06*sin(2*PI*t/3)':y='H-h-H*0.04+H*0.01*sin(2*PI*t/0.8)',format=yuv420p[v]`,
  ];
  await withTempDir(async (dir) => {
    const motion = await checkVideo(opts.motionVideo, tools, opts.signal);
    const characterImage = await normalizeStill(opts.characterImage, dir, 'character', tools, opts.signal);
    await runFfmpegUntrusted(
      [
        '-y',
        '-stream_loop',
        '-1',
        ...untrustedInputArgs(motion, tools),
        ...ownStill(characterImage, fps),
        ...outputThreadArgs(tools),
        '-filter_complex',
        filters.join(';'),
        '-map',
        '[v]',
        '-map',
        '0:a?',
        '-r',
        String(fps),
        '-t',
        seconds(d),
        ...X264_ARGS,
        '-c:a',
        'aac',
        '-b:a',
        '96k',
        opts.outPath,
      ],
      tools,
      renderRun(opts.signal, d),
    );
  });
}
