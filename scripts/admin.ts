// The admin CLI: an OPERATOR tool, `npm run admin -- <command> [flags]`. It is not an access
// control boundary: whoever can run it with a DATABASE_URL can do anything the database role can
// (`--as` only records which owner a key change is made for; it authenticates nobody). Run it only
// from an operator's shell, with a database role that the gateway and workers never get, never
// behind an API or from an untrusted process. `migrate down` asks for confirmation (`--yes` skips
// the question for scripts).
// Human text by default, `--json` for scripts. Exit codes scripts can rely on:
//   0 ok · 1 other failure · 2 usage error · 3 not found · 4 forbidden · 5 conflict / insufficient credits
// It reads DATABASE_URL (and S3_* for `seed`) from the environment and never prints a secret
// except the API key it has just created, once.
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { realpathSync } from 'node:fs';
import { createDb, type Database } from '../db/index.js';
import { grantAppRole } from '../db/roles.js';
import { migrateDownAll, migrateToLatest } from '../db/migrate.js';
import {
  AdminError,
  addMember,
  adjustCredits,
  createApiKey,
  createProject,
  createWorkspace,
  getWorkspace,
  listApiKeys,
  listProjects,
  revokeApiKey,
} from '../db/repos/workspaces.js';
import { rotateWebhookSecret } from '../db/repos/webhooks.js';
import { secretsEncryptionKey } from '../shared/webhook-signing.js';
import { missingRoleSecrets } from '../shared/routing.js';
import type { Connection } from '@temporalio/client';
import type * as DeploymentModule from '../worker/deployment.js';
// The seed's modules (object storage client, media renderer) load only for `seed`, so every other
// command starts fast.
type SeedModule = typeof import('./seed.js');

export const exitCodes = { ok: 0, other: 1, usage: 2, notFound: 3, forbidden: 4, conflict: 5 } as const;

export class UsageError extends Error {
  override name = 'UsageError';
}

type FlagSpec = Record<string, { type: 'string' | 'boolean'; required?: boolean; help: string }>;

interface Command {
  usage: string;
  summary: string;
  flags: FlagSpec;
  run(ctx: Context, flags: Record<string, string | boolean | undefined>): Promise<Output>;
}

interface Output {
  /** The machine-readable result (printed with --json). */
  json: unknown;
  /** Human-readable lines. */
  text: string[];
}

interface Context {
  db(): Database;
  /** The Temporal server (TEMPORAL_ADDRESS), for the `deployment` commands. */
  temporal(): Promise<Connection>;
  env: NodeJS.ProcessEnv;
  /** Asks the operator a yes/no question; false when nobody can answer (no terminal). */
  confirm(question: string): Promise<boolean>;
}

const ws = { type: 'string', required: true, help: 'workspace id (ws_...)' } as const;

function positiveInt(name: string, value: string): number {
  if (!/^\d+$/.test(value)) throw new UsageError(`--${name} must be a positive integer, got "${value}"`);
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n <= 0) throw new UsageError(`--${name} must be a positive integer, got "${value}"`);
  return n;
}

function nonNegativeInt(name: string, value: string): number {
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) throw new UsageError(`--${name} must be a non-negative integer, got "${value}"`);
  return Number(value);
}

function nonEmpty(name: string, value: string): string {
  const v = value.trim();
  if (!v) throw new UsageError(`--${name} must not be empty`);
  if (v.length > 200) throw new UsageError(`--${name} is longer than 200 characters`);
  return v;
}

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

function creditsCommand(direction: 'grant' | 'deduct'): Command {
  return {
    usage: `credits ${direction} --workspace W --amount N --reason TEXT`,
    summary: direction === 'grant' ? 'add credits (ledger entry "grant")' : 'remove credits (ledger entry "deduct"); never below zero',
    flags: { workspace: ws, amount: { type: 'string', required: true, help: 'credits, a positive integer' }, reason: { type: 'string', required: true, help: 'why, kept in the ledger' } },
    async run(ctx, f) {
      const amount = positiveInt('amount', f.amount as string);
      const reason = nonEmpty('reason', f.reason as string);
      const { credits } = await ctx.db().transaction().execute((tx) => adjustCredits(tx, f.workspace as string, direction === 'grant' ? amount : -amount, reason));
      return {
        json: { workspace_id: f.workspace, delta: direction === 'grant' ? amount : -amount, credits },
        text: [`${direction === 'grant' ? 'granted' : 'deducted'} ${amount} credits; workspace ${f.workspace as string} now has ${credits}`],
      };
    },
  };
}

