// `mediagen`: the Media Generation API from a terminal or a script.
//   Configuration: MEDIAGEN_API_KEY and MEDIAGEN_BASE_URL (or --api-key / --base-url, which win).
//   --wait follows a job: a progress bar on a terminal, JSON lines otherwise. --json prints results
//   as JSON. Exit codes: 0 ok · 1 other · 2 usage or invalid request · 3 not found ·
//   4 auth (401/403) · 5 credits (402) · 6 job or pipeline failed.
import { Command, CommanderError, Option } from 'commander';
import { MediaGenClient } from './client.js';
import { uploadFile } from './node.js';
import { addWebhookCommands } from './cli-webhooks.js';
import { addUsageCommand } from './cli-usage.js';
import { addBalanceCommand } from './cli-balance.js';
import { addKeysCommand } from './cli-keys.js';
import { addEventsCommand } from './cli-events.js';
import { addPipelineCommands } from './cli-pipelines.js';
import { addBatchCommands } from './cli-batches.js';
import { addBulkActionCommands } from './cli-bulk-actions.js';
import { addGenerateCommands, addJobCommands } from './cli-jobs.js';
import { exitCodeFor, exitCodes, int, messageFor, print, table, type GlobalOpts } from './cli-support.js';

export { exitCodeFor, exitCodes, messageFor, overallPercent } from './cli-support.js';

// ------------------------------------------------------------------ commands

/** The `mediagen` program, every command added in the order the help lists them. */
export function buildProgram(): Command {
  const program = newProgram();
  const globals = (): GlobalOpts => program.opts<GlobalOpts>();
  // A client per command, built when it runs: the global options are parsed by then.
  const client = () => {
    const g = globals();
    return new MediaGenClient({
      apiKey: g.apiKey ?? process.env.MEDIAGEN_API_KEY ?? '',
      baseUrl: g.baseUrl ?? process.env.MEDIAGEN_BASE_URL ?? '',
      maxRetries: g.maxRetries,
    });
  };

  addGenerateCommands(program, client, globals);
  addUploadCommands(program, client, globals);
  const jobs = addJobCommands(program, client, globals);
  addDiscoveryCommands(program, client, globals);
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

/** The program itself: its global options and the help's closing lines (exit codes, examples). */
function newProgram(): Command {
  return new Command('mediagen')
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
}

/** `upload FILE`, `upload-from-url URL` and `uploads delete ID`: the files jobs take as inputs. */
function addUploadCommands(program: Command, client: () => MediaGenClient, globals: () => GlobalOpts): void {
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
}

/** What a job can be made from and is bounded by: projects, actors, voices, models, budgets, and the audit trail. */
function addDiscoveryCommands(program: Command, client: () => MediaGenClient, globals: () => GlobalOpts): void {
  // The paged lists share one shape: --limit and --cursor, a table, and the next page's cursor.
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
  addAuditCommand(program, client, globals);
}

/** `audit`: the workspace's audit events, filtered by action, target and time. */
function addAuditCommand(program: Command, client: () => MediaGenClient, globals: () => GlobalOpts): void {
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
