// What the `mediagen` commands share (client/src/cli.ts): flag parsers, printing results, following
// a job with --wait, and turning errors into messages and exit codes.
import { CommanderError, InvalidArgumentError, Option, type Command } from 'commander';
import cliProgress from 'cli-progress';
import { MediaGenClient, type AnyJob, type JobKind, type JobRef, type JobTimeline, type WaitResult } from './client.js';
import { MediaGenError } from './errors.js';
import { downloadOutputs } from './node.js';

export const exitCodes = { ok: 0, other: 1, usage: 2, notFound: 3, auth: 4, credits: 5, jobFailed: 6 } as const;

export interface GlobalOpts {
  apiKey?: string;
  baseUrl?: string;
  json?: boolean;
  maxRetries: number;
}
export interface WaitFlags {
  wait?: boolean;
  out?: string;
}

export const int = (name: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n)) throw new InvalidArgumentError(`${name} must be an integer`);
  return n;
};
export const num = (name: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isFinite(n)) throw new InvalidArgumentError(`${name} must be a number`);
  return n;
};
export const collect = (v: string, prev: string[] = []) => [...prev, v];

/**
 * The generation-control flags of a create (docs/api/generation-controls.md): the seed; for images
 * the output format and quality; for videos the negative prompt and the audio switch.
 */
export function controlOptions(cmd: Command, video: boolean): Command {
  cmd.option('--seed <n>', 'random seed, where the model takes one (mediagen models: controls)', int('--seed'));
  if (!video) {
    return cmd
      .addOption(new Option('--output-format <format>', 'the stored image format (default png)').choices(['png', 'jpeg', 'webp']))
      .option('--output-quality <n>', 'jpeg or webp compression quality, 1-100 (default: 90, or as the provider encoded it)', int('--output-quality'));
  }
  return cmd
    .option('--negative-prompt <text>', 'what the video should not show, where the model takes it')
    .option('--audio', 'ask for a soundtrack, where the model has the switch')
    .option('--no-audio', 'ask for a silent video, where the model has the switch');
}

/** The create fields of the control flags a command was given (absent ones stay absent). */
export const controlFields = (o: {
  seed?: number;
  negativePrompt?: string;
  audio?: boolean;
  outputFormat?: 'png' | 'jpeg' | 'webp';
  outputQuality?: number;
}) => ({
  seed: o.seed,
  negative_prompt: o.negativePrompt,
  audio: o.audio,
  output_format: o.outputFormat,
  output_quality: o.outputQuality,
});

/** The reuse flags of every create (docs/api/reuse.md): neither given, the workspace's setting decides. */
export const reuseOptions = (cmd: Command): Command =>
  cmd
    .option('--reuse', 'answer the create from an identical request of the workspace, waiting for it while it runs (docs/api/reuse.md)')
    .option('--no-reuse', "always generate, whatever the workspace's reuse setting");

export function usageError(message: string): never {
  throw new CommanderError(exitCodes.usage, 'mediagen.usage', message);
}

// ------------------------------------------------------------------ output

export function print(opts: GlobalOpts, value: unknown, human: () => string) {
  process.stdout.write(opts.json ? JSON.stringify(value, null, 2) + '\n' : human() + '\n');
}

export function table(rows: Record<string, unknown>[], columns: string[]): string {
  if (!rows.length) return '(none)';
  const cells = rows.map((r) => columns.map((c) => (r[c] === null || r[c] === undefined ? '' : String(r[c]))));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const line = (vals: string[]) =>
    vals
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(columns), ...cells.map(line)].join('\n');
}

export function describeJob(job: AnyJob & { kind?: string }): string {
  const p = job.progress;
  const extra = p
    ? ` · ${p.phase}${p.percent !== null ? ` ${Math.round(p.percent)}%` : ''}${p.queue_position !== null ? ` · queue ${p.queue_position}` : ''}`
    : '';
  const err = job.error ? ` · ${job.error.code}: ${job.error.message}` : '';
  // Only a priority other than the default is worth a word.
  const priority = job.priority && job.priority !== 'normal' ? ` · priority ${job.priority}` : '';
  return `${job.id}  ${job.status}${priority}${extra}${err}`;
}

