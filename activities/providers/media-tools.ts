// ffmpeg and ffprobe, and the one way tenant media reaches them. A tenant's file is hostile until
// shown otherwise: its demuxer is chosen from our own reading of its magic bytes (never probed by
// ffmpeg from the content), its declared frame size and length are read by a capped ffprobe and
// checked before anything decodes it, and every run on it has its decoder's pixel cap, a bounded
// input length, a few threads, an address-space cap (prlimit) and a watchdog. Binaries are spawned
// with argument arrays (never a shell), inside the media sandbox (media-sandbox.ts: minimal
// environment, file-size cap, and where it can be made no network and another user); failures carry
// the tail of the tool's stderr.
import { spawn } from 'node:child_process';
import { open } from 'node:fs/promises';
import type { Config } from '../../shared/config.js';
import { fileSizeLimitArgs, sandboxLaunch, type SandboxLaunch } from './media-sandbox.js';
import { SNIFF_BYTES, sniffMediaType, type AcceptedMime, type MediaKind } from '../../shared/media/type.js';

export class MediaToolError extends Error {
  override name = 'MediaToolError';
}

type UntrustedMediaProblem = 'unsupported' | 'dimensions' | 'duration' | 'corrupt';

/**
 * A tenant's file refused before or while a tool read it. The message names the input and the limit,
 * never a path or the tool's output, so it can be a job's error.
 */
export class UntrustedMediaError extends MediaToolError {
  override name = 'UntrustedMediaError';
  constructor(
    readonly problem: UntrustedMediaProblem,
    message: string,
  ) {
    super(message);
  }
}

/** The binaries and the caps every run on tenant media gets. */
export interface MediaTools {
  ffmpegPath: string;
  ffprobePath: string;
  /** util-linux prlimit, which applies memoryBytes to the tool it starts. */
  prlimitPath: string;
  /** Largest still a tenant's image may declare, in pixels (the upload cap). */
  maxImagePixels: number;
  /** Largest frame a tenant's video may declare, in pixels. */
  maxVideoPixels: number;
  /** Longest tenant video read, in seconds: longer ones are refused, and no run reads past it. */
  maxSeconds: number;
  /** Decoder, filter and encoder threads of one run. */
  threads: number;
  /** Address-space cap of one tool process, in bytes; 0 = none. */
  memoryBytes: number;
  /** Watchdog of the probe. */
  probeTimeoutMs: number;
}

/** A few-MB PNG can declare 20k×20k (1.6 GB decoded): refused above the upload cap. */
export const MAX_INPUT_PIXELS = 40_000_000;

export const defaultMediaTools: MediaTools = {
  ffmpegPath: 'ffmpeg',
  ffprobePath: 'ffprobe',
  prlimitPath: 'prlimit',
  maxImagePixels: MAX_INPUT_PIXELS,
  maxVideoPixels: 4096 * 4096,
  maxSeconds: 600,
  threads: 2,
  memoryBytes: 1536 * 1024 * 1024,
  probeTimeoutMs: 30_000,
};

export type MediaToolsConfig = Pick<
  Config,
  'FFMPEG_PATH' | 'FFPROBE_PATH' | 'MEDIA_INPUT_MAX_VIDEO_PIXELS' | 'MEDIA_INPUT_MAX_SECONDS' | 'MEDIA_TOOL_THREADS' | 'MEDIA_TOOL_MEMORY_MB'
> &
  Partial<Pick<Config, 'UPLOAD_MAX_IMAGE_PIXELS'>>;

export function mediaToolsFrom(config: Partial<MediaToolsConfig>): MediaTools {
  return {
    ...defaultMediaTools,
    ffmpegPath: config.FFMPEG_PATH ?? defaultMediaTools.ffmpegPath,
    ffprobePath: config.FFPROBE_PATH ?? defaultMediaTools.ffprobePath,
    maxImagePixels: config.UPLOAD_MAX_IMAGE_PIXELS ?? defaultMediaTools.maxImagePixels,
    maxVideoPixels: config.MEDIA_INPUT_MAX_VIDEO_PIXELS ?? defaultMediaTools.maxVideoPixels,
    maxSeconds: config.MEDIA_INPUT_MAX_SECONDS ?? defaultMediaTools.maxSeconds,
    threads: config.MEDIA_TOOL_THREADS ?? defaultMediaTools.threads,
    memoryBytes: config.MEDIA_TOOL_MEMORY_MB === undefined ? defaultMediaTools.memoryBytes : config.MEDIA_TOOL_MEMORY_MB * 1024 * 1024,
  };
}

