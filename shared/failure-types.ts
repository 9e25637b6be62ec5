// The failure types activities raise (ApplicationFailure `type`), one list for workers, workflows
// and the gateway. Non-retryable ones end the job; the rest are retried by the activity's policy.
export const failureTypes = {
  /** The provider refused the request for good (content policy, invalid input). */
  providerRejected: 'ProviderRejected',
  /** The provider is temporarily unavailable (429, 5xx, timeout): retried. */
  providerUnavailable: 'ProviderUnavailable',
  /**
   * The provider failed in a way another provider can fix (5xx or timeouts past the failover budget,
   * its account out of quota or credentials refused): the job moves to its next route.
   */
  providerFailover: 'ProviderFailover',
  /** A referenced input (upload, remote URL, actor image) cannot be used. */
  inputUnavailable: 'InputUnavailable',
  /** An operator re-ran a job the workspace can no longer pay for. */
  insufficientCredits: 'InsufficientCredits',
  /** The provider did not finish before the model's deadline. */
  deadlineExceeded: 'DeadlineExceeded',
  /** The customer's deadline (a create's deadline_seconds) passed: the job is not submitted, or is canceled. */
  jobDeadlinePassed: 'JobDeadlinePassed',
  /** The provider reported the generation as failed. */
  generationFailed: 'GenerationFailed',
  /**
   * The job's provider route has no slot for it yet (ROUTE_SLOTS: full, or its workspace holds its
   * share while others wait): retried soon, through the fair task queue; nothing was submitted.
   */
  routeSlotBusy: 'RouteSlotBusy',
  /** The job's status does not allow this step (canceled meanwhile, completed, not being reset). */
  illegalStatusMove: 'IllegalStatusMove',
} as const;

export const nonRetryableFailureTypes = [
  failureTypes.providerRejected,
  failureTypes.providerFailover,
  failureTypes.inputUnavailable,
  failureTypes.insufficientCredits,
  failureTypes.deadlineExceeded,
  failureTypes.jobDeadlinePassed,
  failureTypes.generationFailed,
  failureTypes.illegalStatusMove,
];
