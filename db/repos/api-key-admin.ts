// Self-serve API keys (POST/GET/DELETE /v1/api-keys): an owner's admin key mints and revokes keys
// of its workspace. The app role may not write `api_keys` or `budgets` (db/roles.ts): minting and
// revoking go through the SECURITY DEFINER functions of 0105_scoped_keys, which check the acting
// key (by its secret) and that the new key has no more than it has. Each act writes its audit
// events in the same transaction; the functions notify the gateways' key listeners on commit.
import { sql } from 'kysely';
import type { Database, Queryable } from '../index.js';
import type { BudgetPeriod } from '../../shared/budgets.js';
import { recordAuditEvent } from './audit.js';
import { newId } from '../../shared/ids.js';
import { generateApiKey } from '../api-keys.js';
import { keyActor } from '../../shared/audit.js';
import type { ApiKeyScope } from '../../shared/api-key-rules.js';

/** The rules of a key to mint, each already checked against the acting key's (null: no such rule). */
export interface MintedKeyRules {
  scopes: ApiKeyScope[];
  allowedModels: string[] | null;
  allowedKinds: string[] | null;
  /** Canonical CIDRs. */
  allowedIps: string[] | null;
  expiresAt: Date | null;
}

interface InlineBudget {
  limit: number;
  period: BudgetPeriod;
  alertAt: number[] | null;
}

/** The acting key: its id, the secret it was presented with, and its workspace. */
interface ActingKey {
  id: string;
  secret: string;
  workspaceId: string;
}

/** The database refused the act (the acting key was revoked, demoted or narrowed meanwhile). */
export class KeyManagementRefused extends Error {
  override name = 'KeyManagementRefused';
}

const refusedByDatabase = (err: unknown) => (err as { code?: string }).code === '42501';

const keyColumns = [
  'k.id',
  'k.name',
  'k.created_by',
  'k.created_at',
  'k.last_used_at',
  'k.revoked_at',
  'k.scopes',
  'k.allowed_models',
  'k.allowed_kinds',
  'k.expires_at',
] as const;

/** A key's row as the API presents it (no hash). */
export type KeyRow = Awaited<ReturnType<typeof listKeys>>[number];

/** The workspace's keys, oldest first (revoked ones included). */
export async function listKeys(q: Queryable, workspaceId: string) {
  return q
    .selectFrom('api_keys as k')
    .select(keyColumns)
    .select(sql<string[] | null>`k.allowed_ips::text[]`.as('allowed_ips'))
    .where('k.workspace_id', '=', workspaceId)
    .orderBy('k.created_at')
    .orderBy('k.id')
    .execute();
}

export async function getKey(q: Queryable, workspaceId: string, id: string): Promise<KeyRow | undefined> {
  return q
    .selectFrom('api_keys as k')
    .select(keyColumns)
    .select(sql<string[] | null>`k.allowed_ips::text[]`.as('allowed_ips'))
    .where('k.workspace_id', '=', workspaceId)
    .where('k.id', '=', id)
    .executeTakeFirst();
}

/** Mints a key (and its budget) for the acting key; the returned `key` is the only time its secret exists in clear. */
export async function mintKey(db: Database, actor: ActingKey, input: { name: string; rules: MintedKeyRules; budget: InlineBudget | null }) {
  const k = generateApiKey();
  const budgetId = input.budget ? newId('bud') : null;
  const r = input.rules;
  try {
    return await db.transaction().execute(async (tx) => {
      await sql`select * from mint_api_key(${actor.id}, ${actor.secret}, ${k.id}, ${k.secretHash}, ${input.name}, ${r.scopes}::text[],
        ${r.allowedModels}::text[], ${r.allowedKinds}::text[], ${r.allowedIps}::cidr[], ${r.expiresAt},
        ${budgetId}, ${input.budget?.limit ?? null}::integer, ${input.budget?.period ?? null}, ${input.budget?.alertAt ?? null}::integer[])`.execute(tx);
      const details = {
        name: input.name,
        scopes: r.scopes,
        allowed_models: r.allowedModels,
        allowed_kinds: r.allowedKinds,
        allowed_ips: r.allowedIps,
        expires_at: r.expiresAt?.toISOString() ?? null,
      };
      await recordAuditEvent(tx, {
        workspaceId: actor.workspaceId,
        action: 'api_key.created',
        actor: keyActor(actor.id),
        targetType: 'api_key',
        targetId: k.id,
        details,
      });
      if (input.budget) {
        const b = input.budget;
        await recordAuditEvent(tx, {
          workspaceId: actor.workspaceId,
          action: 'budget.set',
          actor: keyActor(actor.id),
          targetType: 'budget',
          targetId: budgetId!,
          details: {
            scope: 'key',
            scope_id: k.id,
            period: b.period,
            old: null,
            new: { limit: b.limit, period: b.period, alert_at: b.alertAt ?? [80, 100], alert_url: null },
          },
        });
      }
      const row = (await getKey(tx, actor.workspaceId, k.id))!;
      return { row, key: k.key, budgetId };
    });
  } catch (err) {
    if (refusedByDatabase(err)) throw new KeyManagementRefused('the database refused to mint the key');
    throw err;
  }
}

/** Revokes a key of the acting key's workspace. undefined: no such key; `revoked` false: it was already revoked. */
export async function revokeKey(db: Database, actor: ActingKey, id: string) {
  try {
    return await db.transaction().execute(async (tx) => {
      const r = await sql<{ id: string; name: string; revoked: boolean }>`select * from revoke_api_key_with_key(${actor.id}, ${actor.secret}, ${id})`.execute(
        tx,
      );
      const hit = r.rows[0];
      if (!hit) return undefined;
      if (hit.revoked) {
        await recordAuditEvent(tx, {
          workspaceId: actor.workspaceId,
          action: 'api_key.revoked',
          actor: keyActor(actor.id),
          targetType: 'api_key',
          targetId: id,
          details: { name: hit.name },
        });
      }
      return { row: (await getKey(tx, actor.workspaceId, id))!, revoked: hit.revoked };
    });
  } catch (err) {
    if (refusedByDatabase(err)) throw new KeyManagementRefused('the database refused to revoke the key');
    throw err;
  }
}
