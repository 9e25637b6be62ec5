// What a bulk action's workflow (bulk-action-run.ts) and its activity (activities/bulk-actions.ts)
// exchange: pure data, safe in the workflow sandbox. The workflow is started with the action's id
// alone; its activity reads everything else from Postgres.

/** The workflow of a bulk action; its workflow id is the action's id. */
export const bulkActionWorkflowType = 'bulkActionRun';

export interface BulkActionRunInput {
  bulkActionId: string;
}

/** Apply the action to more jobs after `waitMs` (the rate's pause), or stop (every job was marked). */
export type BulkActionStep = { next: 'more'; waitMs: number } | { next: 'end' };

/** The run's activity (a local activity of the workflow worker, on the io queue too). */
export interface BulkActionActivities {
  /**
   * Applies the action to the next pending jobs, at most BULK_ACTION_PER_SECOND of them, each by the
   * job's own rules (jobs/bulk-actions.ts), marking each with its outcome. Repeatable: a job marked
   * is never taken again, a cancel repeated finds the job failed (refunded once), a retry's new job
   * commits with its mark. Completes the action when none is pending.
   */
  bulkActionStep(bulkActionId: string): Promise<BulkActionStep>;
}
