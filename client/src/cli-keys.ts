// `mediagen keys create|list|revoke`: the workspace's API keys (POST/GET/DELETE /v1/api-keys; owner
// keys with the admin scope). A new key has no more than the key the CLI runs with; its secret is
// printed once.
import type { Command } from 'commander';
import type { MediaGenClient } from './client.js';
import { print, table, usageError, type GlobalOpts } from './cli-support.js';
import type { ApiKeyCreate } from './types.js';

const scopeNames = ['read', 'generate', 'uploads', 'admin'] as const;

/** `a,b` → ['a', 'b'] (empty parts dropped). */
const list = (text: string) =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

interface CreateFlags {
  scopes: string;
  models?: string;
  kinds?: string;
  ips?: string;
  expiresAt?: string;
  budget?: string;
  budgetPeriod: string;
}

/** The create body from the flags (the server checks the rest and answers its 4xx). */
function createBody(name: string, o: CreateFlags): ApiKeyCreate {
  const scopes = list(o.scopes);
  const unknown = scopes.filter((s) => !(scopeNames as readonly string[]).includes(s));
  if (unknown.length || !scopes.length) usageError(`--scopes takes ${scopeNames.join(', ')} separated by commas; got "${o.scopes}"`);
  if (o.budget !== undefined && !/^\d+$/.test(o.budget)) usageError(`--budget takes a whole number of credits; got "${o.budget}"`);
  if (o.budgetPeriod !== 'day' && o.budgetPeriod !== 'month') usageError(`--budget-period takes day or month; got "${o.budgetPeriod}"`);
  return {
    name,
    scopes: scopes as ApiKeyCreate['scopes'],
    ...(o.models ? { allowed_models: list(o.models) } : {}),
    ...(o.kinds ? { allowed_kinds: list(o.kinds) as ApiKeyCreate['allowed_kinds'] } : {}),
    ...(o.ips ? { allowed_ips: list(o.ips) } : {}),
    ...(o.expiresAt ? { expires_at: o.expiresAt } : {}),
    ...(o.budget !== undefined ? { budget: { limit: Number(o.budget), period: o.budgetPeriod as 'day' | 'month' } } : {}),
  };
}

export function addKeysCommand(program: Command, client: () => MediaGenClient, globals: () => GlobalOpts): void {
  const keys = program.command('keys').description("the workspace's API keys (owner keys with the admin scope)");
  keys
    .command('create <name>')
    .description('mint a key with no more than the key in use; prints its secret once')
    .requiredOption('--scopes <scopes>', `what it may call: ${scopeNames.join(', ')} (comma-separated)`)
    .option('--models <models>', 'the models its creates may use (comma-separated)')
    .option('--kinds <kinds>', 'the job kinds its creates may make (comma-separated)')
    .option('--ips <cidrs>', 'the networks it may be used from (comma-separated CIDRs)')
    .option('--expires-at <iso>', 'when it stops working (ISO 8601)')
    .option('--budget <credits>', 'a spend limit of the key per period')
    .option('--budget-period <period>', 'the budget period: day or month', 'month')
    .action(async (name: string, o: CreateFlags) => {
      const r = await client().apiKeys.create(createBody(name, o));
      const k = r.data;
      print(globals(), r, () => [`key ${k.id} (${k.name}): ${k.scopes.join(', ')}`, `secret (shown once, store it now): ${k.key}`].join('\n'));
    });
  keys
    .command('list')
    .description('every key of the workspace with its rules (never a secret)')
    .action(async () => {
      const r = await client().apiKeys.list();
      const rows = r.data.map((k) => ({
        id: k.id,
        name: k.name,
        scopes: k.scopes.join(','),
        models: k.allowed_models?.join(',') ?? '*',
        ips: k.allowed_ips?.join(',') ?? '*',
        expires: k.expires_at ?? '',
        revoked: k.revoked_at ?? '',
      }));
      print(globals(), r, () => table(rows, ['id', 'name', 'scopes', 'models', 'ips', 'expires', 'revoked']));
    });
  keys
    .command('revoke <id>')
    .description('revoke a key at once on every gateway')
    .action(async (id: string) => {
      const r = await client().apiKeys.revoke(id);
      print(globals(), r, () => `revoked ${r.data.id} (${r.data.name}) at ${r.data.revoked_at ?? ''}`);
    });
}