export interface RunOptions {
  signal?: AbortSignal;
  stdin?: Buffer | string;
  /** Collect stdout into the result (otherwise it is discarded). */
  stdout?: boolean;
  /** Kill the tool after this long: a watchdog against inputs that make it loop forever. */
  timeoutMs?: number;
  /** Start the tool under `prlimit --as=<bytes>` (prlimitPath) so a runaway allocation fails in it, not the machine. */
  memoryBytes?: number;
  prlimitPath?: string;
}

/** Runs a binary with an argument array; rejects with the stderr tail on a non-zero exit. */
export async function runTool(bin: string, args: string[], opts: RunOptions = {}): Promise<Buffer> {
  return (await runToolWithStderr(bin, args, opts)).stdout;
}

/**
 * The process's cap on tool runs at once (MEDIA_TOOL_CONCURRENCY; 0: none), set at worker start like
 * the sandbox: a pod's CPU and memory hold that many ffmpeg runs, whatever its activity slots admit.
 * The others wait in order; the watchdog starts once a run has its turn, and the callers keep
 * heartbeating meanwhile.
 */
const toolTurns = { limit: 0, running: 0, waiting: [] as (() => void)[] };

export function setMediaToolConcurrency(limit: number): void {
  toolTurns.limit = limit;
  while (toolTurns.waiting.length > 0 && (toolTurns.limit === 0 || toolTurns.running < toolTurns.limit)) toolTurns.waiting.shift()!();
}

/** Tool runs of this process going on now and waiting for their turn. */
export function mediaToolRuns(): { running: number; waiting: number } {
  return { running: toolTurns.running, waiting: toolTurns.waiting.length };
}

