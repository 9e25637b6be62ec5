// POST/GET/DELETE /v1/api-keys (extension): an owner's key with the admin scope manages the
// workspace's keys itself. A new key has no more than the key that mints it: its scopes are a
// subset of the minting key's, and each rule the minting key has (allowed models, kinds, IPs, an
// expiry) the new key has too, as narrow or narrower; a rule left out is inherited. Its secret is in
// the create's answer only. Every act is audited; a revocation reaches every gateway at once
// (api/auth.ts). The rules are in docs/api/api-keys.md.
import { z } from 'zod';
import type { Response } from 'express';
import type { AppDeps } from '../deps.js';
import { authOf, keyScopeDenied, presentedSecret, type Auth } from '../auth.js';
import { Endpoints } from '../endpoint.js';
import { ApiError, invalidRequest } from '../errors.js';
import { apiKeyScopes, cidrContains, parseCidr, type ApiKeyScope, type KeyRules } from '../../shared/api-key-rules.js';
import { jobKinds } from '../../kinds/index.js';
import { routeFor } from '../../shared/catalog.js';
import { getKey, KeyManagementRefused, listKeys, mintKey, revokeKey, type KeyRow, type MintedKeyRules } from '../../db/repos/api-key-admin.js';
import { budgetsFor, standingOf } from '../../db/repos/budgets.js';
import { presentBudget, budgetListSchema } from './budgets.js';

const TAG = 'API keys';

const keySchema = z.object({
  id: z.string().describe('the key id (the part of the key after mg_live_ and before the secret)'),
  name: z.string().describe('what the key is for'),
  scopes: z
    .array(z.enum(apiKeyScopes))
    .describe('what the key may call: read (every GET), generate (creates, cancels), uploads, admin (keys, balance alerts, redeliveries)'),
  allowed_models: z.array(z.string()).nullable().describe('the models its creates may use; null: any'),
  allowed_kinds: z.array(z.enum(jobKinds)).nullable().describe('the job kinds its creates may make; null: any'),
  allowed_ips: z.array(z.string()).nullable().describe('the networks (CIDR) it may be used from; null: anywhere'),
  expires_at: z.string().nullable().describe('when it stops working (ISO 8601); null: never'),
  created_by: z.string().describe('the member whose key it is: a key minted by a key belongs to the same member'),
  created_at: z.string(),
  last_used_at: z.string().nullable().describe('when it was last used (recorded every few seconds)'),
  revoked_at: z.string().nullable().describe('when it was revoked; null: live'),
});

const createdKeySchema = keySchema.extend({
  key: z.string().describe('the full key (mg_live_<id>_<secret>): shown in this answer only, never again'),
  budgets: budgetListSchema.describe('the budget set with the key ([] when none)'),
});

const MAX_RULE_ITEMS = { models: 100, kinds: 10, ips: 50 } as const;

const createBody = z.strictObject({
  name: z.string().trim().min(1).max(100).describe('what the key is for (1 to 100 characters)'),
  scopes: z
    .array(z.enum(apiKeyScopes))
    .min(1)
    .describe('what the key may call; each must be held by the key making the request (else 403 key_scope_denied naming it)'),
  allowed_models: z
    .array(z.string().min(1))
    .min(1)
    .max(MAX_RULE_ITEMS.models)
    .optional()
    .describe("the models its creates may use; left out: any, or the requesting key's list"),
  allowed_kinds: z
    .array(z.enum(jobKinds))
    .min(1)
    .max(MAX_RULE_ITEMS.kinds)
    .optional()
    .describe("the job kinds its creates may make; left out: any, or the requesting key's list"),
  allowed_ips: z
    .array(z.string().min(1).max(64))
    .min(1)
    .max(MAX_RULE_ITEMS.ips)
    .optional()
    .describe("CIDRs (or single addresses) the key may be used from; left out: anywhere, or the requesting key's networks"),
  expires_at: z.iso
    .datetime({ offset: true })
    .optional()
    .describe("when the key stops working (ISO 8601, in the future); left out: never, or the requesting key's expiry"),
  budget: z
    .strictObject({
      limit: z.number().int().min(1).max(1_000_000_000).describe('credits the key may spend per period'),
      period: z.enum(['day', 'month']).describe('a UTC day or calendar month'),
      alert_at: z.array(z.number().int().min(1).max(100)).max(10).optional().describe('thresholds in percent of the limit (default [80, 100])'),
    })
    .optional()
    .describe('a spend limit of the new key (as GET /v1/budgets shows it): its creates past it answer 402 budget_exceeded'),
});
type CreateBody = z.infer<typeof createBody>;

