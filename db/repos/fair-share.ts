// A workspace's fair-share weight (workspaces.fair_share_weight). Jobs copy it when they are
// created (db/repos/jobs.ts insertJobWithCharge), so a change applies to the jobs created after it.
import type { Queryable } from '../index.js';
import type { JobPriority } from '../../shared/job-model.js';
import { AdminError } from './workspaces.js';
import { recordAuditEvent } from './audit.js';
import { OPERATOR_ACTOR, type AuditActor } from '../../shared/audit.js';

/**
 * Sets the workspace's weight (0.001–1000, checked by the column too) and records it in the audit
 * log; returns the previous one. Pass a transaction: the change and its event commit together.
 */
export async function setFairShareWeight(
  db: Queryable,
  workspaceId: string,
  weight: number,
  actor: AuditActor = OPERATOR_ACTOR,
): Promise<{ previous: number; weight: number }> {
  const before = await db.selectFrom('workspaces').select('fair_share_weight').where('id', '=', workspaceId).forUpdate().executeTakeFirst();
  if (!before) throw new AdminError('not_found', `workspace ${workspaceId} not found`);
  await db.updateTable('workspaces').set({ fair_share_weight: weight, updated_at: new Date() }).where('id', '=', workspaceId).execute();
  await recordAuditEvent(db, {
    workspaceId,
    action: 'workspace.share_changed',
    actor,
    targetType: 'workspace',
    targetId: workspaceId,
    details: { previous_weight: before.fair_share_weight, weight },
  });
  return { previous: before.fair_share_weight, weight };
}

/** The workspace's fair-share weight now (1, the default share, for a workspace not found). */
export async function workspaceShareWeight(db: Queryable, workspaceId: string): Promise<number> {
  const row = await db.selectFrom('workspaces').select('fair_share_weight').where('id', '=', workspaceId).executeTakeFirst();
  return row?.fair_share_weight ?? 1;
}

/** Each job's workspace, priority and fair-share weight: what a workflow started for it waits with. */
export async function jobShares(db: Queryable, jobIds: string[]): Promise<Map<string, { workspaceId: string; priority: JobPriority; fairnessWeight: number }>> {
  if (jobIds.length === 0) return new Map();
  const rows = await db.selectFrom('jobs').select(['id', 'workspace_id', 'priority', 'fairness_weight']).where('id', 'in', jobIds).execute();
  return new Map(rows.map((r) => [r.id, { workspaceId: r.workspace_id, priority: r.priority, fairnessWeight: r.fairness_weight }]));
}
