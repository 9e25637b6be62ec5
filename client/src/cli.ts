// `mediagen`: the Media Generation API from a terminal or a script.
//   Configuration: MEDIAGEN_API_KEY and MEDIAGEN_BASE_URL (or --api-key / --base-url, which win).
//   --wait follows a job: a progress bar on a terminal, JSON lines otherwise. --json prints results
//   as JSON. Exit codes: 0 ok · 1 other · 2 usage or invalid request · 3 not found ·
//   4 auth (401/403) · 5 credits (402) · 6 job failed.
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import cliProgress from 'cli-progress';
import { MediaGenClient, kindOfJobId, type AnyJob, type JobKind, type JobRef, type WaitResult } from './client.js';
import { MediaGenError } from './errors.js';
import { downloadOutputs, uploadFile } from './node.js';

export const exitCodes = { ok: 0, other: 1, usage: 2, notFound: 3, auth: 4, credits: 5, jobFailed: 6 } as const;

interface GlobalOpts {
  apiKey?: string;
  baseUrl?: string;
  json?: boolean;
  maxRetries: number;
}
interface WaitFlags {
  wait?: boolean;
  out?: string;
}

const int = (name: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n)) throw new InvalidArgumentError(`${name} must be an integer`);
  return n;
};
const num = (name: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isFinite(n)) throw new InvalidArgumentError(`${name} must be a number`);
  return n;
};
const collect = (v: string, prev: string[] = []) => [...prev, v];

function usageError(message: string): never {
  throw new CommanderError(exitCodes.usage, 'mediagen.usage', message);
}

// ------------------------------------------------------------------ output

function print(opts: GlobalOpts, value: unknown, human: () => string) {
  process.stdout.write(opts.json ? JSON.stringify(value, null, 2) + '\n' : human() + '\n');
}

function table(rows: Record<string, unknown>[], columns: string[]): string {
  if (!rows.length) return '(none)';
  const cells = rows.map((r) => columns.map((c) => (r[c] === null || r[c] === undefined ? '' : String(r[c]))));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const line = (vals: string[]) => vals.map((v, i) => v.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(columns), ...cells.map(line)].join('\n');
}

