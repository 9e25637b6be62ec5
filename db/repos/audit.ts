// The audit log's writes. Call recordAuditEvent with the transaction of the act it records, so the
// act and its event commit together or not at all.
import type { Queryable } from '../index.js';
import type { AuditAction, AuditActor } from '../../shared/audit.js';
import { newId } from '../../shared/ids.js';

export interface NewAuditEvent {
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
  await q
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
    .execute();
  return id;
}
