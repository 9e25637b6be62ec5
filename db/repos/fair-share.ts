// A workspace's fair-share weight (workspaces.fair_share_weight). Jobs copy it when they are
// created (db/repos/jobs.ts insertJobWithCharge), so a change applies to the jobs created after it;
// a job created while its workspace has fewer than BURST_JOBS in flight gets it times BURST_JOBS.
import { sql, type RawBuilder } from 'kysely';
import type { Queryable } from '../index.js';
import type { JobPriority } from '../../shared/job-model.js';
import { BURST_JOBS, MAX_FAIRNESS_WEIGHT } from '../../shared/task-priority.js';
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

/**
 * The weight a new job of the workspace waits with (jobs.fairness_weight), as a subquery of the
 * statement that creates it: the workspace's weight, times BURST_JOBS while the workspace has fewer
 * than BURST_JOBS jobs in flight (pending or generating, counted before this one), capped at the
 * 1000 Temporal accepts. Temporal spaces a key's tasks 1000 / weight apart in its dispatch order, so
 * a burst of up to BURST_JOBS jobs together takes the room of one job at the workspace's share: a
 * small workspace's burst goes ahead of a saturating one's next task instead of alternating with
 * its backlog (shared/task-priority.ts). Cost on the create: one range scan of at most BURST_JOBS
 * entries of jobs_status_all_list_idx, inside the create's one statement (no round trip).
 */
export function newJobWeight(workspaceId: string): RawBuilder<number> {
  return sql<number>`(select least(${MAX_FAIRNESS_WEIGHT}::float8, fair_share_weight * case when (
      select count(*) from (select 1 from jobs where workspace_id = ${workspaceId} and status in ('pending', 'generating') limit ${BURST_JOBS}::int) as in_flight
    ) < ${BURST_JOBS}::int then ${BURST_JOBS}::float8 else 1 end) from workspaces where id = ${workspaceId})`;
}