const deploymentFlag = { type: 'string', help: 'Worker Deployment name (default WORKER_DEPLOYMENT_NAME)' } as const;
const buildIdFlag = { type: 'string', required: true, help: "the build's id (its workers log it as buildId; `deployment status` lists them)" } as const;

/** The deployment module, the Temporal connection and the names every `deployment` command needs. */
async function deploymentContext(ctx: Context, f: Record<string, string | boolean | undefined>) {
  const name = (f.deployment as string | undefined) ?? ctx.env.WORKER_DEPLOYMENT_NAME;
  if (!name) throw new UsageError('no deployment: pass --deployment or set WORKER_DEPLOYMENT_NAME');
  const d = (await import('../worker/deployment.js')) as typeof DeploymentModule;
  const svc = (await ctx.temporal()).workflowService;
  return { d, svc, name, namespace: ctx.env.TEMPORAL_NAMESPACE || 'default', who: d.identity('mediagen-admin') };
}

export const commands: Record<string, Command> = {
  'workspace create': {
    usage: 'workspace create --name N --owner EMAIL [--credits N]',
    summary: 'create a workspace with its first owner',
    flags: {
      name: { type: 'string', required: true, help: 'workspace name' },
      owner: { type: 'string', required: true, help: "owner's email" },
      credits: { type: 'string', help: 'initial credits (default 0)' },
    },
    async run(ctx, f) {
      const credits = f.credits === undefined ? 0 : nonNegativeInt('credits', f.credits as string);
      const created = await createWorkspace(ctx.db(), { name: nonEmpty('name', f.name as string), ownerEmail: f.owner as string, credits });
      const row = await getWorkspace(ctx.db(), created.id);
      return {
        json: { id: row.id, name: row.name, credits: row.credits, owner: (f.owner as string).trim().toLowerCase() },
        text: [`created workspace ${row.id} "${row.name}" with ${row.credits} credits`],
      };
    },
  },
  'workspace show': {
    usage: 'workspace show --workspace W',
    summary: 'show a workspace, its balance and members',
    flags: { workspace: ws },
    async run(ctx, f) {
      const db = ctx.db();
      const row = await getWorkspace(db, f.workspace as string);
      const members = await db.selectFrom('workspace_members').select(['email', 'role']).where('workspace_id', '=', row.id).orderBy('email').execute();
      return {
        json: { id: row.id, name: row.name, credits: row.credits, created_at: iso(row.created_at), members },
        text: [`${row.id} "${row.name}": ${row.credits} credits`, ...members.map((m) => `  ${m.role.padEnd(6)} ${m.email}`)],
      };
    },
  },
  'member add': {
    usage: 'member add --workspace W --email E --role owner|member',
    summary: 'add a member (or change their role)',
    flags: { workspace: ws, email: { type: 'string', required: true, help: "member's email" }, role: { type: 'string', required: true, help: 'owner or member' } },
    async run(ctx, f) {
      const role = f.role as string;
      if (role !== 'owner' && role !== 'member') throw new UsageError(`--role must be owner or member, got "${role}"`);
      const m = await addMember(ctx.db(), f.workspace as string, f.email as string, role);
      return { json: m, text: [`${m.email} is now ${role === 'owner' ? 'an owner' : 'a member'} of workspace ${m.workspace_id}`] };
    },
  },
  'key create': {
    usage: 'key create --workspace W --name N --as EMAIL',
    summary: 'create an API key (owners only); the full key is printed once',
    flags: { workspace: ws, name: { type: 'string', required: true, help: 'a label for the key' }, as: { type: 'string', required: true, help: 'email of the owner acting' } },
    async run(ctx, f) {
      const k = await createApiKey(ctx.db(), { workspaceId: f.workspace as string, name: nonEmpty('name', f.name as string), actorEmail: f.as as string });
      return {
        json: { id: k.id, name: k.name, workspace_id: f.workspace, key: k.key },
        text: [`created API key ${k.id} "${k.name}" in workspace ${f.workspace as string}`, '', `  ${k.key}`, '', 'Store it now: it cannot be shown again.'],
      };
    },
  },
  'key list': {
    usage: 'key list --workspace W',
    summary: "list a workspace's API keys (never their secrets)",
    flags: { workspace: ws },
    async run(ctx, f) {
      const db = ctx.db();
      await getWorkspace(db, f.workspace as string);
      const keys = await listApiKeys(db, f.workspace as string);
      const rows = keys.map((k) => ({
        id: k.id,
        name: k.name,
        created_by: k.created_by,
        created_at: iso(k.created_at),
        last_used_at: iso(k.last_used_at),
        revoked_at: iso(k.revoked_at),
        status: k.revoked_at ? 'revoked' : 'active',
      }));
      return {
        json: rows,
        text: rows.length
          ? rows.map((k) => `${k.id}  ${k.status.padEnd(7)}  ${k.name}  (by ${k.created_by}, ${k.created_at}${k.last_used_at ? `, last used ${k.last_used_at}` : ''})`)
          : ['no API keys'],
      };
    },
  },
  'key revoke': {
    usage: 'key revoke --workspace W --key KEYID --as EMAIL',
    summary: 'revoke an API key at once (owners only)',
    flags: { workspace: ws, key: { type: 'string', required: true, help: 'key id (the part after mg_live_)' }, as: { type: 'string', required: true, help: 'email of the owner acting' } },
    async run(ctx, f) {
      const db = ctx.db();
      await getWorkspace(db, f.workspace as string);
      const r = await revokeApiKey(db, { workspaceId: f.workspace as string, keyId: f.key as string, actorEmail: f.as as string });
      return { json: { id: r.id, status: 'revoked' }, text: [`revoked API key ${r.id}`] };
    },
  },
  'webhook secret rotate': {
    usage: 'webhook secret rotate --workspace W --as EMAIL [--grace-hours N]',
    summary: "create the workspace's new webhook signing secret (printed once); the old one keeps signing for the grace period (default 24 h) (owners only)",
    flags: {
      workspace: ws,
      as: { type: 'string', required: true, help: 'email of the owner acting' },
      'grace-hours': { type: 'string', help: 'hours the previous secret keeps signing beside the new one (default 24; 0 stops it now)' },
    },
    async run(ctx, f) {
      const graceHours = f['grace-hours'] === undefined ? 24 : nonNegativeInt('grace-hours', f['grace-hours'] as string);
      let key: Buffer;
      const missing = missingRoleSecrets(ctx.env, ['admin']);
      if (missing.length) throw new ConfigProblem(missing.join('; '));
      try {
        key = secretsEncryptionKey(ctx.env);
      } catch {
        throw new ConfigProblem('WEBHOOK_SECRETS_KEY (or S3_SECRET_KEY) is not set: the same key material as the workers is needed to store the secret');
      }
      const r = await rotateWebhookSecret(ctx.db(), { workspaceId: f.workspace as string, actorEmail: f.as as string, graceSeconds: graceHours * 3600, key });
      const until = iso(r.previousUntil);
      return {
        json: { id: r.id, secret: r.secret, previous_secret_signs_until: until },
        text: [
          `webhook signing secret ${r.id} for workspace ${f.workspace as string} (shown only now; verify deliveries with it):`,
          r.secret,
          until ? `the previous secret keeps signing until ${until}` : 'no previous secret',
        ],
      };
    },
  },
  'credits grant': creditsCommand('grant'),
  'credits deduct': creditsCommand('deduct'),
  'project create': {
    usage: 'project create --workspace W --name N',
    summary: 'create a project',
    flags: { workspace: ws, name: { type: 'string', required: true, help: 'project name' } },
    async run(ctx, f) {
      const p = await createProject(ctx.db(), f.workspace as string, nonEmpty('name', f.name as string));
      return { json: { id: p.id, name: p.name, workspace_id: p.workspace_id, created_at: iso(p.created_at) }, text: [`created project ${p.id} "${p.name}"`] };
    },
  },
  'project list': {
    usage: 'project list --workspace W',
    summary: "list a workspace's projects",
    flags: { workspace: ws },
    async run(ctx, f) {
      const db = ctx.db();
      await getWorkspace(db, f.workspace as string);
      const rows = (await listProjects(db, f.workspace as string)).map((p) => ({ id: p.id, name: p.name, created_at: iso(p.created_at) }));
      return { json: rows, text: rows.length ? rows.map((p) => `${p.id}  ${p.name}  (${p.created_at})`) : ['no projects'] };
    },
  },
  seed: {
    usage: 'seed [--demo]',
    summary: 'seed the actor and voice catalog (media into object storage); --demo also the demo workspace',
    flags: { demo: { type: 'boolean', help: 'also ensure the demo workspace, project and a fresh demo key' } },
    async run(ctx, f) {
      const [{ envSchema }, { createStorage }, { seedCatalog, seedDemo }] = await Promise.all([
        import('../shared/config.js'),
        import('../shared/storage.js'),
        import('./seed.js') as Promise<SeedModule>,
      ]);
      const storageEnv = envSchema
        .pick({ S3_ENDPOINT: true, S3_ACCESS_KEY: true, S3_SECRET_KEY: true, S3_BUCKET: true, S3_REGION: true, S3_PUBLIC_BASE_URL: true, PRESIGN_EXPIRY_SECONDS: true, FFMPEG_PATH: true, ESPEAK_PATH: true })
        .safeParse(ctx.env);
      if (!storageEnv.success) {
        throw new ConfigProblem(`object storage is not configured: ${storageEnv.error.issues.map((i) => i.path.join('.')).join(', ')}`);
      }
      const storage = createStorage(storageEnv.data);
      const catalog = await seedCatalog(ctx.db(), storage, {});
      const text = [`catalog: ${catalog.voices} voices, ${catalog.actors} actors; media ${catalog.mediaCreated} rendered, ${catalog.mediaSkipped} already present`];
      let demo: Awaited<ReturnType<SeedModule['seedDemo']>> | undefined;
      if (f.demo) {
        demo = await seedDemo(ctx.db());
        text.push(`demo workspace ${demo.workspaceId} (${demo.credits} credits), project ${demo.projectId}`, `demo API key: ${demo.apiKey}`);
      }
      return {
        json: {
          catalog,
          demo: demo && { workspace_id: demo.workspaceId, project_id: demo.projectId, owner: demo.ownerEmail, credits: demo.credits, api_key_id: demo.apiKeyId, api_key: demo.apiKey },
        },
        text,
      };
    },
  },
  'deployment status': {
    usage: 'deployment status [--deployment D]',
    summary: 'Worker Versioning: the current and ramping build, and each build with its status, drainage, running jobs and task queues',
    flags: { deployment: deploymentFlag },
    async run(ctx, f) {
      const { d, svc, name, namespace } = await deploymentContext(ctx, f);
      const state = await d.describeDeployment(svc, namespace, name);
      if (!state) throw new AdminError('not_found', `no worker of deployment ${name} has polled yet`);
      const versions = [];
      for (const v of state.versions) {
        const info = await d.describeVersion(svc, namespace, name, v.buildId);
        versions.push({ ...v, drainage: info?.drainage ?? null, running: await d.runningOnVersion(svc, namespace, name, v.buildId), taskQueues: info?.taskQueues ?? [] });
      }
      const text = [
        `deployment ${name}: current ${state.current ?? '(unversioned workers)'}${state.ramping ? `, ramping ${state.ramping.buildId ?? '(unversioned)'} at ${state.ramping.percent}%` : ''}`,
        ...versions.map((v) => `  ${v.buildId}  ${v.status}${v.drainage ? ` (${v.drainage})` : ''}  running ${v.running}  created ${v.createdAt ?? '-'}  queues ${v.taskQueues.join(' ')}`),
      ];
      return { json: { ...state, versions }, text };
    },
  },
  'deployment promote': {
    usage: 'deployment promote --build-id B [--deployment D] [--force]',
    summary: 'make a build the current version: new jobs start on it, running jobs stay on their build (rollout, or rollback to an earlier build); refused while the build misses a fleet',
    flags: { 'build-id': buildIdFlag, deployment: deploymentFlag, force: { type: 'boolean', help: 'promote even though some task queue of the current build has no worker of this one' } },
    async run(ctx, f) {
      const { d, svc, name, namespace, who } = await deploymentContext(ctx, f);
      const buildId = f['build-id'] as string;
      const { previous } = await d.setCurrentVersion(svc, namespace, name, buildId, { force: !!f.force, identity: who });
      return { json: { deployment: name, current: buildId, previous }, text: [`${name}: ${buildId} is the current version${previous && previous !== buildId ? ` (was ${previous}; its running jobs finish on it)` : ''}`] };
    },
  },
  'deployment ramp': {
    usage: 'deployment ramp --build-id B --percent N [--deployment D] [--force]',
    summary: 'send N% of new jobs to a build, the rest to the current one (0 ends the ramp)',
    flags: { 'build-id': buildIdFlag, percent: { type: 'string', required: true, help: 'percentage of new jobs, 0–100' }, deployment: deploymentFlag, force: { type: 'boolean', help: 'ramp even though the build misses a task queue' } },
    async run(ctx, f) {
      const percent = Number(f.percent);
      if (!Number.isFinite(percent) || percent < 0 || percent > 100) throw new UsageError('--percent must be a number from 0 to 100');
      const { d, svc, name, namespace, who } = await deploymentContext(ctx, f);
      await d.setRampingVersion(svc, namespace, name, f['build-id'] as string, percent, { force: !!f.force, identity: who });
      return { json: { deployment: name, ramping: percent > 0 ? f['build-id'] : null, percent }, text: [percent > 0 ? `${name}: ${f['build-id'] as string} takes ${percent}% of new jobs` : `${name}: no ramp; the current version takes every new job`] };
    },
  },
  'deployment retire': {
    usage: 'deployment retire --build-id B [--deployment D] [--wait SECONDS]',
    summary: 'once a build that is no longer current has no running jobs (waits up to --wait), delete its version; stop its workers first',
    flags: { 'build-id': buildIdFlag, deployment: deploymentFlag, wait: { type: 'string', help: 'seconds to wait for its running jobs to finish (default 0)' } },
    async run(ctx, f) {
      const waitSeconds = f.wait === undefined ? 0 : nonNegativeInt('wait', f.wait as string);
      const { d, svc, name, namespace, who } = await deploymentContext(ctx, f);
      const buildId = f['build-id'] as string;
      const state = await d.describeDeployment(svc, namespace, name);
      if (state?.current === buildId || state?.ramping?.buildId === buildId) {
        throw new AdminError('conflict', `${buildId} is the ${state.current === buildId ? 'current' : 'ramping'} version: promote another build (or end the ramp) first`);
      }
      const deadline = Date.now() + waitSeconds * 1000;
      let running = await d.runningOnVersion(svc, namespace, name, buildId);
      while (running > 0 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 2000));
        running = await d.runningOnVersion(svc, namespace, name, buildId);
      }
      if (running > 0) throw new AdminError('conflict', `${buildId} still runs ${running} job(s) pinned to it: keep its workers up and try again later (or --wait)`);
      await d.deleteVersion(svc, namespace, name, buildId, who);
      return { json: { deployment: name, retired: buildId }, text: [`${name}: ${buildId} has no running jobs; its version is deleted`] };
    },
  },
  migrate: {
    usage: 'migrate [--app-role NAME]',
    summary: 'apply every pending migration; with --app-role, then grant that role the DML the gateways and workers need (db/roles.ts)',
    flags: { 'app-role': { type: 'string', help: 'the role the gateways and workers connect as (DML only)' } },
    async run(ctx, f) {
      const r = await migrateToLatest(ctx.db());
      const names = (r.results ?? []).map((m) => m.migrationName);
      const text = [names.length ? `applied ${names.join(', ')}` : 'already up to date'];
      const appRole = f['app-role'] as string | undefined;
      if (appRole !== undefined) {
        const granted = await grantAppRole(ctx.db(), appRole);
        text.push(`app role ${appRole}: DML on ${granted.tables.length} tables (administration tables read-only)`);
      }
      return { json: { applied: names, ...(appRole !== undefined ? { app_role: appRole } : {}) }, text };
    },
  },
  'migrate down': {
    usage: 'migrate down',
    summary: 'revert every migration (drops all tables and their data); asks first unless --yes',
    flags: { yes: { type: 'boolean', help: 'do not ask for confirmation (scripts)' } },
    async run(ctx, flags) {
      const target = safeDatabaseName(ctx.env.DATABASE_URL);
      if (!flags.yes && !(await ctx.confirm(`This drops every table of database ${target} and all its data. Type "yes" to continue: `))) {
        throw new UsageError('migrate down not confirmed: answer "yes" at the prompt, or pass --yes');
      }
      const r = await migrateDownAll(ctx.db());
      const names = (r.results ?? []).map((m) => m.migrationName);
      return { json: { reverted: names }, text: [names.length ? `reverted ${names.join(', ')}` : 'nothing to revert'] };
    },
  },
};

