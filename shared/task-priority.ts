// A job's place in the task queues it waits in (workflow, fetch, provider, io, webhooks): its
// Temporal Priority. Activities inherit the workflow's, so the start sets it once for every queue.
// - Priority key: `high` 1, `normal` 3 (Temporal's default), `low` 5. A lower key is dispatched first.
// - Fairness key: the workspace id, weighted by the workspace's share (its plan tier). Within a
//   priority level the server dispatches each workspace's tasks in proportion to its weight, so one
//   workspace's backlog never makes another's jobs wait behind all of it.
// Pure data, used where workflows are started (the gateway, the reconciler, the webhook dispatcher).
import type { Priority } from '@temporalio/common';
import type { JobPriority } from './job-model.js';

export const priorityKeys: Record<JobPriority, number> = { high: 1, normal: 3, low: 5 };

/**
 * A workspace's burst: a job created while its workspace has fewer than this many jobs in flight
 * waits with its workspace's weight times this many (db/repos/fair-share.ts newJobWeight). Temporal
 * orders a key's tasks by a pass that grows by 1000 / weight a task, starting a key that has none
 * waiting at the queue's front. At the workspace's weight, a small workspace's burst of jobs behind a
 * saturating one alternates with its backlog (its 5th job goes about 9th); boosted, the burst
 * together takes one job's room at its share and goes next. Bounded: at most this many of a
 * workspace's jobs are boosted at once, so a workspace that keeps more in flight gets its share.
 */
export const BURST_JOBS = 8;
/** The largest fairness weight Temporal accepts (and the workspace column's check). */
export const MAX_FAIRNESS_WEIGHT = 1000;

export interface FairShare {
  workspaceId: string;
  priority: JobPriority;
  /** The workspace's weight when the job was created (0.001–1000; 1 is the default share). */
  fairnessWeight: number;
}

/** The Temporal Priority a job's workflow starts with. `fairness: false` leaves every job in one FIFO per priority. */
export function taskPriority(job: FairShare, opts: { fairness?: boolean } = {}): Priority {
  return {
    priorityKey: priorityKeys[job.priority],
    ...(opts.fairness === false ? {} : { fairnessKey: job.workspaceId, fairnessWeight: job.fairnessWeight }),
  };
}
