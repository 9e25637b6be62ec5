// What a batch's parent workflow (batch-run.ts) and its activities (activities/batches.ts)
// exchange: pure data, safe in the workflow sandbox. The workflow is started with the batch id
// alone; its activities read everything else from Postgres, so payloads stay small.

/** The parent workflow of a batch; its workflow id is the batch id. */
export const batchWorkflowType = 'batchRun';

export interface BatchRunInput {
  batchId: string;
}

/**
 * What the parent does next: start more items after `waitMs` (the start rate's pause), look again
 * after `waitMs` whether every started item ended, or stop (the batch completed, or ended).
 */
export type BatchStep = { next: 'start'; waitMs: number } | { next: 'wait'; waitMs: number } | { next: 'end' };

/** The parent's activities (local activities of the workflow worker, on the io queue too). */
export interface BatchActivities {
  /**
   * Charges and starts the next waiting items, at most the start rate's share of one pause, each
   * through the one job create (jobs/create-job.ts) at priority low; an item the job service refuses
   * to charge fails alone. Idempotent: an item's job id is its attempt's, so a retried or replayed
   * call finds the job it made and charges nothing more. A canceled batch starts nothing more.
   */
  batchStartItems(batchId: string): Promise<BatchStep>;
  /** Whether every item ended; when so, completes the batch and writes its batch.completed (once). */
  batchCheck(batchId: string): Promise<BatchStep>;
}
