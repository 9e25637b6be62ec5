// A workspace's fair-share weight (workspaces.fair_share_weight). Jobs copy it when they are
// created (db/repos/jobs.ts insertJobWithCharge), so a change applies to the jobs created after it.
import type { Queryable } from '../index.js';
import type { JobPriority } from '../../shared/job-model.js';
import { AdminError } from './workspaces.js';

/** Sets the workspace's weight (0.001–1000, checked by the column too); returns the previous one. */
export async function setFairShareWeight(db: Queryable, workspaceId: string, weight: number): Promise<{ previous: number; weight: number }> {
  const before = await db.selectFrom('workspaces').select('fair_share_weight').where('id', '=', workspaceId).executeTakeFirst();
  if (!before) throw new AdminError('not_found', `workspace ${workspaceId} not found`);
  await db.updateTable('workspaces').set({ fair_share_weight: weight, updated_at: new Date() }).where('id', '=', workspaceId).execute();
  return { previous: before.fair_share_weight, weight };
}

/** Each job's workspace, priority and fair-share weight: what a workflow started for it waits with. */
export async function jobShares(db: Queryable, jobIds: string[]): Promise<Map<string, { workspaceId: string; priority: JobPriority; fairnessWeight: number }>> {
  if (jobIds.length === 0) return new Map();
  const rows = await db.selectFrom('jobs').select(['id', 'workspace_id', 'priority', 'fairness_weight']).where('id', 'in', jobIds).execute();
  return new Map(rows.map((r) => [r.id, { workspaceId: r.workspace_id, priority: r.priority, fairnessWeight: r.fairness_weight }]));
}