class ConfigProblem extends Error {
  override name = 'ConfigProblem';
}

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
export async function runAdmin(argv: readonly string[], env: NodeJS.ProcessEnv = process.env, io: { confirm?: (question: string) => Promise<boolean> } = {}): Promise<RunResult> {
  const json = argv.includes('--json');
  const args = argv.filter((a) => a !== '--json');
  let db: Database | undefined;
  let temporal: Connection | undefined;
  const fail = (code: number, kind: string, message: string): RunResult => ({
    code,
    stdout: '',
    stderr: json ? `${JSON.stringify({ error: { code: kind, message } })}\n` : `error: ${message}\n${code === exitCodes.usage ? '\nrun `npm run admin -- help` for the list of commands\n' : ''}`,
  });
  try {
    if (args.length === 0 || args[0] === 'help' || args[0] === '--help' || args[0] === '-h') {
      return { code: args.length === 0 ? exitCodes.usage : exitCodes.ok, stdout: args.length === 0 ? '' : `${helpText()}\n`, stderr: args.length === 0 ? `${helpText()}\n` : '' };
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
          db = createDb(url, 2);
        }
        return db;
      },
      async temporal() {
        if (!temporal) {
          if (!env.TEMPORAL_ADDRESS) throw new ConfigProblem('TEMPORAL_ADDRESS is not set');
          const { Connection } = await import('@temporalio/client');
          temporal = await Connection.connect({ address: env.TEMPORAL_ADDRESS });
        }
        return temporal;
      },
    };
    const out = await cmd.run(ctx, values);
    return { code: exitCodes.ok, stdout: json ? `${JSON.stringify(out.json, null, 2)}\n` : `${out.text.join('\n')}\n`, stderr: '' };
  } catch (err) {
    if (err instanceof UsageError) return fail(exitCodes.usage, 'usage', err.message);
    if (err instanceof AdminError) {
      const code = { invalid: exitCodes.usage, not_found: exitCodes.notFound, forbidden: exitCodes.forbidden, conflict: exitCodes.conflict, insufficient_credits: exitCodes.conflict }[err.code];
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
  for (const v of [env.DATABASE_URL, env.S3_SECRET_KEY, env.S3_ACCESS_KEY, env.WEBHOOK_SECRETS_KEY]) {
    if (v && v.length >= 4) m = m.split(v).join('[redacted]');
  }
  return m;
}

/** The database name of a connection string (never its credentials), for the confirmation prompt. */
function safeDatabaseName(url: string | undefined): string {
  try {
    return url ? decodeURIComponent(new URL(url).pathname.slice(1)) || '(default)' : '(DATABASE_URL not set)';
  } catch {
    return '(unparsable DATABASE_URL)';
  }
}

/** A yes/no prompt on the terminal; without one (a pipe, CI) the answer is no. */
async function terminalConfirm(question: string): Promise<boolean> {
  if (!process.stdin.isTTY) return false;
  const { createInterface } = await import('node:readline/promises');
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return (await rl.question(question)).trim().toLowerCase() === 'yes';
  } finally {
    rl.close();
  }
}

async function main(): Promise<void> {
  const r = await runAdmin(process.argv.slice(2), process.env, { confirm: terminalConfirm });
  if (r.stdout) process.stdout.write(r.stdout);
  if (r.stderr) process.stderr.write(r.stderr);
  process.exitCode = r.code;
}

const invokedDirectly = (() => {
  try {
    return process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href;
  } catch {
    return false;
  }
})();
if (invokedDirectly) await main();
