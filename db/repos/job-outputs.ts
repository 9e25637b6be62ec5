// Deleting a finished job's outputs on request: the row stays (status, price, ledger), its output
// keys go and `outputs_removed_at` records when. Only finished jobs: a job in flight still writes
// its outputs.
import { sql } from 'kysely';
import type { Queryable } from '../index.js';
import type { Job, JobStatus } from '../schema.js';

/**
 * Marks a finished job's outputs removed (the first time only); undefined when the job is still in
 * flight. `finished`: the statuses a job has ended in (jobs/transitions.ts terminalStatuses).
 */
export async function markOutputsRemoved(db: Queryable, jobId: string, finished: readonly JobStatus[]): Promise<Job | undefined> {
  return db
    .updateTable('jobs')
    .set({ outputs: null, outputs_removed_at: sql`coalesce(outputs_removed_at, now())` })
    .where('id', '=', jobId)
    .where('status', 'in', finished)
    .returningAll()
    .executeTakeFirst();
}
