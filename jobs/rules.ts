// The job's lifecycle rules, pure: who may claim a job, what a cancel keeps, what a settlement
// makes the job's net charge. The service (jobs/service.ts) applies them under the row lock and
// the repositories' SQL repeats them as fences (jobs/transitions.ts), so a race the check did not
// foresee is still refused.
import type { Job, JobError, JobStatus } from '../db/schema.js';
import type { Pipeline, PipelineStep } from '../db/pipeline-schema.js';
import { providerCostFor, routeFor } from '../shared/catalog.js';
import { typedParams } from '../shared/job-params.js';

export class IllegalStatusMoveError extends Error {
  override name = 'IllegalStatusMoveError';
  constructor(
    readonly jobId: string,
    readonly from: JobStatus,
    readonly to: JobStatus,
    reason?: string,
  ) {
    super(`job ${jobId} is ${from} and cannot become ${to}${reason ? `: ${reason}` : ''}`);
  }
}

/** A create the service refuses as asked (a 400 at the gateway): its model is not served here, or its request is not. */
export class JobRequestRefusedError extends Error {
  override name = 'JobRequestRefusedError';
  constructor(
    readonly code: 'invalid_model' | 'invalid_request',
    message: string,
  ) {
    super(message);
  }
}

/** The error code of a job its customer's deadline ended (a create's `deadline_seconds`, the row's `deadline_at`). */
export const DEADLINE_EXCEEDED = 'deadline_exceeded';

/**
 * A job failed by a cancel: the customer's, an operator's terminate, or the customer's deadline (a
 * cancel the customer scheduled at create). A reset never revives it.
 */
export function wasCanceled(job: Pick<Job, 'status' | 'error'>): boolean {
  return job.status === 'failed' && (job.error?.code === 'canceled' || job.error?.code === DEADLINE_EXCEEDED);
}

export type Claim = 'ours' | 'take' | 'revive';

/**
 * How run `runId` may claim the job: `ours` (it holds it already), `take` (pending, or generating
 * under another run: a run replaced by an operator's reset), `revive` (failed by another run, not
 * canceled: an operator's reset runs it again, re-charged), or why it may not.
 */
export function claimOf(job: Pick<Job, 'status' | 'status_run_id' | 'error'>, runId: string): Claim | { refused: string } {
  switch (job.status) {
    case 'pending':
      return 'take';
    case 'generating':
      return job.status_run_id === runId ? 'ours' : 'take';
    case 'completed':
      return { refused: 'completed is final' };
    case 'failed':
      if (wasCanceled(job)) return { refused: 'it was canceled' };
      if (job.status_run_id === runId) return { refused: 'this run failed it' };
      return 'revive';
  }
}

/**
 * Why an operator's reset may not revive a pipeline step's job (attempt `attempt` of its step; null:
 * it may). Only the job the running pipeline waits on for that step is revived: its parent then
 * takes the revived job's outcome, and the step is charged once. Once the pipeline failed (or was
 * canceled, or moved on to a newer attempt of the step), the step runs again only as a new attempt
 * (a resume, or a reset of the parent workflow), charged on its own: a revived earlier attempt
 * would charge the same step twice, for media no step takes.
 */
export function stepRevivalRefusal(
  attempt: number,
  pipeline: Pick<Pipeline, 'id' | 'status' | 'cancel_requested_at'> | undefined,
  step: Pick<PipelineStep, 'step_id' | 'attempt' | 'job_id'> | undefined,
  jobId: string,
): string | null {
  if (!pipeline || !step) return null;
  // Attempts count from 0 in the ids, from 1 in words.
  const of = `it is attempt ${attempt + 1} of step "${step.step_id}" of pipeline ${pipeline.id}`;
  if (step.job_id !== jobId)
    return `${of}, which has moved on to attempt ${step.attempt + 1}${step.job_id ? ` (job ${step.job_id})` : ''}: reviving it would charge the step twice`;
  if (pipeline.cancel_requested_at !== null) return `${of}, which was canceled`;
  if (pipeline.status !== 'pending' && pipeline.status !== 'running')
    return `${of}, which is ${pipeline.status}: the step runs again only as a new attempt (a resume of the pipeline, or a reset of its parent workflow), charged once`;
  return null;
}

/** How run `runId` may complete the job: as claimOf, but a pending job has not started (its first step claims it). */
export function completionClaimOf(job: Pick<Job, 'status' | 'status_run_id' | 'error'>, runId: string): Claim | { refused: string } {
  return job.status === 'pending' ? { refused: 'it has not started' } : claimOf(job, runId);
}

/** Whether run `runId` (null: no run, e.g. a cancel before any ran) may fail the job: pending, or generating under that run. */
export function mayFail(job: Pick<Job, 'status' | 'status_run_id'>, runId: string | null): boolean {
  return job.status === 'pending' || (job.status === 'generating' && job.status_run_id === runId);
}

/**
 * What a customer's cancel keeps of the job's charge: `kept` credits (the provider's cost of a
 * submitted request; at most the price), and whether the job had been submitted to a provider.
 */
export interface CancelCharge {
  kept: number;
  afterSubmit: boolean;
}

/**
 * What a customer's cancel of `job` keeps: nothing before a provider has the request (no reference
 * recorded, or the free local renderer's), else the model's provider cost. A provider that honors
 * cancels gets that back too once it confirms the cancel (cancelConfirmed).
 */
export function cancelChargeOf(job: Job): CancelCharge {
  const provider = (job.provider_ref as { provider?: string } | null)?.provider;
  if (!provider || provider === 'local') return { kept: 0, afterSubmit: false };
  const route = routeFor(job.model);
  return { kept: route ? providerCostFor(route, typedParams(job).params) : 0, afterSubmit: true };
}

/**
 * The charge a failure leaves on the job: nothing, but for what the customer's own cancel keeps
 * (an operator's terminate or a failure refunds in full). The customer's deadline is that cancel
 * too, made when the deadline passed. `cancel` is null unless it is one of those.
 */
export function failureCharge(job: Job, error: Pick<JobError, 'code'>): { kept: number; cancel: CancelCharge | null } {
  const customers = (error.code === 'canceled' && job.cancel_requested_at) || error.code === DEADLINE_EXCEEDED;
  const cancel = customers ? cancelChargeOf(job) : null;
  return { kept: cancel ? Math.max(0, Math.min(job.price, cancel.kept)) : 0, cancel };
}

/**
 * What the job's net charge should be by its status: its price when completed (or about to run
 * again), what its customer's cancel kept when failed (else zero); null for a job in flight.
 */
export function settledCharge(job: Pick<Job, 'status' | 'price' | 'cancel_kept'>): number | null {
  if (job.status === 'completed') return job.price;
  if (job.status === 'failed') return job.cancel_kept ?? 0;
  return null;
}
