// One run of the admin CLI: resolves the command, parses its flags, runs it and turns what it throws
// into an exit code and a message (never a secret).
import { parseArgs } from 'node:util';
import type { Connection } from '@temporalio/client';
import { createDb, type Database } from '../db/index.js';
import { AdminError } from '../db/repos/workspaces.js';
import type * as DeploymentModule from '../worker/deployment.js';
import { adminDbTimeouts, ConfigProblem, exitCodes, UsageError, type Command, type Context } from './command.js';
import { workspaceCommands } from './commands/workspaces.js';
import { priorityCommands } from './commands/priority.js';
import { reuseCommands } from './commands/reuse.js';
import { budgetCommands } from './commands/budgets.js';
import { seedCommands } from './commands/seed.js';
import { deploymentCommands } from './commands/deployment.js';
import { migrateCommands } from './commands/migrate.js';
import { fairShareCommands } from './commands/fair-share.js';
import { auditCommands } from './commands/audit.js';

/** Every command, in the order `help` lists them. */
export const commands: Record<string, Command> = {
  ...workspaceCommands,
  ...fairShareCommands,
  ...priorityCommands,
  ...reuseCommands,
  ...auditCommands,
  ...budgetCommands,
  ...seedCommands,
  ...deploymentCommands,
  ...migrateCommands,
};

export function helpText(): string {
  const width = Math.max(...Object.values(commands).map((c) => c.usage.length));
  return [
    'usage: npm run admin -- <command> [flags] [--json]',
    '',
    ...Object.values(commands).map((c) => `  ${c.usage.padEnd(width)}  ${c.summary}`),
    '',
    'exit codes: 0 ok, 1 other failure, 2 usage error, 3 not found, 4 forbidden, 5 conflict or insufficient credits',
  ].join('\n');
}

