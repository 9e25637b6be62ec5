// The batch parent workflow's activities (workflows/batch-run.ts): start the next items, and check
// whether every item ended. Every move takes the batch row's lock first, so a cancel (the
// gateway's, under the same lock) either sees an item's job or is seen here before the job exists:
// an item not started when the cancel commits is never charged.
//
// Money: an item's job is created through jobs/create-job.ts chargeJob, exactly as the gateway
// creates a job (quote, budgets, conditional debit, job row and its charge, in one transaction), at
// priority low and its price, so an item is charged when it starts and refunded by the job's own
// rules. The job id is the item's attempt's (shared/batches.ts itemJobId): a retried activity or a
// replay finds the job it made and neither creates nor charges another. A refusal of the charge
// (credits, a budget, the route) fails that item alone.
import type { Database, Queryable } from '../db/index.js';
import type { Job } from '../db/schema.js';
import type { Batch, BatchError, BatchItem } from '../db/batch-schema.js';
import type { Config } from '../shared/config.js';
import type { JobService } from '../jobs/index.js';
import { BudgetExceededError, chargeJob, InsufficientCreditsError, JobRequestRefusedError, ProjectNotInWorkspaceError, startJob } from '../jobs/index.js';
import * as repo from '../db/repos/batches.js';
import { getJob } from '../db/repos/jobs.js';
import { routeFor } from '../shared/catalog.js';
import type { JobParamsOf } from '../shared/job-params.js';
import type { JobKind } from '../shared/kinds/index.js';
import { BATCH_ITEM_PRIORITY, itemJobId } from '../shared/batches.js';
import type { BatchActivities, BatchStep } from '../workflows/batch-types.js';

interface BatchActivityDeps {
  db: Database;
  jobs: JobService;
  config: Pick<Config, 'BATCH_START_PER_SECOND'>;
}

/** The pause between two starts of items: one second, each start taking the rate's share of it. */
const START_PAUSE_MS = 1_000;

/** The item's error when the job service will not charge it (credits, a budget, its route). */
function refusalOf(err: unknown): BatchError | null {
  if (err instanceof InsufficientCreditsError)
    return { code: 'insufficient_credits', message: `insufficient credits: the item requires ${err.required} credits, the workspace has ${err.available}` };
  if (err instanceof BudgetExceededError)
    return { code: 'budget_exceeded', message: `a budget of ${err.budget.scope} ${err.budget.scope_id} has ${err.remaining} credits left` };
  if (err instanceof JobRequestRefusedError) return { code: err.code, message: err.message };
  if (err instanceof ProjectNotInWorkspaceError) return { code: 'forbidden', message: err.message };
  return null;
}

export function createBatchActivities(deps: BatchActivityDeps): BatchActivities {
  const { db, jobs, config } = deps;

  /** The item's job for its attempt: found (a retried call), or created and charged; or the item's refusal. */
  async function itemJob(tx: Queryable, b: Batch, item: BatchItem): Promise<{ job: Job; created: boolean } | { error: BatchError }> {
    const id = itemJobId(item.kind, b.id, item.position, item.attempt);
    const existing = await getJob(tx, id);
    if (existing) return { job: existing, created: false };
    const route = routeFor(item.model);
    if (!route) return { error: { code: 'invalid_model', message: `model ${item.model} is not supported` } };
    try {
      const { job } = await chargeJob(jobs, tx, {
        id,
        kind: item.kind,
        workspaceId: b.workspace_id,
        projectId: b.project_id,
        apiKeyId: b.api_key_id ?? '',
        model: item.model,
        route,
        params: item.params as JobParamsOf<JobKind>,
        priority: BATCH_ITEM_PRIORITY,
        deadlineSeconds: item.deadline_seconds,
        webhook: null,
        // The item's labels, as its create body carried them (checked within bounds at create).
        metadata: (item.body as { metadata?: Record<string, string> }).metadata,
        tags: (item.body as { tags?: string[] }).tags,
      });
      return { job, created: true };
    } catch (err) {
      const error = refusalOf(err);
      if (!error) throw err;
      return { error };
    }
  }

  /** Charges the next waiting items under the batch's lock; answers the jobs to start after commit and whether more wait. */
  async function chargeNext(batchId: string): Promise<{ toStart: Job[]; more: boolean; ended: boolean }> {
    return db.transaction().execute(async (tx) => {
      const b = await repo.lockBatch(tx, batchId);
      if (!b.workflow_started) await repo.updateBatch(tx, batchId, { workflowStarted: true });
      if (b.status !== 'running') return { toStart: [], more: false, ended: true };
      if (b.cancel_requested_at) {
        await repo.cancelWaitingItems(tx, batchId);
        return { toStart: [], more: false, ended: false };
      }
      const limit = config.BATCH_START_PER_SECOND;
      const items = await repo.waitingItems(tx, batchId, limit + 1);
      const toStart: Job[] = [];
      for (const item of items.slice(0, limit)) {
        const made = await itemJob(tx, b, item);
        if ('error' in made) {
          await repo.markItemRefused(tx, batchId, item.position, made.error);
          continue;
        }
        await repo.markItemStarted(tx, batchId, item.position, made.job.id);
        toStart.push(made.job);
      }
      return { toStart, more: items.length > limit, ended: false };
    });
  }

  return {
    async batchStartItems(batchId): Promise<BatchStep> {
      const { toStart, more, ended } = await chargeNext(batchId);
      if (ended) return { next: 'end' };
      // Committed: each job's workflow starts now; one whose start fails is the reconciler's, as any job's.
      await Promise.all(toStart.map((job) => startJob(jobs, job)));
      return more ? { next: 'start', waitMs: START_PAUSE_MS } : { next: 'wait', waitMs: 0 };
    },

    async batchCheck(batchId): Promise<BatchStep> {
      return db.transaction().execute(async (tx) => {
        const b = await repo.lockBatch(tx, batchId);
        if (b.status !== 'running') return { next: 'end' };
        if ((await repo.waitingItems(tx, batchId, 1)).length > 0 && !b.cancel_requested_at) return { next: 'start', waitMs: 0 };
        if (!(await repo.allItemsEnded(tx, batchId))) return { next: 'wait', waitMs: 0 };
        await repo.completeBatch(tx, b);
        return { next: 'end' };
      });
    },
  };
}
