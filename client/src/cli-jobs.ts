// `mediagen images|videos|talking-actors|replace-actors generate …` and `mediagen jobs get|timeline|
// wait|list`: creating a job of each kind and following it. Every create takes labels, a priority
// and a deadline, and with --wait follows the job to its end (a progress bar on a terminal, JSON
// lines otherwise), downloading its outputs with --out.
import { Option, type Command } from 'commander';
import { jobPriorities, kindOfJobId, type JobRef, type MediaGenClient } from './client.js';
import { commonFields, labelOptions, metadataPair } from './cli-labels.js';
import {
  collect,
  controlFields,
  controlOptions,
  created,
  describeJob,
  describeTimeline,
  int,
  num,
  print,
  reuseOptions,
  table,
  usageError,
  waitAndReport,
  type GlobalOpts,
} from './cli-support.js';

type Client = () => MediaGenClient;
type Globals = () => GlobalOpts;

/** The options of following a job: shared by every create and by `jobs wait`. */
const waitOptions = (cmd: Command) =>
  reuseOptions(cmd)
    .option('--deadline-seconds <n>', 'cancel the job unless it completed within this many seconds (10-604800)', int('--deadline-seconds'))
    .option('--wait', 'wait until the job finishes, showing its progress')
    .option('--out <path>', 'with --wait: download the outputs to this file or directory');

// Every create takes a priority (docs/api/priority.md); the server's default is normal.
const generateOptions = (cmd: Command) =>
  waitOptions(
    labelOptions(cmd, 'label the job with this tag', 'label the job with this metadata pair').addOption(
      new Option('--priority <level>', "high (if the workspace is allowed it), normal or low (cheaper where the model's price says so)").choices(jobPriorities),
    ),
  );

/** The four `generate` commands, one per job kind, in the order the help lists them. */
export function addGenerateCommands(program: Command, client: Client, globals: Globals): void {
  addImageCommands(program, client, globals);
  addVideoCommands(program, client, globals);
  addTalkingActorCommands(program, client, globals);
  addReplaceActorCommands(program, client, globals);
}

/** `images generate`: the image models take a prompt, an aspect ratio and a count. */
function addImageCommands(program: Command, client: Client, globals: Globals): void {
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
}

/** `videos generate`: a model is required (no default fits every use), with optional reference and frame uploads. */
function addVideoCommands(program: Command, client: Client, globals: Globals): void {
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
}

/** `talking-actors generate`: the voice options are sent only when one is given, so the voice's own defaults apply otherwise. */
function addTalkingActorCommands(program: Command, client: Client, globals: Globals): void {
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
}

/** `replace-actors generate`: the character and the motion come as uploads or as public URLs. */
function addReplaceActorCommands(program: Command, client: Client, globals: Globals): void {
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
}

/** A job id's kind comes from its prefix, so `jobs get` and `jobs wait` take any job's id alone. */
const refOf = (id: string): JobRef => {
  const kind = kindOfJobId(id);
  if (!kind) usageError(`${id} is not a job id (img_…, vid_…, rpl_… or tlk_…)`);
  return { kind, id };
};

/** `jobs get|timeline|wait|list`; returns the `jobs` command so the bulk actions can join it. */
export function addJobCommands(program: Command, client: Client, globals: Globals): Command {
  const jobs = program.command('jobs').description('find and follow jobs of any kind');
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
  addJobListCommand(jobs, client, globals);
  return jobs;
}

/** `jobs list`: the job list's filters as options, one page at a time. */
function addJobListCommand(jobs: Command, client: Client, globals: Globals): void {
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
}
