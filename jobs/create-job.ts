// The one home of creating a job: quote → charge (the job row and its ledger charge, under the
// workspace's budgets, in the caller's transaction) → start after commit. The gateway's create
// route, a customer pipeline's step (activities/pipelines.ts) and a batch's items
// (activities/batches.ts) all create their jobs here, so the rules a job is created by (its route
// decided once by the quote, its price at its priority, the conditional debit) cannot drift between
// them. What differs stays with the caller: the gateway checks the request's webhook between the
// quote and the charge; a pipeline step starts its job's workflow as its parent's child instead of
// through `start`, so the Web UI shows the pipeline over its jobs.
import type { Queryable } from '../db/index.js';
import type { Job } from '../db/schema.js';
import type { NewJobInput } from '../db/repos/jobs.js';
import type { Quote, QuoteRequest } from './service-types.js';
import type { createJobService } from './service.js';

type JobService = ReturnType<typeof createJobService>;

/** Everything a job is created from: the quoted request and the job's own fields. */
export interface JobRequest extends QuoteRequest {
  id: string;
  kind: NewJobInput['kind'];
  /** The API key that asked for it ('' for a pipeline made by a key since revoked). */
  apiKeyId: string;
  deadlineSeconds?: number | null;
  /** The job's webhook, when the caller has one already (else `hooks.webhook`). */
  webhook?: NewJobInput['webhook'];
  /** The customer's labels (shared/labels.ts), already within bounds. */
  metadata?: NewJobInput['metadata'];
  tags?: NewJobInput['tags'];
  /** The canonical request's key when the create opted into reuse (jobs/reuse.ts). */
  reuseKey?: string | null;
}

export interface CreateJobHooks {
  /** Checked after the quote and before the charge (the gateway's request webhook): its answer is the job's webhook. */
  webhook?: () => Promise<NewJobInput['webhook']>;
  /** A refusal before anything was charged (the quote's, or the webhook hook's): what to throw instead. */
  refusedBeforeCharge?: (err: unknown) => Promise<unknown>;
  /** A refusal of the charge itself (credits, budgets, the project): what to throw instead. */
  refusedAtCharge?: (err: unknown) => unknown;
}

/**
 * Quotes the request and creates its pending job with its charge in `q` (one statement, or the
 * budgets' transaction). Throws the job service's refusals (JobRequestRefusedError,
 * InsufficientCreditsError, BudgetExceededError, ProjectNotInWorkspaceError), or what the hooks
 * make of them; nothing is written then.
 */
export async function chargeJob(jobs: JobService, q: Queryable, req: JobRequest, hooks: CreateJobHooks = {}): Promise<{ job: Job; quote: Quote }> {
  let quote: Quote;
  let webhook = req.webhook ?? null;
  try {
    quote = await jobs.quote(q, req);
    if (hooks.webhook) webhook = (await hooks.webhook()) ?? null;
  } catch (err) {
    throw hooks.refusedBeforeCharge ? await hooks.refusedBeforeCharge(err) : err;
  }
  try {
    const job = await jobs.create(q, {
      id: req.id,
      kind: req.kind,
      workspaceId: req.workspaceId,
      projectId: req.projectId,
      apiKeyId: req.apiKeyId,
      model: req.model,
      params: quote.params,
      price: quote.price,
      webhook,
      deadlineSeconds: req.deadlineSeconds ?? null,
      priority: req.priority ?? 'normal',
      metadata: req.metadata,
      tags: req.tags,
      reuseKey: req.reuseKey ?? null,
    });
    return { job, quote };
  } catch (err) {
    throw hooks.refusedAtCharge ? hooks.refusedAtCharge(err) : err;
  }
}

/**
 * Starts a committed job's workflow (never inside the transaction that charged it: a rolled back
 * charge must not leave a workflow running). A failed start is the reconciler's to retry.
 */
export function startJob(jobs: JobService, job: Job): ReturnType<JobService['start']> {
  return jobs.start(job);
}
