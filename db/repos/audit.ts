// The audit log's writes, reads and retention. Call recordAuditEvent with the transaction of the act
// it records, so the act and its event commit together or not at all.
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { Queryable } from '../index.js';
import { createdMicros, newestFirstPage, olderThan, type NewestFirstKey } from './newest-first.js';
import type { AuditEvent } from '../schema.js';
import type { AuditAction, AuditActor } from '../../shared/audit.js';
import { newId } from '../../shared/ids.js';

interface NewAuditEvent {
  workspaceId: string;
  action: AuditAction;
  actor: AuditActor;
  targetType?: string | null;
  targetId?: string | null;
  /** What changed, without secrets: amounts, limits, names, the old and new values. */
  details?: Record<string, unknown>;
}

export async function recordAuditEvent(q: Queryable, e: NewAuditEvent): Promise<string> {
  const id = newId('aud');
  await insertEvent(q, id, e);
  return id;
}

/**
 * Records an act that several processes may detect (two reconciler replicas, a retried pass) under
 * a deterministic id (auditEventId): the first insert wins and the others change nothing. Returns
 * whether this call recorded it.
 */
export async function recordAuditEventOnce(q: Queryable, id: string, e: NewAuditEvent): Promise<boolean> {
  return insertEvent(q, id, e);
}

async function insertEvent(q: Queryable, id: string, e: NewAuditEvent): Promise<boolean> {
  // ON CONFLICT DO NOTHING needs only INSERT (and SELECT on the arbiter column), which the app role
  // holds on this append-only table; only DO UPDATE needs UPDATE privilege (PostgreSQL docs, INSERT:
  // https://www.postgresql.org/docs/current/sql-insert.html).
  const r = await q
    .insertInto('audit_events')
    .values({
      id,
      workspace_id: e.workspaceId,
      action: e.action,
      actor: e.actor,
      target_type: e.targetType ?? null,
      target_id: e.targetId ?? null,
      details: JSON.stringify(e.details ?? {}),
    })
    .onConflict((oc) => oc.column('id').doNothing())
    .executeTakeFirst();
  return Number(r.numInsertedOrUpdatedRows ?? 0n) > 0;
}

/** The id of the one event an act detected on `parts` (e.g. a job and a run) may have. */
export function auditEventId(action: AuditAction, ...parts: string[]): string {
  return `aud_${createHash('sha256')
    .update([action, ...parts].join('\n'))
    .digest('hex')
    .slice(0, 32)}`;
}

export type AuditEventKey = NewestFirstKey;

interface AuditEventFilters {
  action?: AuditAction;
  targetId?: string;
  /** Inclusive. */
  from?: Date;
  /** Exclusive. */
  to?: Date;
}

/** A workspace's events, newest first, keyset-paged on (created_at, id) by audit_events_workspace_idx. */
export async function listAuditEvents(
  db: Queryable,
  workspaceId: string,
  opts: { limit: number; after?: AuditEventKey | null; filters?: AuditEventFilters },
): Promise<{ rows: AuditEvent[]; next: AuditEventKey | null }> {
  const f = opts.filters ?? {};
  let q = db.selectFrom('audit_events').selectAll().select(createdMicros()).where('workspace_id', '=', workspaceId);
  if (f.action !== undefined) q = q.where('action', '=', f.action);
  if (f.targetId !== undefined) q = q.where('target_id', '=', f.targetId);
  if (f.from !== undefined) q = q.where('created_at', '>=', f.from);
  if (f.to !== undefined) q = q.where('created_at', '<', f.to);
  if (opts.after) q = q.where(olderThan(opts.after));
  const rows = await q
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(opts.limit + 1)
    .execute();
  const page = newestFirstPage(rows, opts.limit);
  return { rows: page.rows as AuditEvent[], next: page.next };
}

/**
 * Removes events older than `keepDays` (a bounded batch, oldest first) through expire_audit_events
 * (0030_audit_retention): the app role may not delete from the log, and that function never removes
 * an event younger than 30 days, whatever it is asked. Returns how many it removed.
 */
export async function sweepAuditEvents(db: Queryable, keepDays: number, limit = 5_000): Promise<number> {
  const r = await sql<{ removed: number }>`select expire_audit_events(${keepDays}::integer, ${limit}::integer) as removed`.execute(db);
  return Number(r.rows[0]?.removed ?? 0);
}
