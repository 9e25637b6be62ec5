// Bulk actions' limits and vocabulary, shared by the gateway (api/routes/bulk-actions.ts), the run's
// activities (activities/bulk-actions.ts) and the docs (docs/api/bulk-actions.md).
import type { JobStatus } from './job-model.js';

export const bulkActionNames = ['cancel', 'retry', 'delete'] as const;
export type BulkActionName = (typeof bulkActionNames)[number];

/** The most jobs one bulk action takes: a selector matching more is refused (400 too_many_jobs). */
export const BULK_ACTION_MAX_JOBS = 1000;

/**
 * How many jobs a run applies its action to per second at most: each job's cancel, retry or delete
 * is one of the job service's moves (a cancel is a Temporal call and a refund, a retry a charge), so
 * a bulk action weighs on the service like a key at most this many generation requests a second.
 */
export const BULK_ACTION_PER_SECOND = 50;

/** The statuses a job can be taken in by each action (narrowed further by a `status` filter). */
export const bulkEligibleStatuses: Record<BulkActionName, readonly JobStatus[]> = {
  // In flight: a finished job cannot be canceled.
  cancel: ['pending', 'generating'],
  // Failed: a new job runs the same request (one canceled is skipped when the run reaches it).
  retry: ['failed'],
  // Finished: a job in flight keeps its outputs (cancel it first).
  delete: ['completed', 'failed'],
};
