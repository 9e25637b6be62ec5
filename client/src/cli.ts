// `mediagen`: the Media Generation API from a terminal or a script.
//   Configuration: MEDIAGEN_API_KEY and MEDIAGEN_BASE_URL (or --api-key / --base-url, which win).
//   --wait follows a job: a progress bar on a terminal, JSON lines otherwise. --json prints results
//   as JSON. Exit codes: 0 ok · 1 other · 2 usage or invalid request · 3 not found ·
//   4 auth (401/403) · 5 credits (402) · 6 job or pipeline failed.
import { Command, CommanderError, Option } from 'commander';
import { MediaGenClient, jobPriorities, kindOfJobId, type JobRef } from './client.js';
import { uploadFile } from './node.js';
import { addWebhookCommands } from './cli-webhooks.js';
import { addUsageCommand } from './cli-usage.js';
import { addBalanceCommand } from './cli-balance.js';
import { addKeysCommand } from './cli-keys.js';
import { addEventsCommand } from './cli-events.js';
import { addPipelineCommands } from './cli-pipelines.js';
import { commonFields, labelOptions, metadataPair } from './cli-labels.js';
import { addBatchCommands } from './cli-batches.js';
import { addBulkActionCommands } from './cli-bulk-actions.js';
import {
  collect,
  controlFields,
  reuseOptions,
  controlOptions,
  created,
  describeJob,
  describeTimeline,
  exitCodeFor,
  exitCodes,
  int,
  messageFor,
  num,
  print,
  table,
  usageError,
  waitAndReport,
  type GlobalOpts,
} from './cli-support.js';

export { exitCodeFor, exitCodes, messageFor, overallPercent } from './cli-support.js';

// ------------------------------------------------------------------ commands

