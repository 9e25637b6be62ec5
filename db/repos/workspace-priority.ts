// Who may ask for `priority: high`: a workspace setting (0021_fair_share `high_priority_allowed`),
// set by an operator with the admin CLI and read by the gateway at every high create; and the
// writer of the workspace's operator settings (that one, `reuse_requests`), each audited.
import type { Queryable } from '../index.js';
import { AdminError } from './workspaces.js';
import { recordAuditEvent } from './audit.js';
import { OPERATOR_ACTOR, type AuditActor } from '../../shared/audit.js';

/** Whether the workspace's jobs may ask for `priority: high` (false for an unknown workspace). */
export async function highPriorityAllowed(db: Queryable, workspaceId: string): Promise<boolean> {
  const row = await db.selectFrom('workspaces').select('high_priority_allowed').where('id', '=', workspaceId).executeTakeFirst();
  return row?.high_priority_allowed ?? false;
}

/** The operator's on/off settings of a workspace, each with the audit action its change records. */
const settingActions = {
  high_priority_allowed: 'workspace.priority_changed',
  reuse_requests: 'workspace.reuse_changed',
} as const;
type WorkspaceSetting = keyof typeof settingActions;

/**
 * Sets one of the workspace's on/off settings and records the change (and what it was) in the audit
 * log. Pass a transaction: the change and its event commit together.
 */
export async function setWorkspaceSetting<S extends WorkspaceSetting>(
  db: Queryable,
  workspaceId: string,
  setting: S,
  on: boolean,
  actor: AuditActor = OPERATOR_ACTOR,
): Promise<{ workspace_id: string } & Record<S, boolean>> {
  const before = await db.selectFrom('workspaces').select(setting).where('id', '=', workspaceId).forUpdate().executeTakeFirst();
  if (!before) throw new AdminError('not_found', `workspace ${workspaceId} not found`);
  await db
    .updateTable('workspaces')
    .set({ [setting]: on, updated_at: new Date() })
    .where('id', '=', workspaceId)
    .execute();
  await recordAuditEvent(db, {
    workspaceId,
    action: settingActions[setting],
    actor,
    targetType: 'workspace',
    targetId: workspaceId,
    details: { [setting]: on, previous: (before as Record<string, boolean>)[setting] },
  });
  return { workspace_id: workspaceId, [setting]: on } as { workspace_id: string } & Record<S, boolean>;
}

/**
 * Allows (or stops allowing) the workspace's high-priority jobs, and records it in the audit log;
 * jobs already created keep theirs. Pass a transaction: the change and its event commit together.
 */
export function setHighPriorityAllowed(db: Queryable, workspaceId: string, allowed: boolean, actor: AuditActor = OPERATOR_ACTOR) {
  return setWorkspaceSetting(db, workspaceId, 'high_priority_allowed', allowed, actor);
}
