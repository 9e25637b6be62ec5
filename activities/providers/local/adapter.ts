// The local renderer as a provider adapter: it renders the job's media on this machine during
// submit, with its kind's rendering (kinds/<kind>/render.ts, over the tools of media.ts), writes the outputs straight into our store at
// `jobs/<jobId>/<token>/output-<n>.<ext>` (n from 1; re-submitting the same job overwrites the same keys,
// so submit is idempotent per job id), and then reports them as ready after the configured latency.
//
// Fault injection, only when the adapter is created with `faults: true` (LOCAL_RENDER_FAULTS),
// driven by markers in the job's prompt or script:
//   [fail:terminal]     submit throws a non-retryable ProviderError (the job fails).
//   [fail:transient:N]  submit throws a retryable ProviderError while the activity attempt is <= N,
//                       so attempt N+1 succeeds.
//   [fail:poll]         the render succeeds, but poll reports state 'failed' once it is due.
//   [outputs:N]         an image job renders N images at most, whatever its count.
//   [latency:N]         this job's outputs are reported ready N ms (at most 600000) after its render,
//                       instead of LOCAL_RENDER_LATENCY_MS (one slow job among fast ones).
// Without `faults` the markers are ordinary text.
import type { ImageTarget } from '../../../shared/output-format.js';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { redactText } from '../../../shared/redact.js';
import { log } from '@temporalio/activity';
import { notConfirmed, ProviderError } from '../types.js';
import type { InputFile, PollResult, ProviderAdapter, ProviderContext, ProviderOutput, ProviderRef, ProviderRequest } from '../types.js';
import { MediaToolError, UntrustedMediaError } from './media.js';
import { kindRenderer, type Rendered, type RenderJob } from './kind-renderer.js';
import { defaultMediaTools, type MediaTools } from '../media-tools.js';
import { extensionOf } from '../../../shared/media/type.js';
import { jobOutputKey } from '../../../shared/job-media.js';
import { mediaTempDir } from '../media-sandbox.js';

interface LocalAdapterOptions {
  ffmpegPath: string;
  ffprobePath: string;
  /** The caps of runs on the job's inputs; the defaults with the paths above when unset. */
  media?: MediaTools;
  espeakPath: string;
  /** How long after submit the outputs are reported ready, in ms. */
  latencyMs: number;
  /** Honour the fault-injection markers. */
  faults: boolean;
  tmpDir?: string;
  /** Heartbeat interval while rendering (default 2 s). */
  heartbeatMs?: number;
}

export interface LocalRef extends ProviderRef {
  provider: 'local';
  jobId: string;
  outputs: Required<Pick<ProviderOutput, 'key' | 'contentType' | 'size'>>[];
  /** Epoch ms when rendering finished and when the outputs are reported ready. */
  renderedAt: number;
  readyAt: number;
  failPoll?: true;
  /** The image job's asked format (its request's): the output store's target, read without the job row. */
  image?: ImageTarget;
}

/** Inputs keep a proper extension, so a work directory reads plainly (the tools go by content). */
function inputExtension(input: InputFile): string {
  const fromType = extensionOf(input.contentType);
  if (fromType) return `.${fromType}`;
  const fromKey = extname(input.key).toLowerCase();
  return /^\.[a-z0-9]{1,5}$/.test(fromKey) ? fromKey : '.bin';
}

function injectedFault(req: Pick<ProviderRequest, 'prompt' | 'script'>, attempt: number): ProviderError | undefined {
  const text = `${req.prompt ?? ''}\n${req.script ?? ''}`;
  if (text.includes('[fail:terminal]')) return new ProviderError('local renderer: injected terminal failure', { retryable: false });
  const transient = /\[fail:transient:(\d+)\]/.exec(text);
  if (transient && attempt <= Number(transient[1])) {
    return new ProviderError(`local renderer: injected transient failure (attempt ${attempt} of ${transient[1]} failing)`, { retryable: true, status: 503 });
  }
  return undefined;
}

/** The job's own latency from a `[latency:N]` marker, else the configured one. */
function injectedLatency(req: Pick<ProviderRequest, 'prompt' | 'script'>, configured: number): number {
  const m = /\[latency:(\d{1,6})\]/.exec(`${req.prompt ?? ''}\n${req.script ?? ''}`);
  return m ? Math.min(600_000, Number(m[1])) : configured;
}

