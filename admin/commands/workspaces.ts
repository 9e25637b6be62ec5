// The commands on workspaces and what they hold: members, API keys, the webhook signing secret,
// credits and projects.
import {
  addMember,
  removeMember,
  adjustCredits,
  createApiKey,
  createProject,
  createWorkspace,
  getWorkspace,
  listApiKeys,
  listProjects,
  revokeApiKey,
} from '../../db/repos/workspaces.js';
import { rotateWebhookSecret } from '../../db/repos/webhooks.js';
import { secretsDecryptionKeys, secretsEncryptionKey } from '../../shared/webhooks/signing.js';
import { rekeyWebhookSecrets } from '../../db/repos/webhook-secret-keys.js';
import { missingRoleSecrets } from '../../shared/routing.js';
import { describeShare } from './fair-share.js';
import { workspaceBudgets } from '../../db/repos/budgets.js';
import { budgetRow } from './budgets.js';
import { ConfigProblem, iso, nonEmpty, nonNegativeInt, positiveInt, UsageError, ws, type Command } from '../command.js';

function creditsCommand(direction: 'grant' | 'deduct'): Command {
  return {
    usage: `credits ${direction} --workspace W --amount N --reason TEXT`,
    summary: direction === 'grant' ? 'add credits (ledger entry "grant")' : 'remove credits (ledger entry "deduct"); never below zero',
    flags: {
      workspace: ws,
      amount: { type: 'string', required: true, help: 'credits, a positive integer' },
      reason: { type: 'string', required: true, help: 'why, kept in the ledger' },
    },
    async run(ctx, f) {
      const amount = positiveInt('amount', f.amount as string);
      const reason = nonEmpty('reason', f.reason as string);
      const { credits } = await ctx
        .db()
        .transaction()
        .execute((tx) => adjustCredits(tx, f.workspace as string, direction === 'grant' ? amount : -amount, reason));
      return {
        json: { workspace_id: f.workspace, delta: direction === 'grant' ? amount : -amount, credits },
        text: [`${direction === 'grant' ? 'granted' : 'deducted'} ${amount} credits; workspace ${f.workspace as string} now has ${credits}`],
      };
    },
  };
}

export const workspaceCommands: Record<string, Command> = {
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
    summary: 'show a workspace, its balance, fair share and members',
    flags: { workspace: ws },
    async run(ctx, f) {
      const db = ctx.db();
      const row = await getWorkspace(db, f.workspace as string);
      const members = await db.selectFrom('workspace_members').select(['email', 'role']).where('workspace_id', '=', row.id).orderBy('email').execute();
      return {
        json: { id: row.id, name: row.name, credits: row.credits, fair_share_weight: row.fair_share_weight, created_at: iso(row.created_at), members },
        text: [
          `${row.id} "${row.name}": ${row.credits} credits, fair share ${describeShare(row.fair_share_weight)}`,
          ...members.map((m) => `  ${m.role.padEnd(6)} ${m.email}`),
        ],
      };
    },
  },
  'member add': {
    usage: 'member add --workspace W --email E --role owner|member',
    summary: 'add a member (or change their role); recorded in the audit log',
    flags: {
      workspace: ws,
      email: { type: 'string', required: true, help: "member's email" },
      role: { type: 'string', required: true, help: 'owner or member' },
    },
    async run(ctx, f) {
      const role = f.role as string;
      if (role !== 'owner' && role !== 'member') throw new UsageError(`--role must be owner or member, got "${role}"`);
      const m = await addMember(ctx.db(), f.workspace as string, f.email as string, role);
      return { json: m, text: [`${m.email} is now ${role === 'owner' ? 'an owner' : 'a member'} of workspace ${m.workspace_id}`] };
    },
  },
  'member remove': {
    usage: 'member remove --workspace W --email E',
    summary: 'remove a member (never the last owner); recorded in the audit log',
    flags: {
      workspace: ws,
      email: { type: 'string', required: true, help: "member's email" },
    },
    async run(ctx, f) {
      const m = await removeMember(ctx.db(), f.workspace as string, f.email as string);
      return { json: m, text: [`${m.email} is no longer a member of workspace ${m.workspace_id}`] };
    },
  },
  'key create': {
    usage: 'key create --workspace W --name N --as EMAIL',
    summary: 'create an API key (owners only); the full key is printed once',
    flags: {
      workspace: ws,
      name: { type: 'string', required: true, help: 'a label for the key' },
      as: { type: 'string', required: true, help: 'email of the owner acting' },
    },
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
      const budgets = (await workspaceBudgets(db, f.workspace as string, new Date())).filter((b) => b.budget.scope === 'key').map(budgetRow);
      const rows = keys.map((k) => ({
        id: k.id,
        name: k.name,
        created_by: k.created_by,
        created_at: iso(k.created_at),
        last_used_at: iso(k.last_used_at),
        revoked_at: iso(k.revoked_at),
        status: k.revoked_at ? 'revoked' : 'active',
        budgets: budgets
          .filter((b) => b.scope_id === k.id)
          .map(({ period, limit, spent, remaining, resets_at }) => ({ period, limit, spent, remaining, resets_at })),
      }));
      return {
        json: rows,
        text: rows.length
          ? rows.map(
              (k) =>
                `${k.id}  ${k.status.padEnd(7)}  ${k.name}  (by ${k.created_by}, ${k.created_at}${k.last_used_at ? `, last used ${k.last_used_at}` : ''})` +
                k.budgets.map((b) => `  budget ${b.period}: ${b.spent}/${b.limit}, resets ${b.resets_at}`).join(''),
            )
          : ['no API keys'],
      };
    },
  },
  'key revoke': {
    usage: 'key revoke --workspace W --key KEYID --as EMAIL',
    summary: 'revoke an API key at once (owners only)',
    flags: {
      workspace: ws,
      key: { type: 'string', required: true, help: 'key id (the part after mg_live_)' },
      as: { type: 'string', required: true, help: 'email of the owner acting' },
    },
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
  'webhook secrets rekey': {
    usage: 'webhook secrets rekey',
    summary:
      'after a WEBHOOK_SECRETS_KEY rotation: store every webhook signing secret again under the current key (the old one in WEBHOOK_SECRETS_KEY_PREVIOUS)',
    flags: {},
    async run(ctx) {
      const missing = missingRoleSecrets(ctx.env, ['admin']);
      if (missing.length) throw new ConfigProblem(missing.join('; '));
      let keys: Buffer[];
      try {
        keys = secretsDecryptionKeys(ctx.env);
      } catch {
        throw new ConfigProblem('WEBHOOK_SECRETS_KEY (or S3_SECRET_KEY) is not set: the new key is needed to store the secrets under it');
      }
      const r = await rekeyWebhookSecrets(ctx.db(), keys);
      const text = [`${r.rekeyed} webhook secret(s) stored again under the current key; ${r.current} already were`];
      if (r.unreadable.length) text.push(`${r.unreadable.length} could be opened with none of the keys (left as they were): ${r.unreadable.join(', ')}`);
      return { json: { rekeyed: r.rekeyed, already_current: r.current, unreadable: r.unreadable }, text };
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
};