/** Waits for a turn to run a tool; resolves with its release. */
function toolTurn(signal?: AbortSignal): Promise<() => void> {
  const take = () => {
    toolTurns.running++;
    return () => {
      toolTurns.running--;
      toolTurns.waiting.shift()?.();
    };
  };
  if (toolTurns.limit === 0 || toolTurns.running < toolTurns.limit) return Promise.resolve(take());
  return new Promise((resolve, reject) => {
    const go = () => {
      signal?.removeEventListener('abort', onAbort);
      resolve(take());
    };
    const onAbort = () => {
      const i = toolTurns.waiting.indexOf(go);
      if (i >= 0) toolTurns.waiting.splice(i, 1);
      reject(signal?.reason instanceof Error ? signal.reason : new MediaToolError('aborted while waiting for a media tool turn'));
    };
    toolTurns.waiting.push(go);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** runTool, also answering the tail of what the tool wrote to stderr (a probe's warnings). */
async function runToolWithStderr(bin: string, args: string[], opts: RunOptions = {}): Promise<{ stdout: Buffer; stderr: string }> {
  const release = await toolTurn(opts.signal);
  try {
    return await spawnTool(bin, args, opts);
  } finally {
    release();
  }
}

function spawnTool(bin: string, args: string[], opts: RunOptions): Promise<{ stdout: Buffer; stderr: string }> {
  return new Promise((resolve, reject) => {
    if (opts.signal?.aborted) {
      reject(opts.signal.reason instanceof Error ? opts.signal.reason : new MediaToolError(`${bin} aborted`));
      return;
    }
    let launch: SandboxLaunch;
    try {
      launch = sandboxLaunch();
    } catch (err) {
      reject(new MediaToolError((err as Error).message));
      return;
    }
    const limits = [...(opts.memoryBytes !== undefined && opts.memoryBytes > 0 ? [`--as=${opts.memoryBytes}`] : []), ...fileSizeLimitArgs()];
    const command = [...launch.prefix, ...(limits.length > 0 ? [opts.prlimitPath ?? 'prlimit', ...limits, '--'] : []), bin, ...args];
    const file = command[0]!;
    const argv = command.slice(1);
    const child = spawn(file, argv, { env: launch.env, stdio: [opts.stdin === undefined ? 'ignore' : 'pipe', opts.stdout ? 'pipe' : 'ignore', 'pipe'] });
    const out: Buffer[] = [];
    let errTail = '';
    let settled = false;
    const finish = (err: Error | null) => {
      if (settled) return;
      settled = true;
      opts.signal?.removeEventListener('abort', onAbort);
      clearTimeout(timer);
      if (err) reject(err);
      else resolve({ stdout: Buffer.concat(out), stderr: errTail });
    };
    const onAbort = () => {
      child.kill('SIGKILL');
      finish(opts.signal?.reason instanceof Error ? opts.signal.reason : new MediaToolError(`${bin} aborted`));
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    const timer = opts.timeoutMs
      ? setTimeout(() => {
          child.kill('SIGKILL');
          finish(new MediaToolError(`${bin} timed out after ${opts.timeoutMs} ms`));
        }, opts.timeoutMs)
      : undefined;
    child.stdout?.on('data', (c: Buffer) => out.push(c));
    child.stderr?.on('data', (c: Buffer) => {
      errTail = (errTail + c.toString('utf8')).slice(-2000);
    });
    child.on('error', (err: NodeJS.ErrnoException) => {
      finish(
        new MediaToolError(
          err.code === 'ENOENT' ? `${file} not found (install it or set its path in the configuration)` : `${file} failed to start: ${err.message}`,
        ),
      );
    });
    child.on('close', (code, sig) => {
      if (code === 0) finish(null);
      else finish(new MediaToolError(`${bin} exited with ${code ?? sig}: ${errTail.trim().split('\n').slice(-6).join(' | ')}`));
    });
    if (opts.stdin !== undefined && child.stdin) {
      child.stdin.on('error', () => {
        /* the tool may exit before reading everything; its exit code tells the story */
      });
      child.stdin.end(opts.stdin);
    }
  });
}

/** The demuxer of each accepted type (shared/media/type.ts reads the magic bytes). */
const demuxers: Record<AcceptedMime, string> = {
  'image/png': 'png_pipe',
  'image/jpeg': 'jpeg_pipe',
  'image/webp': 'webp_pipe',
  'video/mp4': 'mov',
  'video/quicktime': 'mov',
  'video/webm': 'matroska',
};

/** A tenant's file after inspection: what it is and what it declares, all within the caps. */
export interface UntrustedInput {
  path: string;
  kind: MediaKind;
  mime: AcceptedMime;
  demuxer: string;
  width: number;
  height: number;
  /** Videos, when the container says. */
  durationSeconds?: number;
}

interface ProbeOutput {
  streams?: { codec_type?: string; width?: number; height?: number }[];
  format?: { duration?: string };
}

const mpx = (pixels: number) => `${(pixels / 1e6).toFixed(1)} Mpx`;

/**
 * Reads what a tenant's file is (its magic bytes) and declares (a capped ffprobe with the demuxer
 * that follows from them), and refuses it when it is not of `kind`, declares frames above the cap,
 * runs longer than the cap or has no readable frame size. `what` names it in errors ("the motion video").
 */
export async function inspectUntrusted(path: string, kind: MediaKind, what: string, tools: MediaTools, signal?: AbortSignal): Promise<UntrustedInput> {
  const head = Buffer.alloc(SNIFF_BYTES);
  const fh = await open(path, 'r');
  let length: number;
  try {
    ({ bytesRead: length } = await fh.read(head, 0, SNIFF_BYTES, 0));
  } finally {
    await fh.close();
  }
  const type = sniffMediaType(head.subarray(0, length));
  if (!type || type.fileType !== kind) throw new UntrustedMediaError('unsupported', `${what} is not a supported ${kind} (by its content)`);
  const demuxer = demuxers[type.mime];
  const maxPixels = kind === 'video' ? tools.maxVideoPixels : tools.maxImagePixels;
  const args = [
    '-v',
    'error',
    '-threads',
    '1',
    '-max_pixels',
    String(maxPixels),
    '-f',
    demuxer,
    '-show_entries',
    'stream=codec_type,width,height:format=duration',
    '-of',
    'json',
    '-i',
    path,
  ];
  let stdout: Buffer;
  let stderr: string;
  try {
    ({ stdout, stderr } = await runToolWithStderr(tools.ffprobePath, args, {
      stdout: true,
      timeoutMs: tools.probeTimeoutMs,
      memoryBytes: tools.memoryBytes,
      prlimitPath: tools.prlimitPath,
      ...(signal ? { signal } : {}),
    }));
  } catch (err) {
    if (signal?.aborted) throw err;
    throw (
      declaredSizeError(String((err as Error).message), what, kind, maxPixels) ?? new UntrustedMediaError('corrupt', `${what} could not be read as a ${kind}`)
    );
  }
  let probed: ProbeOutput;
  try {
    probed = JSON.parse(stdout.toString('utf8')) as ProbeOutput;
  } catch {
    throw new UntrustedMediaError('corrupt', `${what} could not be read as a ${kind}`);
  }
  const stream = probed.streams?.find((s) => s.codec_type === 'video');
  const width = stream?.width ?? 0;
  const height = stream?.height ?? 0;
  // A frame size the decoder refused (over the cap, or over ffmpeg's own limit) probes as 0×0 with
  // the declared size in a warning.
  if (!width || !height) throw declaredSizeError(stderr, what, kind, maxPixels) ?? new UntrustedMediaError('corrupt', `${what} has no readable frame size`);
  if (width * height > maxPixels) throw tooManyPixels(what, kind, width, height, maxPixels);
  const input: UntrustedInput = { path, kind, mime: type.mime, demuxer, width, height };
  if (kind === 'video') {
    const duration = Number(probed.format?.duration);
    if (Number.isFinite(duration)) {
      if (duration > tools.maxSeconds) throw new UntrustedMediaError('duration', `${what} lasts ${Math.round(duration)} s; the limit is ${tools.maxSeconds} s`);
      input.durationSeconds = duration;
    }
  }
  return input;
}

/** The refusal naming a frame size a tool's messages report ("Picture size 30000x30000 is invalid"). */
function declaredSizeError(toolOutput: string, what: string, kind: MediaKind, maxPixels: number): UntrustedMediaError | undefined {
  const m = /Picture size (\d+)x(\d+)/.exec(toolOutput);
  return m ? tooManyPixels(what, kind, Number(m[1]), Number(m[2]), maxPixels) : undefined;
}

const tooManyPixels = (what: string, kind: MediaKind, w: number, h: number, maxPixels: number) =>
  new UntrustedMediaError('dimensions', `${what} declares ${w}×${h} ${kind === 'video' ? 'frames' : 'pixels'} (${mpx(w * h)}); the limit is ${mpx(maxPixels)}`);

/**
 * `-i path` for an inspected tenant file: its demuxer, the decoder's pixel cap and threads, and
 * (videos) no more than the length cap read, whatever the container says.
 */
export function untrustedInputArgs(input: UntrustedInput, tools: MediaTools): string[] {
  const maxPixels = input.kind === 'video' ? tools.maxVideoPixels : tools.maxImagePixels;
  return [
    '-threads',
    String(tools.threads),
    '-max_pixels',
    String(maxPixels),
    ...(input.kind === 'video' ? ['-t', String(tools.maxSeconds)] : []),
    '-f',
    input.demuxer,
    '-i',
    input.path,
  ];
}

/** Filter and encoder threads of a run (put before the output's options). */
export function outputThreadArgs(tools: MediaTools): string[] {
  return ['-filter_threads', String(tools.threads), '-filter_complex_threads', String(tools.threads), '-threads', String(tools.threads)];
}

/**
 * The H.264 MP4 encoding of every video the service re-encodes from tenant or provider media (a
 * conformed input, a rescaled output, a composite): a fast preset, 4:2:0 so every player decodes it,
 * the index up front so playback starts before the download ends. Put before `-f mp4 <output>`.
 */
export const H264_MP4_ARGS: readonly string[] = ['-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '-movflags', '+faststart'];

/** The video filter that fills a width×height frame: scaled up until it covers the frame, then center-cropped, square pixels. */
export const coverFrame = (width: number, height: number): string =>
  `scale=${width}:${height}:force_original_aspect_ratio=increase,crop=${width}:${height},setsar=1`;

/** Runs ffmpeg over tenant media under the run caps (address space; the caller's watchdog and signal). */
export function runFfmpegUntrusted(args: string[], tools: MediaTools, opts: Pick<RunOptions, 'signal' | 'timeoutMs'> = {}): Promise<Buffer> {
  return runTool(tools.ffmpegPath, ['-hide_banner', '-loglevel', 'error', ...args], {
    ...opts,
    memoryBytes: tools.memoryBytes,
    prlimitPath: tools.prlimitPath,
  });
}