/** Splits argv into the command name (one to three words) and its flags. */
function resolveCommand(argv: readonly string[]): { name: string; rest: string[] } {
  const words: string[] = [];
  for (const a of argv) {
    if (a.startsWith('-') || words.length === 3) break;
    words.push(a);
  }
  if (words.length === 0) throw new UsageError('no command given');
  const three = words.join(' ');
  if (words.length === 3 && commands[three]) return { name: three, rest: argv.slice(3) as string[] };
  const two = words.slice(0, 2).join(' ');
  if (words.length >= 2 && commands[two]) return { name: two, rest: argv.slice(2) as string[] };
  if (commands[words[0]!]) return { name: words[0]!, rest: argv.slice(1) as string[] };
  const group = Object.keys(commands).filter((c) => c.startsWith(`${words[0]} `));
  if (group.length) throw new UsageError(`unknown command "${two}"; "${words[0]}" takes: ${group.map((g) => g.split(' ')[1]).join(', ')}`);
  throw new UsageError(`unknown command "${words[0]}"`);
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs one CLI invocation; never throws, never exits (tests and main() share it). */
export async function runAdmin(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  io: { confirm?: (question: string) => Promise<boolean> } = {},
): Promise<RunResult> {
  const json = argv.includes('--json');
  const args = argv.filter((a) => a !== '--json');
  let db: Database | undefined;
  let temporal: Connection | undefined;
  const fail = (code: number, kind: string, message: string): RunResult => ({
    code,
    stdout: '',
    stderr: json
      ? `${JSON.stringify({ error: { code: kind, message } })}\n`
      : `error: ${message}\n${code === exitCodes.usage ? '\nrun `npm run admin -- help` for the list of commands\n' : ''}`,
  });
  try {
    if (args.length === 0 || args[0] === 'help' || args[0] === '--help' || args[0] === '-h') {
      return {
        code: args.length === 0 ? exitCodes.usage : exitCodes.ok,
        stdout: args.length === 0 ? '' : `${helpText()}\n`,
        stderr: args.length === 0 ? `${helpText()}\n` : '',
      };
    }
    const { name, rest } = resolveCommand(args);
    const cmd = commands[name]!;
    let values: Record<string, string | boolean | undefined>;
    try {
      ({ values } = parseArgs({
        args: rest,
        options: Object.fromEntries(Object.entries(cmd.flags).map(([k, v]) => [k, { type: v.type }])),
        strict: true,
        allowPositionals: false,
      }) as { values: Record<string, string | boolean | undefined> });
    } catch (err) {
      throw new UsageError(`${(err as Error).message.split('\n')[0]} (usage: ${cmd.usage})`);
    }
    const missing = Object.entries(cmd.flags).filter(([k, v]) => v.required && (values[k] === undefined || values[k] === ''));
    if (missing.length) throw new UsageError(`missing ${missing.map(([k]) => `--${k}`).join(', ')} (usage: ${cmd.usage})`);

    const ctx: Context = {
      env,
      confirm: io.confirm ?? (async () => false),
      db() {
        if (!db) {
          const url = env.DATABASE_URL;
          if (!url) throw new ConfigProblem('DATABASE_URL is not set');
          db = createDb(url, 2, {}, adminDbTimeouts(env));
        }
        return db;
      },
      async temporal() {
        if (!temporal) {
          if (!env.TEMPORAL_ADDRESS) throw new ConfigProblem('TEMPORAL_ADDRESS is not set');
          const [{ connectClient }, { temporalSettingsFromEnv, TemporalConfigError }] = await Promise.all([
            import('../shared/temporal-connection.js'),
            import('../shared/config/temporal.js'),
          ]);
          let settings;
          try {
            settings = temporalSettingsFromEnv(env);
          } catch (err) {
            if (err instanceof TemporalConfigError) throw new ConfigProblem(err.problems.join('; '));
            throw err;
          }
          temporal = await connectClient(settings);
        }
        return temporal;
      },
    };
    const out = await cmd.run(ctx, values);
    return { code: exitCodes.ok, stdout: json ? `${JSON.stringify(out.json, null, 2)}\n` : `${out.text.join('\n')}\n`, stderr: '' };
  } catch (err) {
    if (err instanceof UsageError) return fail(exitCodes.usage, 'usage', err.message);
    if (err instanceof AdminError) {
      const code = {
        invalid: exitCodes.usage,
        not_found: exitCodes.notFound,
        forbidden: exitCodes.forbidden,
        conflict: exitCodes.conflict,
        insufficient_credits: exitCodes.conflict,
      }[err.code];
      return fail(code, err.code, err.message);
    }
    if (err instanceof ConfigProblem) return fail(exitCodes.other, 'config', err.message);
    if ((err as Error).name === 'DeploymentError') {
      const code = (err as DeploymentModule.DeploymentError).code;
      return fail({ invalid: exitCodes.usage, not_found: exitCodes.notFound, conflict: exitCodes.conflict }[code], code, (err as Error).message);
    }
    const pgCode = (err as { code?: string }).code;
    if (pgCode === '23505') return fail(exitCodes.conflict, 'conflict', 'already exists');
    if (pgCode === '23514') return fail(exitCodes.conflict, 'conflict', 'the change would break a constraint (for example a negative balance)');
    // Connection errors and the like: name the failure, never the connection string.
    return fail(exitCodes.other, 'error', `${(err as Error).name}: ${redact((err as Error).message ?? String(err), env)}`);
  } finally {
    await db?.destroy().catch(() => undefined);
    await temporal?.close().catch(() => undefined);
  }
}

/** Removes any configured secret (connection string, S3 keys) from a message before printing it. */
function redact(message: string, env: NodeJS.ProcessEnv): string {
  let m = message;
  for (const v of [
    env.DATABASE_URL,
    env.S3_SECRET_KEY,
    env.S3_ACCESS_KEY,
    env.S3_MEDIA_PREFIX_SECRET,
    env.AWS_SECRET_ACCESS_KEY,
    env.AWS_SESSION_TOKEN,
    env.WEBHOOK_SECRETS_KEY,
  ]) {
    if (v && v.length >= 4) m = m.split(v).join('[redacted]');
  }
  return m;
}
