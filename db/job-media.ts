// Failing a job is settling it and removing its media in one step, whoever fails it (the workflow,
// the cancel route for a workflow that never existed or already ended, the reconciler): no media
// stays in storage for a job that was refunded. A completed job is never failed, so its media stays.
import type { Database } from './index.js';
import type { JobError, JobStatus } from './schema.js';
import * as jobsRepo from './repos/jobs.js';
import { jobPrefix, type Storage } from '../shared/storage.js';

/**
 * Marks the job failed (refunding it) in workflow run `runId` (null: no run failed it) and removes
 * every object under its prefix, unless it had completed. Idempotent: removing again also catches
 * an output written late by an activity that was still running when the job was canceled.
 */
export async function failJobAndRemoveMedia(
  deps: { db: Database; storage: Storage },
  jobId: string,
  error: JobError,
  runId: string | null,
): Promise<{ moved: boolean; refunded: number; status: JobStatus }> {
  const result = await deps.db.transaction().execute((tx) => jobsRepo.markFailed(tx, jobId, error, runId));
  if (result.status === 'failed') await deps.storage.removePrefix(jobPrefix(jobId));
  return result;
}
