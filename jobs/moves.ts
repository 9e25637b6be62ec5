// The job's status moves that settle credits, each in the caller's transaction under the job row
// lock (docs/architecture.md "Life of a generation request", step 6):
//   claimJob     pending | generating | failed → generating, for workflow run `runId`
//   completeJob  generating (claimed by `runId`) → completed
//   failJob      pending | generating (claimed by `runId`) → failed
// A workflow run acts on a job only once it has claimed it: whatever database step runs first in
// a run claims the job (so an operator's Reset to any point of a history works, whichever step the
// new run runs first), and a step of any other run — a late attempt of a run that was reset, the
// reconciler acting on a closed run — is refused by the run id in the UPDATE's WHERE. Each UPDATE
// repeats its allowed sources (jobs/transitions.ts) and that run id, so the SQL refuses an illegal
// move even in a race the check before it did not foresee. Repeating a move a job already made (a
// step retried after its commit) changes nothing. Completed is final; a job failed by a cancel is
// never revived. The service (jobs/service.ts) runs these; tests may run them in a transaction of
// their own.
import type { Tx } from '../db/index.js';
import type { Job, JobError, JobOutput, JobStatus } from '../db/schema.js';
import * as jobsRepo from '../db/repos/jobs.js';
import type { CompleteExtra } from '../db/repos/jobs.js';
import { settleChargeTo } from '../db/repos/job-ledger.js';
import type { MoveProgress } from '../db/repos/job-progress.js';
import { sharePipeline, findStep } from '../db/repos/pipelines.js';
import { stepOfJob } from '../shared/pipelines.js';
import {
  claimOf,
  completionClaimOf,
  failureCharge,
  IllegalStatusMoveError,
  mayFail,
  settledCharge,
  stepRevivalRefusal,
  wasCanceled,
  type Claim,
} from './rules.js';
import { fromStatuses, revivals } from './transitions.js';

/** The fence of a move to generating, from the transition table. */
const claimFence: jobsRepo.ClaimFence = { from: fromStatuses('generating'), revivingFrom: revivals.filter((r) => r.to === 'generating').map((r) => r.from) };

/**
 * The job runs in workflow run `runId` from now on (rules.ts claimOf): status `generating`, error
 * cleared, and its price charged again when a failure had refunded it (a revival also forgets the
 * provider request of the failed run: it was canceled or failed). Returns the row and how it was
 * claimed. Throws IllegalStatusMoveError when the run may not claim it, and
 * InsufficientCreditsError when a revival cannot be paid for.
 */
export async function claimJob(tx: Tx, jobId: string, runId: string, progress?: MoveProgress): Promise<{ job: Job; claim: Claim }> {
  const job = await jobsRepo.lockJob(tx, jobId);
  const claim = claimOf(job, runId);
  if (typeof claim === 'object') throw new IllegalStatusMoveError(jobId, job.status, 'generating', claim.refused);
  if (claim === 'ours' && !progress) return { job, claim };
  if (claim === 'revive') {
    const refused = await pipelineRevivalRefusal(tx, jobId);
    if (refused) throw new IllegalStatusMoveError(jobId, job.status, 'generating', refused);
  }
  // A job about to run is charged its price.
  await settleChargeTo(tx, job, job.price, 'revived');
  const row = await jobsRepo.moveToGenerating(tx, job, runId, claimFence, { fresh: claim !== 'ours', progress, forgetRef: claim === 'revive' });
  if (!row) throw new IllegalStatusMoveError(jobId, job.status, 'generating');
  return { job: row, claim };
}

/**
 * Why a pipeline step's job may not be revived (rules.ts stepRevivalRefusal), read with the
 * pipeline row share-locked: a resume or a checkpoint (which take its update lock) cannot move the
 * step on between this read and the revival's commit.
 */
async function pipelineRevivalRefusal(tx: Tx, jobId: string): Promise<string | null> {
  const of = stepOfJob(jobId);
  if (!of) return null;
  const pipeline = await sharePipeline(tx, of.pipelineId);
  const step = pipeline ? await findStep(tx, of.pipelineId, of.position) : undefined;
  return stepRevivalRefusal(of.attempt, pipeline, step, jobId);
}

/**
 * → completed with its outputs for run `runId`, claiming the job first when this is the run's
 * first database step (a reset run; a pending job has not started and is refused), and settling
 * the charge to the price. A completed job is left as it is (`charged` 0): completed is final,
 * whichever run completed it. A job the run may not claim (canceled meanwhile) throws
 * IllegalStatusMoveError and stays failed and refunded.
 */
export async function completeJob(
  tx: Tx,
  jobId: string,
  outputs: JobOutput[],
  runId: string,
  extra: CompleteExtra = {},
): Promise<{ charged: number; job: Job }> {
  let job = await jobsRepo.lockJob(tx, jobId);
  if (job.status === 'completed') return { charged: 0, job };
  const claim = completionClaimOf(job, runId);
  if (typeof claim === 'object') throw new IllegalStatusMoveError(jobId, job.status, 'completed', claim.refused);
  if (claim !== 'ours') job = (await claimJob(tx, jobId, runId)).job;
  const charged = await settleChargeTo(tx, job, job.price, 'completed');
  const row = await jobsRepo.moveToCompleted(tx, jobId, outputs, runId, extra);
  if (!row) throw new IllegalStatusMoveError(jobId, job.status, 'completed');
  return { charged, job: row };
}

export type FailResult = { moved: boolean; refunded: number; status: JobStatus; job: Job };

/**
 * → failed with `{ code, message }` and the charge refunded (all of it, but for what the customer's
 * own cancel keeps: rules.ts failureCharge, recorded as `cancel_kept`), for run `runId` (null: no
 * workflow run acts, e.g. a cancel before any ran): a pending job, or a generating one claimed by
 * that run. Anything else is left as it is and reported: a completed job is never refunded, and a
 * job another run has claimed is that run's to finish. `moved` says whether this call failed it,
 * `status` what the job is now.
 */
export async function failJob(tx: Tx, jobId: string, error: JobError, runId: string | null): Promise<FailResult> {
  const job = await jobsRepo.lockJob(tx, jobId);
  if (!mayFail(job, runId)) return { moved: false, refunded: 0, status: job.status, job };
  const { kept, cancel } = failureCharge(job, error);
  const moved = await settleChargeTo(tx, job, kept, error.code, cancel ? { kept } : {});
  const row = await jobsRepo.moveToFailed(tx, jobId, error, runId, fromStatuses('failed'), cancel ? { kept, afterSubmit: cancel.afterSubmit } : null);
  if (!row) throw new IllegalStatusMoveError(jobId, job.status, 'failed');
  return { moved: true, refunded: -moved, status: 'failed', job: row };
}

/** Settles the job's credits by its current status (rules.ts settledCharge); for reconciliation. */
export async function settleByStatus(tx: Tx, jobId: string): Promise<number> {
  const job = await jobsRepo.lockJob(tx, jobId);
  const target = settledCharge(job);
  return target === null ? 0 : settleChargeTo(tx, job, target, 'reconciled');
}

/**
 * The provider confirmed the cancel of a canceled job's request (it will not charge for it): what the
 * cancel kept is refunded too, once. Returns the credits refunded now (0 on a repeat).
 */
export async function refundConfirmedCancel(tx: Tx, jobId: string): Promise<number> {
  const job = await jobsRepo.lockJob(tx, jobId);
  if (!wasCanceled(job) || !job.cancel_kept) return 0;
  const moved = await settleChargeTo(tx, job, 0, 'cancel_confirmed');
  await jobsRepo.clearCancelKept(tx, jobId);
  return -moved;
}
