// One job's part of a bulk action (POST /v1/bulk-actions): the same rules as the job's own endpoints,
// never a second copy of them.
// - cancel: the job service's cancel (POST /v1/{kind}/{id}/cancel): through Temporal, refunded by
//   the job's own rules (in full before the submit, else all but the provider's cost), once.
// - retry: a failed job (never one canceled: the batch rule) runs again as a new job with the same
//   request, created and charged through the one job create (create-job.ts chargeJob: its route
//   decided again by the quote, the conditional debit, the budgets), then started after commit.
// - delete: DELETE /v1/{kind}/{id}'s rule: a finished job's outputs are marked removed, then the
//   objects go; a job in flight is skipped. The action's one audit event stands for every job.
import type { Database, Queryable } from '../db/index.js';
import type { Job } from '../db/schema.js';
import type { Storage } from '../shared/storage.js';
import { jobPrefix } from '../shared/storage.js';
import { routeFor } from '../shared/catalog.js';
import { newId } from '../shared/ids.js';
import { kindOf } from '../kinds/index.js';
import type { JobParamsOf } from '../shared/job-params.js';
import type { JobKind } from '../kinds/index.js';
import { markOutputsRemoved } from '../db/repos/job-outputs.js';
import { InsufficientCreditsError, ProjectNotInWorkspaceError } from '../db/repos/jobs.js';
import { BudgetExceededError } from './budgets.js';
import { JobRequestRefusedError } from './rules.js';
import { isTerminal, terminalStatuses } from './transitions.js';
import { chargeJob } from './create-job.js';
import type { createJobService } from './service.js';

type JobService = ReturnType<typeof createJobService>;

/** What the action did to one job. */
export type BulkJobOutcome = { status: 'done' | 'skipped' | 'failed'; reason?: string; refunded?: number; resultJobId?: string };

/** A job's cancel by the job service's rule; `refunded`: the credits it gave back now. */
export async function bulkCancel(jobs: JobService, job: Job): Promise<BulkJobOutcome> {
  if (isTerminal(job.status)) return { status: 'skipped', reason: `already ${job.status}` };
  const { job: fresh, refunded } = await jobs.cancel(job);
  if (fresh.status === 'completed') return { status: 'skipped', reason: 'completed before the cancel' };
  return { status: 'done', refunded };
}

/** Why a failed job is not retried, or null when it is. */
function retryRefusal(job: Job): string | null {
  if (job.status !== 'failed') return `not failed (${job.status})`;
  if (job.error?.code === 'canceled') return 'canceled jobs are not retried';
  return null;
}

/** The refusal of a retry's charge (credits, budgets, the route, the project), or null for another error. */
function chargeRefusal(err: unknown): string | null {
  if (err instanceof InsufficientCreditsError) return `insufficient credits: ${err.required} required, ${err.available} available`;
  if (err instanceof BudgetExceededError) return `a budget of ${err.budget.scope} ${err.budget.scope_id} has ${err.remaining} credits left`;
  if (err instanceof JobRequestRefusedError || err instanceof ProjectNotInWorkspaceError) return err.message;
  return null;
}

/** The job's request as it was created: its params without the route (the quote decides that again). */
function requestParams(job: Job): Record<string, unknown> {
  const { provider: _p, provider_model_id: _m, routes: _r, deadline_seconds: _d, ...params } = job.params as Record<string, unknown>;
  return params;
}

/**
 * A failed job's request created again as a new job in `tx` (its charge with it), for key `apiKeyId`.
 * The caller commits it with the action's mark, then starts it (startJob).
 */
export async function bulkRetry(jobs: JobService, tx: Queryable, job: Job, apiKeyId: string): Promise<BulkJobOutcome & { job?: Job }> {
  const refusal = retryRefusal(job);
  if (refusal) return { status: 'skipped', reason: refusal };
  const route = routeFor(job.model);
  if (!route) return { status: 'failed', reason: `model ${job.model} is no longer supported` };
  const deadlineSeconds = job.deadline_at ? Math.max(1, Math.round((job.deadline_at.getTime() - job.created_at.getTime()) / 1000)) : null;
  try {
    const { job: created } = await chargeJob(jobs, tx, {
      id: newId(kindOf(job.kind).idPrefix),
      kind: job.kind,
      workspaceId: job.workspace_id,
      projectId: job.project_id,
      apiKeyId,
      model: job.model,
      route,
      params: requestParams(job) as JobParamsOf<JobKind>,
      priority: job.priority,
      deadlineSeconds,
      webhook: job.webhook_url ? { url: job.webhook_url, events: job.webhook_events ?? [] } : null,
      metadata: job.metadata,
      tags: job.tags,
    });
    return { status: 'done', resultJobId: created.id, job: created };
  } catch (err) {
    const reason = chargeRefusal(err);
    if (reason === null) throw err;
    return { status: 'failed', reason };
  }
}

/** DELETE's rule: a finished job's outputs marked removed, then its objects removed (again on a repeat). */
export async function bulkDelete(db: Database, storage: Storage, job: Job): Promise<BulkJobOutcome> {
  const marked = await markOutputsRemoved(db, job.id, terminalStatuses);
  if (!marked) return { status: 'skipped', reason: `still ${job.status}; cancel it first` };
  await storage.removePrefix(jobPrefix(job.id));
  return { status: 'done' };
}