function presentKey(k: KeyRow): z.infer<typeof keySchema> {
  return {
    id: k.id,
    name: k.name,
    scopes: k.scopes ?? [...apiKeyScopes],
    allowed_models: k.allowed_models,
    allowed_kinds: k.allowed_kinds as z.infer<typeof keySchema>['allowed_kinds'],
    allowed_ips: k.allowed_ips,
    expires_at: k.expires_at?.toISOString() ?? null,
    created_by: k.created_by,
    created_at: new Date(k.created_at).toISOString(),
    last_used_at: k.last_used_at ? new Date(k.last_used_at).toISOString() : null,
    revoked_at: k.revoked_at ? new Date(k.revoked_at).toISOString() : null,
  };
}

/** 403 owner_key_required unless the key's creator is an owner of the workspace now. */
function requireOwnerKey(res: Response) {
  const auth = authOf(res);
  if (!auth.owner) {
    throw new ApiError(403, 'owner_key_required', 'API keys are managed only with an owner key: a key created by a member who is an owner of the workspace');
  }
  return auth;
}

const denied = (rule: string, message: string) => keyScopeDenied({ rule, message });

/** A list rule of the new key: within the acting key's (or inherited from it when left out). */
function narrowed(rule: 'allowed_models' | 'allowed_kinds', asked: string[] | undefined, held: readonly string[] | null): string[] | null {
  if (asked === undefined) return held === null ? null : [...held];
  const extra = held === null ? [] : asked.filter((v) => !held.includes(v));
  if (extra.length) throw denied(rule, `${rule}: ${extra.join(', ')} is not allowed to the requesting key (it has ${held!.join(', ')})`);
  return [...new Set(asked)];
}

function networksOf(asked: string[] | undefined, held: KeyRules['allowedIps']): string[] | null {
  if (asked === undefined) return held === null ? null : held.map((n) => n.text);
  const nets = asked.map((text) => {
    const net = parseCidr(text);
    if (!net) throw invalidRequest(`allowed_ips: ${text} is not a CIDR (a.b.c.d/n, x::y/n) or an address`);
    return net;
  });
  const outside = held === null ? [] : nets.filter((n) => !held.some((h) => cidrContains(h, n)));
  if (outside.length)
    throw denied(
      'allowed_ips',
      `allowed_ips: ${outside.map((n) => n.text).join(', ')} is outside the requesting key's networks (${held!.map((n) => n.text).join(', ')})`,
    );
  return [...new Set(nets.map((n) => n.text))];
}

/** The new key's rules: at most the acting key's (403 key_scope_denied naming what exceeds it). */
export function rulesWithin(body: CreateBody, held: KeyRules, now: number): MintedKeyRules {
  const scopes = [...new Set(body.scopes)] as ApiKeyScope[];
  const missing = held.scopes === null ? [] : scopes.filter((s) => !held.scopes!.includes(s));
  if (missing.length)
    throw denied(
      missing[0]!,
      `scopes: the requesting key lacks ${missing.join(', ')} (it has ${held.scopes!.join(', ')}); a key cannot mint a key with more than it has`,
    );
  const unknown = (body.allowed_models ?? []).filter((m) => !routeFor(m));
  if (unknown.length) throw invalidRequest(`allowed_models: unknown model ${unknown.join(', ')} (GET /v1/models lists them)`);
  let expiresAt = body.expires_at === undefined ? null : new Date(body.expires_at);
  if (expiresAt && expiresAt.getTime() <= now) throw invalidRequest('expires_at: must be in the future');
  if (held.expiresAt !== null) {
    if (expiresAt && expiresAt.getTime() > held.expiresAt)
      throw denied('expires_at', `expires_at: the requesting key expires at ${new Date(held.expiresAt).toISOString()}; a key it makes cannot outlive it`);
    expiresAt ??= new Date(held.expiresAt);
  }
  return {
    scopes,
    allowedModels: narrowed('allowed_models', body.allowed_models, held.allowedModels),
    allowedKinds: narrowed('allowed_kinds', body.allowed_kinds, held.allowedKinds),
    allowedIps: networksOf(body.allowed_ips, held.allowedIps),
    expiresAt,
  };
}

