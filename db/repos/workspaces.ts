// Workspaces, members, API keys, projects and credit grants: the admin side of the data model.
// Plain functions over Kysely | Transaction, so callers compose them inside one transaction.
import { sql } from 'kysely';
import type { Database, Queryable } from '../index.js';
import type { MemberRole } from '../schema.js';
import { newId } from '../../shared/ids.js';
import { generateApiKey } from '../api-keys.js';
import { recordAuditEvent } from './audit.js';
import { OPERATOR_ACTOR, operatorFor, type AuditActor } from '../../shared/audit.js';

export class AdminError extends Error {
  override name = 'AdminError';
  constructor(
    readonly code: 'not_found' | 'forbidden' | 'conflict' | 'invalid' | 'insufficient_credits',
    message: string,
  ) {
    super(message);
  }
}

export async function createWorkspace(db: Database, input: { name: string; ownerEmail: string; credits?: number }) {
  return db.transaction().execute(async (tx) => {
    const id = newId('ws');
    await tx.insertInto('workspaces').values({ id, name: input.name, credits: 0 }).execute();
    await tx
      .insertInto('workspace_members')
      .values({ workspace_id: id, email: normalizeEmail(input.ownerEmail), role: 'owner' })
      .execute();
    if (input.credits) await adjustCredits(tx, id, input.credits, 'initial grant');
    return { id, name: input.name };
  });
}

export function normalizeEmail(email: string): string {
  const e = email.trim().toLowerCase();
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(e)) throw new AdminError('invalid', `not an email address: ${email}`);
  return e;
}

export async function getWorkspace(db: Queryable, id: string) {
  const ws = await db.selectFrom('workspaces').selectAll().where('id', '=', id).executeTakeFirst();
  if (!ws) throw new AdminError('not_found', `workspace ${id} not found`);
  return ws;
}

/**
 * Adds a member or changes their role (a promotion to owner included), with an audit event by the
 * operator in the same transaction: `member.added`, or `member.role_changed` naming the previous
 * role; nothing is recorded when the role is already that one. Pass a transaction or the database.
 */
export async function addMember(db: Queryable, workspaceId: string, email: string, role: MemberRole, actor: AuditActor = OPERATOR_ACTOR) {
  const e = normalizeEmail(email);
  const act = async (tx: Queryable) => {
    await getWorkspace(tx, workspaceId);
    const before = await tx
      .selectFrom('workspace_members')
      .select('role')
      .where('workspace_id', '=', workspaceId)
      .where('email', '=', e)
      .forUpdate()
      .executeTakeFirst();
    if (before?.role === role) return { workspace_id: workspaceId, email: e, role };
    await tx
      .insertInto('workspace_members')
      .values({ workspace_id: workspaceId, email: e, role })
      .onConflict((oc) => oc.columns(['workspace_id', 'email']).doUpdateSet({ role }))
      .execute();
    await recordAuditEvent(tx, {
      workspaceId,
      action: before ? 'member.role_changed' : 'member.added',
      actor,
      targetType: 'member',
      targetId: e,
      details: before ? { role, previous_role: before.role } : { role },
    });
    return { workspace_id: workspaceId, email: e, role };
  };
  return db.isTransaction ? act(db) : (db as Database).transaction().execute(act);
}

/**
 * Removes a member, with a `member.removed` audit event by the operator. The last owner cannot be
 * removed (the workspace would have nobody to manage its keys). Their API keys stay valid but are
 * no longer owner keys (api/auth.ts derives that from membership).
 */
export async function removeMember(db: Database, workspaceId: string, email: string, actor: AuditActor = OPERATOR_ACTOR) {
  const e = normalizeEmail(email);
  return db.transaction().execute(async (tx) => {
    await getWorkspace(tx, workspaceId);
    const members = await tx.selectFrom('workspace_members').select(['email', 'role']).where('workspace_id', '=', workspaceId).forUpdate().execute();
    const member = members.find((m) => m.email === e);
    if (!member) throw new AdminError('not_found', `${e} is not a member of workspace ${workspaceId}`);
    if (member.role === 'owner' && members.filter((m) => m.role === 'owner').length === 1) {
      throw new AdminError('conflict', `${e} is the last owner of workspace ${workspaceId}; make another member an owner first`);
    }
    await tx.deleteFrom('workspace_members').where('workspace_id', '=', workspaceId).where('email', '=', e).execute();
    await recordAuditEvent(tx, { workspaceId, action: 'member.removed', actor, targetType: 'member', targetId: e, details: { role: member.role } });
    return { workspace_id: workspaceId, email: e, removed: true };
  });
}

export async function requireOwner(db: Queryable, workspaceId: string, email: string) {
  const e = normalizeEmail(email);
  const m = await db.selectFrom('workspace_members').select('role').where('workspace_id', '=', workspaceId).where('email', '=', e).executeTakeFirst();
  if (!m) throw new AdminError('forbidden', `${e} is not a member of workspace ${workspaceId}`);
  if (m.role !== 'owner') throw new AdminError('forbidden', `only workspace owners may manage API keys; ${e} is a ${m.role}`);
}