/** A job's timeline as a table: when, what, the credits it moved (charged −, refunded +), and the facts in words. */
export function describeTimeline(t: JobTimeline): string {
  const { charged, refunded, net } = t.charges;
  const rows = t.entries.map((e) => {
    const { amount, ...rest } = e.details as Record<string, unknown>;
    const sign = e.type === 'refunded' ? '+' : e.type === 'charged' || e.type === 'recharged' ? '-' : '';
    const facts = Object.entries(rest).filter(([, v]) => v !== null && v !== undefined && v !== '');
    return {
      time: new Date(e.at).toISOString(),
      event: e.type,
      credits: amount === undefined ? '' : `${sign}${String(amount)}`,
      details: facts.map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join(' '),
    };
  });
  const more = t.truncated ? '\n(more entries than shown)' : '';
  return `${t.id}  ${t.status} · charged ${charged} · refunded ${refunded} · net ${net}\n` + table(rows, ['time', 'event', 'credits', 'details']) + more;
}

/** Overall percent of a job from its phase and the provider's percent, for the progress bar. */
export function overallPercent(job: AnyJob): number {
  if (job.status === 'completed') return 100;
  const p = job.progress;
  if (!p) return job.status === 'pending' ? 0 : 5;
  const start: Record<string, number> = { queued: 0, fetching_inputs: 5, submitting: 10, generating: 15, storing_outputs: 90, completed: 100 };
  const base = start[p.phase] ?? 0;
  if (p.phase === 'generating') return Math.round(base + ((p.percent ?? 0) / 100) * 75);
  return base;
}

// ------------------------------------------------------------------ waiting

export async function waitAndReport(client: MediaGenClient, ref: JobRef, opts: GlobalOpts, flags: WaitFlags): Promise<void> {
  const started = Date.now();
  const tty = Boolean(process.stderr.isTTY);
  const abort = new AbortController();
  process.once('SIGINT', () =>
    abort.abort(new MediaGenError({ status: 0, code: 'interrupted', message: `stopped waiting (the job ${ref.id} goes on; mediagen jobs wait ${ref.id})` })),
  );
  let bar: cliProgress.SingleBar | null = null;
  const payload = (job: AnyJob) => ({
    phase: (job.progress?.phase ?? job.status).padEnd(15),
    queue: job.progress?.queue_position ?? '-',
    elapsed: ((Date.now() - started) / 1000).toFixed(1),
  });
  if (tty) {
    bar = new cliProgress.SingleBar(
      {
        format: `${ref.id} {phase} |{bar}| {percentage}% · queue {queue} · {elapsed}s`,
        hideCursor: true,
        clearOnComplete: false,
        stream: process.stderr,
        fps: 10,
      },
      cliProgress.Presets.shades_classic,
    );
  }
  const onProgress = (job: AnyJob) => {
    if (bar) {
      if (!bar.isActive) bar.start(100, overallPercent(job), payload(job));
      else bar.update(overallPercent(job), payload(job));
    } else {
      const p = job.progress;
      process.stdout.write(
        JSON.stringify({
          event: 'progress',
          kind: ref.kind,
          id: job.id,
          status: job.status,
          phase: p?.phase ?? null,
          percent: p?.percent ?? null,
          queue_position: p?.queue_position ?? null,
          elapsed_ms: Date.now() - started,
        }) + '\n',
      );
    }
  };
  // The progress bar redraws on a timer, so elapsed seconds move while the job's state does not.
  let last: AnyJob | null = null;
  const tick = bar ? setInterval(() => last && bar.update(overallPercent(last), payload(last)), 500) : null;
  let result: WaitResult;
  try {
    result = await client.waitForJob(ref, {
      signal: abort.signal,
      onProgress: (job) => {
        last = job;
        onProgress(job);
      },
    });
  } catch (err) {
    if (tick) clearInterval(tick);
    bar?.stop();
    if (!tty && err instanceof MediaGenError && err.body && typeof err.body === 'object' && 'status' in err.body) {
      process.stdout.write(
        JSON.stringify({ event: 'failed', kind: ref.kind, id: ref.id, error: (err.body as AnyJob).error, elapsed_ms: Date.now() - started }) + '\n',
      );
    }
    throw err;
  }
  if (tick) clearInterval(tick);
  if (bar) {
    bar.update(100, payload(result.job));
    bar.stop();
  }
  const files = flags.out ? await downloadOutputs(result.urls, flags.out, { id: ref.id }) : [];
  if (!tty) {
    process.stdout.write(
      JSON.stringify({
        event: 'completed',
        kind: ref.kind,
        id: ref.id,
        job: result.job,
        url: result.url,
        urls: result.urls,
        files,
        elapsed_ms: Date.now() - started,
      }) + '\n',
    );
  } else {
    print(opts, { job: result.job, url: result.url, urls: result.urls, files }, () =>
      [
        `${ref.id} completed in ${((Date.now() - started) / 1000).toFixed(1)}s`,
        ...result.urls.map((u) => `  url   ${u}`),
        ...files.map((f) => `  saved ${f}`),
      ].join('\n'),
    );
  }
}