const refusedByDatabase = () => denied('admin', "the requesting key may no longer manage API keys (revoked, expired, narrowed or no longer an owner's)");

export const apiKeyEndpoints = new Endpoints<AppDeps>()
  .add({
    method: 'post',
    path: '/v1/api-keys',
    summary: 'Create an API key (extension; owner keys with the admin scope)',
    description:
      'Mints a key of the workspace, answered once with its secret (`key`). The new key has no more than the requesting key: scopes it lacks, and models, kinds, networks or an expiry past its own, answer 403 key_scope_denied naming the scope or rule; a rule left out is inherited from it. Only a key whose creator is an owner answers (else 403 owner_key_required). Audited (api_key.created, and budget.set with a budget).',
    tags: [TAG],
    scope: 'admin',
    rateClass: 'generate',
    body: createBody,
    response: createdKeySchema,
    creates: '/v1/api-keys/:id',
    errors: [400, 401, 403, 429, 500],
    async handler({ res, body, services: deps }) {
      const auth = requireOwnerKey(res);
      const rules = rulesWithin(body, auth.rules, Date.now());
      const budget = body.budget ? { limit: body.budget.limit, period: body.budget.period, alertAt: body.budget.alert_at ?? null } : null;
      const actor = { id: auth.apiKeyId, secret: presentedSecret(res), workspaceId: auth.workspaceId };
      const minted = await mintKey(deps.db, actor, { name: body.name, rules, budget }).catch((err: unknown) => {
        throw err instanceof KeyManagementRefused ? refusedByDatabase() : err;
      });
      const now = new Date();
      const budgets = await budgetsFor(deps.db, auth.workspaceId, minted.row.id, '');
      const standings = await Promise.all(budgets.map((b) => standingOf(deps.db, b, now)));
      res.status(200).json({ data: { ...presentKey(minted.row), key: minted.key, budgets: standings.map(presentBudget) } });
    },
  })
  .add({
    method: 'get',
    path: '/v1/api-keys',
    summary: "List the workspace's API keys (extension; owner keys with the admin scope)",
    description: 'Every key of the workspace, oldest first, revoked ones included, with its rules; never a secret.',
    tags: [TAG],
    scope: 'admin',
    rateClass: 'poll',
    response: z.array(keySchema),
    errors: [401, 403, 429, 500],
    async handler({ res, services: deps }) {
      const { workspaceId } = requireOwnerKey(res);
      res.json({ data: (await listKeys(deps.db, workspaceId)).map(presentKey) });
    },
  })
  .add({
    method: 'delete',
    path: '/v1/api-keys/:id',
    summary: 'Revoke an API key (extension; owner keys with the admin scope)',
    description:
      'Revokes the key at once on every gateway (its next request answers 401, its open event streams close). Revoking a revoked key answers it unchanged. Audited (api_key.revoked).',
    tags: [TAG],
    scope: 'admin',
    rateClass: 'generate',
    response: keySchema,
    errors: [401, 403, 404, 429, 500],
    async handler({ req, res, services: deps }) {
      const auth = requireOwnerKey(res);
      const id = String(req.params.id);
      const actor = { id: auth.apiKeyId, secret: presentedSecret(res), workspaceId: auth.workspaceId };
      const done = await revokeKey(deps.db, actor, id).catch((err: unknown) => {
        throw err instanceof KeyManagementRefused ? refusedByDatabase() : err;
      });
      const row = done?.row ?? (await getKey(deps.db, auth.workspaceId, id));
      if (!row) throw new ApiError(404, 'not_found', `API key ${id} not found`);
      res.json({ data: presentKey(row) });
    },
  });

export const createApiKeysRouter = (deps: AppDeps, auth: Auth) => apiKeyEndpoints.router(deps, auth);