export function createLocalAdapter(opts: LocalAdapterOptions): ProviderAdapter {
  const heartbeatMs = opts.heartbeatMs ?? 2000;
  const media = opts.media ?? { ...defaultMediaTools, ffmpegPath: opts.ffmpegPath, ffprobePath: opts.ffprobePath };

  async function download(ctx: ProviderContext, dir: string, input: InputFile, index: number): Promise<string> {
    const path = join(dir, `input-${index}-${input.role}${inputExtension(input)}`);
    const body = await ctx.storage.getStream(input.key);
    await pipeline(body, createWriteStream(path), { signal: ctx.signal });
    return path;
  }

  /** Renders the request's outputs with the renderer of its kind. */
  async function render(req: ProviderRequest, ctx: ProviderContext, workDir: () => Promise<string>): Promise<Rendered[]> {
    const inputsOf = async (role: InputFile['role']) => {
      const paths: string[] = [];
      for (const [i, input] of req.inputs.entries()) if (input.role === role) paths.push(await download(ctx, await workDir(), input, i));
      return paths;
    };
    const job: RenderJob = {
      req,
      ctx,
      workDir,
      inputsOf,
      common: { ffmpegPath: opts.ffmpegPath, media, signal: ctx.signal },
      aspect: req.aspectRatio ?? req.route.defaultAspectRatio,
      faults: opts.faults,
      espeakPath: opts.espeakPath,
    };
    return kindRenderer(req.kind)(job);
  }

  return {
    name: 'local',
    free: true,

    async submit(req, ctx): Promise<LocalRef> {
      let failPoll = false;
      let latencyMs = opts.latencyMs;
      if (opts.faults) {
        latencyMs = injectedLatency(req, latencyMs);
        const fault = injectedFault(req, ctx.attempt);
        if (fault) throw fault;
        failPoll = `${req.prompt ?? ''}\n${req.script ?? ''}`.includes('[fail:poll]');
      }
      const safeId = req.jobId.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
      let dir: Promise<string> | undefined;
      const workDir = () => (dir ??= opts.tmpDir ? mkdtemp(join(opts.tmpDir, `local-${safeId}-`)) : mediaTempDir(`local-${safeId}-`));
      ctx.heartbeat({ phase: 'start' });
      const beat = setInterval(() => ctx.heartbeat({ phase: 'render' }), heartbeatMs);
      try {
        let files;
        try {
          files = await render(req, ctx, workDir);
        } catch (err) {
          if (err instanceof UntrustedMediaError) {
            // Refused by the inspection: the message names the input and the limit, nothing of ours.
            throw new ProviderError(`local renderer: ${err.message}`, { retryable: false });
          }
          if (err instanceof MediaToolError || err instanceof RangeError) {
            // The tools ran and refused the job's inputs (or the parameters): retrying will not help.
            // The job's error is what a client may read, so it names the step, never the tool's
            // stderr or our temp paths; the detail goes to the worker's log.
            logDetail('local render failed', { jobId: req.jobId, error: redactText(err.message) });
            throw new ProviderError(`local renderer: ${publicRenderFailure(req)}`, { retryable: false });
          }
          throw err;
        }
        const outputs: LocalRef['outputs'] = [];
        for (const [n, file] of files.entries()) {
          const key = jobOutputKey(ctx.storage, req.jobId, n + 1, file.ext);
          const stored =
            'data' in file
              ? await ctx.storage.putStream(key, file.data, file.contentType)
              : await ctx.storage.putStream(key, createReadStream(file.path), file.contentType, undefined, { atLeast: (await stat(file.path)).size });
          outputs.push({ key, contentType: file.contentType, size: stored.size });
          ctx.heartbeat({ phase: 'upload', done: n + 1, of: files.length });
        }
        const renderedAt = Date.now();
        return {
          provider: 'local',
          jobId: req.jobId,
          outputs,
          renderedAt,
          readyAt: renderedAt + latencyMs,
          ...(failPoll ? { failPoll: true as const } : {}),
          ...(req.imageTarget ? { image: req.imageTarget } : {}),
        };
      } finally {
        clearInterval(beat);
        // A directory that failed to be made has already failed the render.
        if (dir)
          await dir.then(
            (d) => rm(d, { recursive: true, force: true }),
            () => undefined,
          );
      }
    },

    async poll(ref): Promise<PollResult> {
      const r = ref as LocalRef;
      const now = Date.now();
      if (now < r.readyAt) {
        const span = Math.max(1, r.readyAt - r.renderedAt);
        return {
          state: 'running',
          percent: Math.min(99, Math.max(0, Math.floor((100 * (now - r.renderedAt)) / span))),
          nextPollMs: Math.min(2000, r.readyAt - now),
        };
      }
      if (r.failPoll) return { state: 'failed', message: 'local renderer: injected failure reported by poll' };
      return { state: 'succeeded', percent: 100, outputs: r.outputs.map((o) => ({ ...o })) };
    },

    async cancel() {
      // Nothing runs remotely: a render in progress stops with its activity's abort signal.
      return notConfirmed;
    },
  };
}

/** What a client reads when rendering failed: the job's inputs, never tool output or paths. */
function publicRenderFailure(req: Pick<ProviderRequest, 'kind' | 'inputs'>): string {
  const what = req.kind.replace('_', '-');
  return req.inputs.length > 0 ? `the ${what} could not be rendered from its inputs (unreadable or unsupported media)` : `the ${what} could not be rendered`;
}

/** The worker's activity log when running inside an activity (tests call the adapter directly). */
function logDetail(message: string, meta: Record<string, unknown>): void {
  try {
    log.warn(message, meta);
  } catch {
    // not inside an activity: nobody to tell
  }
}
