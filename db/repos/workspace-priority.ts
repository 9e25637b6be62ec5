// Who may ask for `priority: high`: a workspace setting (0021_fair_share `high_priority_allowed`),
// set by an operator with the admin CLI and read by the gateway at every high create.
import type { Queryable } from '../index.js';
import { AdminError } from './workspaces.js';
import { recordAuditEvent } from './audit.js';
import { OPERATOR_ACTOR, type AuditActor } from '../../shared/audit.js';

/** Whether the workspace's jobs may ask for `priority: high` (false for an unknown workspace). */
export async function highPriorityAllowed(db: Queryable, workspaceId: string): Promise<boolean> {
  const row = await db.selectFrom('workspaces').select('high_priority_allowed').where('id', '=', workspaceId).executeTakeFirst();
  return row?.high_priority_allowed ?? false;
}

/**
 * Allows (or stops allowing) the workspace's high-priority jobs, and records it in the audit log;
 * jobs already created keep theirs. Pass a transaction: the change and its event commit together.
 */
export async function setHighPriorityAllowed(
  db: Queryable,
  workspaceId: string,
  allowed: boolean,
  actor: AuditActor = OPERATOR_ACTOR,
): Promise<{ workspace_id: string; high_priority_allowed: boolean }> {
  const before = await db.selectFrom('workspaces').select('high_priority_allowed').where('id', '=', workspaceId).forUpdate().executeTakeFirst();
  const row = await db
    .updateTable('workspaces')
    .set({ high_priority_allowed: allowed, updated_at: new Date() })
    .where('id', '=', workspaceId)
    .returning(['id', 'high_priority_allowed'])
    .executeTakeFirst();
  if (!row || !before) throw new AdminError('not_found', `workspace ${workspaceId} not found`);
  await recordAuditEvent(db, {
    workspaceId,
    action: 'workspace.priority_changed',
    actor,
    targetType: 'workspace',
    targetId: workspaceId,
    details: { high_priority_allowed: allowed, previous: before.high_priority_allowed },
  });
  return { workspace_id: row.id, high_priority_allowed: row.high_priority_allowed };
}
