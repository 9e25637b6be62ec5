// The bulk action workflow's activity (workflows/bulk-action-run.ts): apply the action to the next
// pending jobs by the job's own rules (jobs/bulk-actions.ts) and mark each with its outcome.
// Money: a cancel refunds through the job service's fail (it acts only on a job still in flight, so
// a repeated step refunds nothing more); a retry's new job and its charge commit in the transaction
// that marks the old one (a repeated step finds it marked and creates nothing), and its workflow is
// started after commit (a failed start is the reconciler's, as for any job).
import type { Database } from '../db/index.js';
import type { Storage } from '../shared/storage.js';
import type { JobService } from '../jobs/index.js';
import { startJob } from '../jobs/index.js';
import { bulkCancel, bulkDelete, bulkRetry, type BulkJobOutcome } from '../jobs/bulk-actions.js';
import * as repo from '../db/repos/bulk-actions.js';
import { getJob } from '../db/repos/jobs.js';
import type { BulkAction } from '../db/bulk-action-schema.js';
import { BULK_ACTION_PER_SECOND } from '../shared/bulk-actions.js';
import type { BulkActionActivities, BulkActionStep } from '../workflows/bulk-action-types.js';

interface BulkActionActivityDeps {
  db: Database;
  storage: Storage;
  jobs: JobService;
}

const PAUSE_MS = 1_000;
/** Jobs of one step worked on at once: a cancel waits on Temporal and Postgres, so one at a time would fall far below the rate. */
const CONCURRENCY = 10;

export function createBulkActionActivities(deps: BulkActionActivityDeps): BulkActionActivities {
  const { db, jobs, storage } = deps;

  /** A retry: the new job and the old one's mark in one transaction, then the new job's start. */
  async function retryOne(a: BulkAction, jobId: string): Promise<void> {
    const created = await db.transaction().execute(async (tx) => {
      const job = await getJob(tx, jobId);
      if (!job) {
        await repo.markJob(tx, a.id, jobId, { status: 'skipped', reason: 'not found' });
        return undefined;
      }
      const outcome = await bulkRetry(jobs, tx, job, a.api_key_id ?? '');
      // Marked first in the outcome's transaction: a step repeated after this commit skips the job.
      if (!(await repo.markJob(tx, a.id, jobId, outcome))) throw new AlreadyMarked();
      return outcome.job;
    });
    if (created) await startJob(jobs, created);
  }

  async function applyOne(a: BulkAction, jobId: string): Promise<void> {
    if (a.action === 'retry') {
      await retryOne(a, jobId).catch((err: unknown) => {
        if (!(err instanceof AlreadyMarked)) throw err;
      });
      return;
    }
    const job = await getJob(db, jobId);
    let outcome: BulkJobOutcome;
    if (!job) outcome = { status: 'skipped', reason: 'not found' };
    else if (a.action === 'cancel') outcome = await bulkCancel(jobs, job);
    else outcome = await bulkDelete(db, storage, job);
    await repo.markJob(db, a.id, jobId, outcome);
  }

  return {
    async bulkActionStep(bulkActionId): Promise<BulkActionStep> {
      const began = Date.now();
      const a = await repo.getBulkAction(db, bulkActionId);
      if (!a) return { next: 'end' };
      await repo.markStarted(db, a.id);
      const ids = await repo.pendingJobIds(db, a.id, BULK_ACTION_PER_SECOND);
      for (let i = 0; i < ids.length; i += CONCURRENCY) await Promise.all(ids.slice(i, i + CONCURRENCY).map((jobId) => applyOne(a, jobId)));
      if (ids.length < BULK_ACTION_PER_SECOND && (await repo.completeIfDone(db, a.id))) return { next: 'end' };
      return { next: 'more', waitMs: Math.max(0, PAUSE_MS - (Date.now() - began)) };
    },
  };
}

/** A retry's job was marked by an earlier attempt of the step: its transaction is rolled back. */
class AlreadyMarked extends Error {}