export function buildProgram(): Command {
  const program = new Command('mediagen')
    .description('Generate images, videos, replace-actor and talking-actor videos, alone or as pipelines, with the Media Generation API.')
    .option('--api-key <key>', 'workspace API key (default: $MEDIAGEN_API_KEY)')
    .option('--base-url <url>', 'gateway address, e.g. http://127.0.0.1:8080 (default: $MEDIAGEN_BASE_URL)')
    .option('--json', 'print results as JSON')
    .addOption(new Option('--max-retries <n>', 'retries of a rate-limited (429) request').argParser(int('--max-retries')).default(2))
    .showHelpAfterError()
    .addHelpText(
      'after',
      '\nExit codes: 0 ok, 1 other, 2 usage or invalid request, 3 not found, 4 auth (401/403), 5 credits (402), 6 job or pipeline failed.\n' +
        'Example: mediagen images generate --project prj_… --prompt "a red fox" --wait --out fox.png\n' +
        '         mediagen pipelines run pipeline.json --wait',
    );

  const globals = (): GlobalOpts => program.opts<GlobalOpts>();
  const client = () => {
    const g = globals();
    return new MediaGenClient({
      apiKey: g.apiKey ?? process.env.MEDIAGEN_API_KEY ?? '',
      baseUrl: g.baseUrl ?? process.env.MEDIAGEN_BASE_URL ?? '',
      maxRetries: g.maxRetries,
    });
  };
  const waitOptions = (cmd: Command) =>
    reuseOptions(cmd)
      .option('--deadline-seconds <n>', 'cancel the job unless it completed within this many seconds (10-604800)', int('--deadline-seconds'))
      .option('--wait', 'wait until the job finishes, showing its progress')
      .option('--out <path>', 'with --wait: download the outputs to this file or directory');

  // Every create takes a priority (docs/api/priority.md); the server's default is normal.
  const generateOptions = (cmd: Command) =>
    waitOptions(
      labelOptions(cmd, 'label the job with this tag', 'label the job with this metadata pair').addOption(
        new Option('--priority <level>', "high (if the workspace is allowed it), normal or low (cheaper where the model's price says so)").choices(
          jobPriorities,
        ),
      ),
    );

  // ---- generation
  const images = program.command('images').description('image jobs');
  generateOptions(
    controlOptions(images.command('generate'), false)
      .description('create an image job')
      .requiredOption('--project <id>', 'project id')
      .requiredOption('--prompt <text>', 'what to draw')
      .option(
        '--model <name>',
        'nano-banana-2, gpt-image-1.5, gpt-image-2, gpt-image-2.5-sunburst, gpt-image-2.5-flare, gpt-image-2.6-sunburst, gpt-image-2.6-flare, seedream-4.5 or seedream-5.0-lite',
        'nano-banana-2',
      )
      .option('--aspect-ratio <ratio>', '1:1, 9:16 or 16:9', '1:1')
      .option('--count <n>', 'images to make (1-4)', int('--count'), 1),
  ).action(async (o) => {
    const c = client();
    const job = await c.images.generate({
      project_id: o.project,
      prompt: o.prompt,
      model: o.model,
      aspect_ratio: o.aspectRatio,
      count: o.count,
      ...controlFields(o),
      ...commonFields(o),
    });
    await created(c, job, globals(), o);
  });

  const videos = program.command('videos').description('video jobs');
  generateOptions(
    controlOptions(videos.command('generate'), true)
      .description('create a video job')
      .requiredOption('--project <id>', 'project id')
      .requiredOption('--prompt <text>', 'what to film')
      .requiredOption(
        '--model <name>',
        'sora-2-pro, sora-2, kling-3.0, kling-3.0-turbo, kling-o3-4k, kling-2.6, veo-3.1, veo-3.1-lite, seedance-1.5, seedance-2.0, seedance-2.0-fast, grok-video or grok-video-1.5',
      )
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
      ...controlFields(o),
      ...commonFields(o),
    });
    await created(c, job, globals(), o);
  });

  const talking = program.command('talking-actors').description('talking-actor jobs');
  generateOptions(
    talking
      .command('generate')
      .description('create a talking-actor job')
      .requiredOption('--project <id>', 'project id')
      .requiredOption('--actor <id>', 'actor id (mediagen actors)')
      .requiredOption('--script <text>', 'what the actor says')
      .option('--voice <id>', "voice id (default: the actor's voice)")
      .option('--model <name>', 'talking-actor (ElevenLabs Multilingual v2, default) or talking-actor-v3 (Eleven v3: takes audio tags such as [whispers])')
      .option('--speed <n>', 'voice speed 0.7-1.2', num('--speed'))
      .option('--stability <n>', '0-1', num('--stability'))
      .option('--similarity <n>', '0-1', num('--similarity'))
      .option('--style <n>', '0-1', num('--style'))
      .option('--aspect-ratio <ratio>', '1:1, 9:16 or 16:9')
      .option('--background-file-id <id>', 'video upload the actor talks over (picture in picture)')
      .option('--background-url <url>', 'public video URL the actor talks over (not with --background-file-id)'),
  ).action(async (o) => {
    const c = client();
    const voice = { speed: o.speed, stability: o.stability, similarity: o.similarity, style: o.style };
    const hasVoice = Object.values(voice).some((v) => v !== undefined);
    const job = await c.talkingActors.generate({
      project_id: o.project,
      actor_id: o.actor,
      script: o.script,
      voice_id: o.voice,
      model: o.model,
      aspect_ratio: o.aspectRatio,
      background_video_file_id: o.backgroundFileId,
      background_video_url: o.backgroundUrl,
      ...(hasVoice ? { voice_options: voice } : {}),
      ...commonFields(o),
    });
    await created(c, job, globals(), o);
  });

  const replace = program.command('replace-actors').description('replace-actor jobs');
  generateOptions(
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
      ...commonFields(o),
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
  jobs
    .command('timeline')
    .description('what happened to a job, in order, with the credits charged and refunded (its receipt)')
    .argument('<id>', 'job id')
    .action(async (id: string) => {
      const timeline = await client().jobs.timeline(id);
      print(globals(), timeline, () => describeTimeline(timeline));
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
    .addOption(new Option('--priority <level>', 'only jobs of this priority').choices(jobPriorities))
    .option('--created-after <ms>', 'only jobs created after (ms since the Unix epoch)', int('--created-after'))
    .option('--created-before <ms>', 'only jobs created before (ms since the Unix epoch)', int('--created-before'))
    .option('--tag <tag>', 'only jobs with this tag (repeatable: all of them)', collect)
    .option('--metadata <key=value>', 'only jobs with this metadata pair (repeatable: all of them)', metadataPair)
    .option('--limit <n>', '1-100', int('--limit'))
    .option('--cursor <cursor>', 'next_cursor of the previous page')
    .action(async (o) => {
      const page = await client().jobs.list({
        tag: o.tag,
        metadata: o.metadata,
        project_id: o.project,
        status: o.status,
        model: o.model,
        priority: o.priority,
        created_after: o.createdAfter,
        created_before: o.createdBefore,
        limit: o.limit,
        cursor: o.cursor,
      });
      print(
        globals(),
        page,
        () =>
          table(page.data as Record<string, unknown>[], ['id', 'kind', 'status', 'model', 'created_at']) +
          (page.next_cursor ? `\nnext: --cursor ${page.next_cursor}` : ''),
      );
    });

  // ---- discovery
  const listCommand = (
    name: string,
    description: string,
    columns: string[],
    fetchPage: (c: MediaGenClient, q: { limit?: number; cursor?: string }) => Promise<{ data: unknown[]; next_cursor?: string | null }>,
  ) =>
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
  program
    .command('budgets')
    .description("list the workspace's budgets: spend per key or project this day or month, what is left and when it resets")
    .action(async () => {
      const r = await client().budgets.list();
      const rows = r.data.map((b) => ({ ...b, scope: `${b.scope} ${b.scope_id}`, spent: `${b.spent}/${b.limit}` }));
      print(globals(), r, () => (rows.length ? table(rows, ['id', 'scope', 'period', 'spent', 'remaining', 'resets_at']) : 'no budgets'));
    });

  program
    .command('audit')
    .description("list the workspace's audit events, newest first (owner keys only)")
    .option('--action <action>', 'only this action, e.g. api_key.revoked')
    .option('--target <id>', 'only events about this object (a key, job or webhook secret id)')
    .option('--from <time>', 'only events at or after this RFC 3339 time')
    .option('--to <time>', 'only events before this RFC 3339 time')
    .option('--limit <n>', '1-100', int('--limit'))
    .option('--cursor <cursor>', 'next_cursor of the previous page')
    .action(async (o) => {
      const q = { action: o.action, target_id: o.target, from: o.from, to: o.to, limit: o.limit, cursor: o.cursor };
      const page = await client().auditEvents.list(q);
      const rows = page.data.map((e) => ({ ...e, details: JSON.stringify(e.details) }));
      const columns = ['created_at', 'action', 'actor', 'target_id', 'details'];
      print(globals(), page, () => table(rows, columns) + (page.next_cursor ? `\nnext: --cursor ${page.next_cursor}` : ''));
    });
  addWebhookCommands(program, client, globals);
  addUsageCommand(program, client, globals);
  addBalanceCommand(program, client, globals);
  addKeysCommand(program, client, globals);
  addEventsCommand(program, client, globals);
  addPipelineCommands(program, client, globals);
  addBatchCommands(program, client, globals);
  addBulkActionCommands(jobs, client, globals);

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
