// The job service's refusals of a create (a job, a pipeline step, a batch item) as the API answers
// them: 400 for the request, 403 for another workspace's project, 402 for credits or a budget.
import { ApiError } from '../../errors.js';
import { BudgetExceededError, InsufficientCreditsError, JobRequestRefusedError, ProjectNotInWorkspaceError } from '../../../jobs/index.js';

/** The job service's refusals of a create as the API answers them. */
export function createRefusal(err: unknown, projectId: string): unknown {
  if (err instanceof JobRequestRefusedError) return new ApiError(400, err.code, err.message);
  if (err instanceof ProjectNotInWorkspaceError) return new ApiError(403, 'forbidden', `project ${projectId} is not in this workspace`);
  if (err instanceof InsufficientCreditsError) {
    return new ApiError(402, 'insufficient_credits', `insufficient credits: this job requires ${err.required} credits, the workspace has ${err.available}`);
  }
  if (err instanceof BudgetExceededError) return budgetRefusal(err);
  return err;
}

/** 402 budget_exceeded, with the refusing budget's fields beside the error (docs/api/errors.md). */
function budgetRefusal(err: BudgetExceededError): ApiError {
  const { budget: b, required, remaining, resetsAt } = err;
  return new ApiError(
    402,
    'budget_exceeded',
    `budget exceeded: this job requires ${required} credits; the ${b.period === 'day' ? 'daily' : 'monthly'} budget of ${b.scope} ${b.scope_id} has ${remaining} of ${b.limit_credits} credits left until ${resetsAt.toISOString()}`,
    { scope: b.scope, scope_id: b.scope_id, period: b.period, limit: b.limit_credits, remaining, resets_at: resetsAt.toISOString() },
  );
}