function describeJob(job: AnyJob & { kind?: string }): string {
  const p = job.progress;
  const extra = p ? ` · ${p.phase}${p.percent !== null ? ` ${Math.round(p.percent)}%` : ''}${p.queue_position !== null ? ` · queue ${p.queue_position}` : ''}` : '';
  const err = job.error ? ` · ${job.error.code}: ${job.error.message}` : '';
  return `${job.id}  ${job.status}${extra}${err}`;
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

async function waitAndReport(client: MediaGenClient, ref: JobRef, opts: GlobalOpts, flags: WaitFlags): Promise<void> {
  const started = Date.now();
  const tty = Boolean(process.stderr.isTTY);
  const abort = new AbortController();
  process.once('SIGINT', () => abort.abort(new MediaGenError({ status: 0, code: 'interrupted', message: `stopped waiting (the job ${ref.id} goes on; mediagen jobs wait ${ref.id})` })));
  let bar: cliProgress.SingleBar | null = null;
  const payload = (job: AnyJob) => ({
    phase: (job.progress?.phase ?? job.status).padEnd(15),
    queue: job.progress?.queue_position ?? '-',
    elapsed: ((Date.now() - started) / 1000).toFixed(1),
  });
  if (tty) {
    bar = new cliProgress.SingleBar(
      { format: `${ref.id} {phase} |{bar}| {percentage}% · queue {queue} · {elapsed}s`, hideCursor: true, clearOnComplete: false, stream: process.stderr, fps: 10 },
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
      process.stdout.write(JSON.stringify({ event: 'failed', kind: ref.kind, id: ref.id, error: (err.body as AnyJob).error, elapsed_ms: Date.now() - started }) + '\n');
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
    process.stdout.write(JSON.stringify({ event: 'completed', kind: ref.kind, id: ref.id, job: result.job, url: result.url, urls: result.urls, files, elapsed_ms: Date.now() - started }) + '\n');
  } else {
    print(opts, { job: result.job, url: result.url, urls: result.urls, files }, () =>
      [`${ref.id} completed in ${((Date.now() - started) / 1000).toFixed(1)}s`, ...result.urls.map((u) => `  url   ${u}`), ...files.map((f) => `  saved ${f}`)].join('\n'),
    );
  }
}

async function created(client: MediaGenClient, job: { id: string; status: string; kind: JobKind }, opts: GlobalOpts, flags: WaitFlags) {
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
  if (err.status === 409 && (err.code === 'generation_failed' || err.code === 'canceled') && err.body && (err.body as AnyJob).status === 'failed') return exitCodes.jobFailed;
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
      return `error: forbidden: ${err.message}\n  The project belongs to another workspace than the API key's; list yours with: mediagen projects`;
    case 429: {
      const wait = err.retryAfterMs !== null ? `${Math.ceil(err.retryAfterMs / 1000)} s` : 'a minute';
      return `error: rate limited: ${err.message}\n  Still limited after ${maxRetries} retries; wait ${wait}, or allow more with --max-retries.`;
    }
  }
  if (err.code === 'missing_api_key' || err.code === 'missing_base_url') return `error: ${err.message}\n  Run "mediagen --help" for the options.`;
  return `error: ${err.message}${err.status ? ` [${err.status} ${err.code}]` : ''}${rid}`;
}

// ------------------------------------------------------------------ commands

export function buildProgram(): Command {
  const program = new Command('mediagen')
    .description('Generate images, videos, replace-actor and talking-actor videos with the Media Generation API.')
    .option('--api-key <key>', 'workspace API key (default: $MEDIAGEN_API_KEY)')
    .option('--base-url <url>', 'gateway address, e.g. http://127.0.0.1:8080 (default: $MEDIAGEN_BASE_URL)')
    .option('--json', 'print results as JSON')
    .addOption(new Option('--max-retries <n>', 'retries of a rate-limited (429) request').argParser(int('--max-retries')).default(2))
    .showHelpAfterError()
    .addHelpText(
      'after',
      '\nExit codes: 0 ok, 1 other, 2 usage or invalid request, 3 not found, 4 auth (401/403), 5 credits (402), 6 job failed.\n' +
        'Example: mediagen images generate --project prj_… --prompt "a red fox" --wait --out fox.png',
    );

  const globals = (): GlobalOpts => program.opts<GlobalOpts>();
  const client = () => {
    const g = globals();
    return new MediaGenClient({ apiKey: g.apiKey ?? process.env.MEDIAGEN_API_KEY ?? '', baseUrl: g.baseUrl ?? process.env.MEDIAGEN_BASE_URL ?? '', maxRetries: g.maxRetries });
  };
  const waitOptions = (cmd: Command) => cmd.option('--wait', 'wait until the job finishes, showing its progress').option('--out <path>', 'with --wait: download the outputs to this file or directory');

  // ---- generation
  const images = program.command('images').description('image jobs');
  waitOptions(
    images
      .command('generate')
      .description('create an image job')
      .requiredOption('--project <id>', 'project id')
      .requiredOption('--prompt <text>', 'what to draw')
      .option('--model <name>', 'nano-banana-2, gpt-image-1.5 or seedream-4.5', 'nano-banana-2')
      .option('--aspect-ratio <ratio>', '1:1, 9:16 or 16:9', '1:1')
      .option('--count <n>', 'images to make (1-4)', int('--count'), 1),
  ).action(async (o) => {
    const c = client();
    const job = await c.images.generate({ project_id: o.project, prompt: o.prompt, model: o.model, aspect_ratio: o.aspectRatio, count: o.count });
    await created(c, job, globals(), o);
  });

  const videos = program.command('videos').description('video jobs');
  waitOptions(
    videos
      .command('generate')
      .description('create a video job')
      .requiredOption('--project <id>', 'project id')
      .requiredOption('--prompt <text>', 'what to film')
      .requiredOption('--model <name>', 'sora-2-pro, sora-2, kling-3.0, kling-2.6, veo-3.1, seedance-1.5 or grok-video')
      .option('--aspect-ratio <ratio>', 'aspect ratio (allowed values per model: mediagen models)')
      .option('--duration <seconds>', 'duration in seconds', num('--duration'))
      .option('--resolution <res>', 'e.g. 720p')
      .option('--reference-file-id <id>', 'reference upload (repeatable)', collect)
      .option('--start-frame-file-id <id>', 'start frame upload')
      .option('--end-frame-file-id <id>', 'end frame upload'),
  ).action(async (o) => {
    const c = client();
    const job = await c.videos.generate({
      project_id: o.project,
      prompt: o.prompt,
      model: o.model,
      aspect_ratio: o.aspectRatio,
      duration: o.duration,
      resolution: o.resolution,
      reference_file_ids: o.referenceFileId,
      start_frame_file_id: o.startFrameFileId,
      end_frame_file_id: o.endFrameFileId,
    });
    await created(c, job, globals(), o);
  });

  const talking = program.command('talking-actors').description('talking-actor jobs');
  waitOptions(
    talking
      .command('generate')
      .description('create a talking-actor job')
      .requiredOption('--project <id>', 'project id')
      .requiredOption('--actor <id>', 'actor id (mediagen actors)')
      .requiredOption('--script <text>', 'what the actor says')
      .option('--voice <id>', "voice id (default: the actor's voice)")
      .option('--speed <n>', 'voice speed 0.7-1.2', num('--speed'))
      .option('--stability <n>', '0-1', num('--stability'))
      .option('--similarity <n>', '0-1', num('--similarity'))
      .option('--style <n>', '0-1', num('--style'))
      .option('--aspect-ratio <ratio>', '1:1, 9:16 or 16:9'),
  ).action(async (o) => {
    const c = client();
    const voice = { speed: o.speed, stability: o.stability, similarity: o.similarity, style: o.style };
    const hasVoice = Object.values(voice).some((v) => v !== undefined);
    const job = await c.talkingActors.generate({
      project_id: o.project,
      actor_id: o.actor,
      script: o.script,
      voice_id: o.voice,
      aspect_ratio: o.aspectRatio,
      ...(hasVoice ? { voice_options: voice } : {}),
    });
    await created(c, job, globals(), o);
  });

  const replace = program.command('replace-actors').description('replace-actor jobs');
  waitOptions(
    replace
      .command('generate')
      .description('create a replace-actor job (either both file ids or both URLs)')
      .requiredOption('--project <id>', 'project id')
      .option('--image-file-id <id>', 'character image upload')
      .option('--video-file-id <id>', 'motion video upload')
      .option('--image-url <url>', 'public character image URL')
      .option('--video-url <url>', 'public motion video URL')
      .option('--prompt <text>', 'optional context')
      .option('--duration <seconds>', '3-30 (default 30)', num('--duration'))
      .option('--aspect-ratio <ratio>', '1:1, 9:16 or 16:9'),
  ).action(async (o) => {
    const c = client();
    const job = await c.replaceActors.generate({
      project_id: o.project,
      image_file_id: o.imageFileId,
      video_file_id: o.videoFileId,
      image_url: o.imageUrl,
      video_url: o.videoUrl,
      prompt: o.prompt,
      duration: o.duration,
      aspect_ratio: o.aspectRatio,
    });
    await created(c, job, globals(), o);
  });

  // ---- uploads
  program
    .command('upload')
    .description('upload an image or video file (images up to 10 MB, videos up to 20 MB)')
    .argument('<file>', 'path of the file')
    .requiredOption('--project <id>', 'project id')
    .option('--direct', 'send the bytes straight to storage (a direct upload) instead of through the gateway')
    .action(async (file: string, o) => {
      const up = await uploadFile(client(), file, { projectId: o.project, direct: Boolean(o.direct) });
      print(globals(), up, () => `${up.id}  ${up.file_type}  ${up.mime_type}  ${up.file_size} bytes`);
    });
  program
    .command('upload-from-url')
    .description('store a public HTTPS image or video')
    .argument('<url>', 'https URL')
    .requiredOption('--project <id>', 'project id')
    .action(async (url: string, o) => {
      const up = await client().uploadFromUrl(url, { projectId: o.project });
      print(globals(), up, () => `${up.id}  ${up.file_type}  ${up.mime_type}  ${up.file_size} bytes`);
    });
  const uploads = program.command('uploads').description('manage uploaded files');
  uploads
    .command('delete')
    .description('delete an upload: its link answers 410 from now on and new jobs refuse it (idempotent)')
    .argument('<id>', 'upload id (upl_…)')
    .action(async (id: string) => {
      const up = await client().uploads.delete(id);
      print(globals(), up, () => `${up.id}  ${up.status}`);
    });

  // ---- jobs
  const jobs = program.command('jobs').description('find and follow jobs of any kind');
  const refOf = (id: string): JobRef => {
    const kind = kindOfJobId(id);
    if (!kind) usageError(`${id} is not a job id (img_…, vid_…, rpl_… or tlk_…)`);
    return { kind, id };
  };
  jobs
    .command('get')
    .description('show a job')
    .argument('<id>', 'job id')
    .action(async (id: string) => {
      const job = await client().getJob(refOf(id));
      print(globals(), job, () => describeJob(job));
    });
  waitOptions(jobs.command('wait').description('wait for a job to finish').argument('<id>', 'job id')).action(async (id: string, o) => {
    await waitAndReport(client(), refOf(id), globals(), o);
  });
  jobs
    .command('list')
    .description('list jobs, newest first')
    .option('--project <id>', 'only this project')
    .option('--status <status>', 'pending, generating, completed or failed')
    .option('--model <name>', 'only this model')
    .option('--created-after <ms>', 'only jobs created after (ms since the Unix epoch)', int('--created-after'))
    .option('--created-before <ms>', 'only jobs created before (ms since the Unix epoch)', int('--created-before'))
    .option('--limit <n>', '1-100', int('--limit'))
    .option('--cursor <cursor>', 'next_cursor of the previous page')
    .action(async (o) => {
      const page = await client().jobs.list({
        project_id: o.project,
        status: o.status,
        model: o.model,
        created_after: o.createdAfter,
        created_before: o.createdBefore,
        limit: o.limit,
        cursor: o.cursor,
      });
      print(globals(), page, () => table(page.data as Record<string, unknown>[], ['id', 'kind', 'status', 'model', 'created_at']) + (page.next_cursor ? `\nnext: --cursor ${page.next_cursor}` : ''));
    });

  // ---- discovery
  const listCommand = (name: string, description: string, columns: string[], fetchPage: (c: MediaGenClient, q: { limit?: number; cursor?: string }) => Promise<{ data: unknown[]; next_cursor?: string | null }>) =>
    program
      .command(name)
      .description(description)
      .option('--limit <n>', '1-100', int('--limit'))
      .option('--cursor <cursor>', 'next_cursor of the previous page')
      .action(async (o) => {
        const page = await fetchPage(client(), { limit: o.limit, cursor: o.cursor });
        print(globals(), page, () => table(page.data as Record<string, unknown>[], columns) + (page.next_cursor ? `\nnext: --cursor ${page.next_cursor}` : ''));
      });
  listCommand('projects', 'list the workspace projects', ['id', 'name', 'created_at'], (c, q) => c.projects.list(q));
  listCommand('actors', 'list actors', ['id', 'name', 'gender', 'age', 'skin_tone', 'is_pro', 'default_voice_id'], (c, q) => c.actors.list(q));
  listCommand('voices', 'list voices', ['id', 'name', 'gender', 'language', 'accent'], (c, q) => c.voices.list(q));
  program
    .command('models')
    .description('list the models and what each accepts')
    .action(async () => {
      const r = await client().models.list();
      const rows = r.data.map((m) => ({
        name: m.name,
        kind: m.kind,
        served_by: m.served_by,
        price: `${m.price.credits}/${m.price.per}${m.price.per_hundred_chars ? ` +${m.price.per_hundred_chars}/100 chars` : ''}`,
        aspect_ratios: m.aspect_ratios.join(' '),
        durations: !m.durations ? '-' : 'values' in m.durations ? m.durations.values.join(' ') : `${m.durations.min}-${m.durations.max}`,
        resolutions: m.resolutions.join(' ') || '-',
      }));
      print(globals(), r, () => table(rows, ['name', 'kind', 'served_by', 'price', 'aspect_ratios', 'durations', 'resolutions']));
    });

  // Usage errors leave through main's catch with exit code 2 instead of process.exit.
  program.exitOverride();
  for (const cmd of allCommands(program)) cmd.exitOverride();
  return program;
}

function allCommands(cmd: Command): Command[] {
  return cmd.commands.flatMap((c) => [c, ...allCommands(c)]);
}

export async function main(argv = process.argv): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return exitCodes.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // commander already printed its message (and help for help requests).
      if (err.code === 'mediagen.usage') process.stderr.write(`error: ${err.message}\n`);
      return err.exitCode === 0 || err.code === 'commander.helpDisplayed' || err.code === 'commander.version' ? exitCodes.ok : exitCodes.usage;
    }
    process.stderr.write(messageFor(err, program.opts<GlobalOpts>().maxRetries ?? 2) + '\n');
    return exitCodeFor(err);
  }
}