/** Creates a key on behalf of an owner; the returned `key` is the only time the secret exists in clear. */
export async function createApiKey(db: Database, input: { workspaceId: string; name: string; actorEmail: string }) {
  return db.transaction().execute(async (tx) => {
    await getWorkspace(tx, input.workspaceId);
    await requireOwner(tx, input.workspaceId, input.actorEmail);
    const k = generateApiKey();
    const actor = normalizeEmail(input.actorEmail);
    await tx
      .insertInto('api_keys')
      .values({ id: k.id, workspace_id: input.workspaceId, name: input.name, secret_hash: k.secretHash, created_by: actor })
      .execute();
    await recordAuditEvent(tx, {
      workspaceId: input.workspaceId,
      action: 'api_key.created',
      actor: operatorFor(actor),
      targetType: 'api_key',
      targetId: k.id,
      details: { name: input.name },
    });
    // Gateways answer unknown key ids from memory; tell every replica the id exists (on commit).
    await sql`select pg_notify('api_key_created', ${k.id})`.execute(tx);
    return { id: k.id, key: k.key, name: input.name };
  });
}

export async function revokeApiKey(db: Database, input: { workspaceId: string; keyId: string; actorEmail: string }) {
  return db.transaction().execute(async (tx) => {
    await requireOwner(tx, input.workspaceId, input.actorEmail);
    const res = await tx
      .updateTable('api_keys')
      .set({ revoked_at: sql`now()` })
      .where('id', '=', input.keyId)
      .where('workspace_id', '=', input.workspaceId)
      .where('revoked_at', 'is', null)
      .returning(['id', 'name'])
      .executeTakeFirst();
    if (!res) {
      const exists = await tx
        .selectFrom('api_keys')
        .select('id')
        .where('id', '=', input.keyId)
        .where('workspace_id', '=', input.workspaceId)
        .executeTakeFirst();
      if (!exists) throw new AdminError('not_found', `API key ${input.keyId} not found in workspace ${input.workspaceId}`);
      throw new AdminError('conflict', `API key ${input.keyId} is already revoked`);
    }
    await recordAuditEvent(tx, {
      workspaceId: input.workspaceId,
      action: 'api_key.revoked',
      actor: operatorFor(normalizeEmail(input.actorEmail)),
      targetType: 'api_key',
      targetId: res.id,
      details: { name: res.name },
    });
    // Gateways cache key lookups; tell every replica at once.
    await sql`select pg_notify('api_key_revoked', ${input.keyId})`.execute(tx);
    return { id: input.keyId };
  });
}

export async function listApiKeys(db: Queryable, workspaceId: string) {
  return db
    .selectFrom('api_keys')
    .select(['id', 'name', 'created_by', 'created_at', 'last_used_at', 'revoked_at'])
    .where('workspace_id', '=', workspaceId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/**
 * Grant (positive) or deduct (negative) credits with a ledger entry and an audit event by `actor`
 * (both in `db`: pass the act's transaction); a deduction never goes below zero.
 */
export async function adjustCredits(db: Queryable, workspaceId: string, delta: number, note: string, actor: AuditActor = OPERATOR_ACTOR) {
  if (!Number.isSafeInteger(delta) || delta === 0) throw new AdminError('invalid', 'credit amount must be a non-zero integer');
  const row = await db
    .updateTable('workspaces')
    .set({ credits: sql`credits + ${delta}`, updated_at: sql`now()` })
    .where('id', '=', workspaceId)
    .where(sql<boolean>`credits + ${delta} >= 0`)
    .returning(['credits'])
    .executeTakeFirst();
  if (!row) {
    const ws = await getWorkspace(db, workspaceId);
    throw new AdminError('insufficient_credits', `cannot deduct ${-delta} credits: workspace ${workspaceId} has ${ws.credits}`);
  }
  await db
    .insertInto('credit_ledger')
    .values({ workspace_id: workspaceId, job_id: null, job_seq: null, delta, reason: delta > 0 ? 'grant' : 'deduct', note })
    .execute();
  await recordAuditEvent(db, {
    workspaceId,
    action: delta > 0 ? 'credits.granted' : 'credits.deducted',
    actor,
    targetType: 'workspace',
    targetId: workspaceId,
    details: { amount: Math.abs(delta), balance: row.credits, reason: note },
  });
  return { credits: row.credits };
}

export async function createProject(db: Queryable, workspaceId: string, name: string) {
  await getWorkspace(db, workspaceId);
  const id = newId('prj');
  const row = await db.insertInto('projects').values({ id, workspace_id: workspaceId, name }).returningAll().executeTakeFirstOrThrow();
  return row;
}

export async function listProjects(db: Queryable, workspaceId: string) {
  return db.selectFrom('projects').selectAll().where('workspace_id', '=', workspaceId).orderBy('created_at').orderBy('id').execute();
}
