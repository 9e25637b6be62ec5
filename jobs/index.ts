// The job domain: the service (one per process), its rules, the transition table and the moves
// in a caller's transaction. Layering (eslint.config.js): jobs/ imports shared/ and db/; the
// processes (api/, worker/, activities/) import jobs/; db/ and shared/ never do.
export {
  createJobService,
  type JobService,
  type JobServiceDeps,
  type JobWorkflowPort,
  type Quote,
  type QuoteRequest,
  type StartOutcome,
  type WorkflowCancelOutcome,
} from './service.js';
export type { RouteDecision } from './failover.js';
export { claimJob, completeJob, failJob, refundConfirmedCancel, settleByStatus, type FailResult } from './moves.js';
export {
  cancelChargeOf,
  claimOf,
  completionClaimOf,
  DEADLINE_EXCEEDED,
  failureCharge,
  IllegalStatusMoveError,
  JobRequestRefusedError,
  mayFail,
  settledCharge,
  wasCanceled,
  type CancelCharge,
  type Claim,
} from './rules.js';
export { canMove, fromStatuses, inFlightStatuses, isInFlight, isTerminal, revivals, terminalStatuses, transitions } from './transitions.js';
export { InsufficientCreditsError, ProjectNotInWorkspaceError, type NewJobInput } from '../db/repos/jobs.js';
export { BudgetExceededError, type BudgetAlert } from './budgets.js';
export { PIPELINE_CANCELED, requestPipelineCancel } from './pipeline-cancel.js';
export { chargeJob, startJob, type CreateJobHooks, type JobRequest } from './create-job.js';