export async function created(client: MediaGenClient, job: { id: string; status: string; kind: JobKind }, opts: GlobalOpts, flags: WaitFlags) {
  if (!flags.wait) {
    if (flags.out) usageError('--out needs --wait');
    print(opts, job, () => `${job.id}  ${job.status}\n  follow it: mediagen jobs wait ${job.id}`);
    return;
  }
  if (!process.stderr.isTTY) process.stdout.write(JSON.stringify({ event: 'created', kind: job.kind, id: job.id, status: job.status }) + '\n');
  await waitAndReport(client, job, opts, flags);
}

// ------------------------------------------------------------------ errors → messages and exit codes

export function exitCodeFor(err: unknown): number {
  if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : exitCodes.usage;
  if (!(err instanceof MediaGenError)) return exitCodes.other;
  if (err.code === 'missing_api_key' || err.code === 'missing_base_url' || err.code === 'invalid_job_id') return exitCodes.usage;
  if (err.code === 'file_not_found') return exitCodes.notFound;
  if (
    err.status === 409 &&
    (err.code === 'generation_failed' || err.code === 'canceled' || err.code === 'pipeline_failed') &&
    err.body &&
    (err.body as AnyJob).status === 'failed'
  )
    return exitCodes.jobFailed;
  switch (err.status) {
    case 400:
    case 413:
    case 415:
    case 422:
      return exitCodes.usage;
    case 401:
    case 403:
      return exitCodes.auth;
    case 402:
      return exitCodes.credits;
    case 404:
      return exitCodes.notFound;
    default:
      return exitCodes.other;
  }
}

export function messageFor(err: unknown, maxRetries: number): string {
  if (!(err instanceof MediaGenError)) return `error: ${(err as Error)?.message ?? String(err)}`;
  const rid = err.requestId ? ` (request id ${err.requestId})` : '';
  switch (err.status) {
    case 401:
      return `error: the API key was refused (${err.code}): ${err.message}\n  Set MEDIAGEN_API_KEY (or --api-key) to a live key of your workspace (mg_live_…); a revoked key stops working at once.`;
    case 402:
      return `error: not enough credits: ${err.message}\n  Ask a workspace owner to add credits (npm run admin -- credits grant …), or choose a cheaper model or fewer outputs.`;
    case 403:
      if (err.code === 'priority_not_allowed') return `error: ${err.message}\n  Retry with --priority normal (or low).`;
      if (err.code === 'owner_key_required') return `error: ${err.message}\n  Use a key a workspace owner created (npm run admin -- key create … --as OWNER).`;
      return `error: forbidden: ${err.message}\n  The project belongs to another workspace than the API key's; list yours with: mediagen projects`;
    case 429: {
      const wait = err.retryAfterMs !== null ? `${Math.ceil(err.retryAfterMs / 1000)} s` : 'a minute';
      return `error: rate limited: ${err.message}\n  Still limited after ${maxRetries} retries; wait ${wait}, or allow more with --max-retries.`;
    }
  }
  if (err.code === 'missing_api_key' || err.code === 'missing_base_url') return `error: ${err.message}\n  Run "mediagen --help" for the options.`;
  return `error: ${err.message}${err.status ? ` [${err.status} ${err.code}]` : ''}${rid}`;
}
