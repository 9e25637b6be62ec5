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
//
// A pipeline item makes its pipeline when it starts (shared/batches.ts itemPipelineId; its steps as
// the create checked them, each at priority low), charging nothing itself: each step is charged
// when it starts, by the pipeline, as any pipeline's step is. A retry of a failed pipeline item
// resumes its pipeline from the failed step, so the steps that completed are never paid again. Its
// parent workflow is started after commit; a start that fails is the pipeline reconciler's.
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Database, Queryable } from '../db/index.js';
import type { Job } from '../db/schema.js';
import type { Batch, BatchError, BatchItem } from '../db/batch-schema.js';
import type { Config } from '../shared/config.js';
import type { JobService } from '../jobs/index.js';
import { BudgetExceededError, chargeJob, InsufficientCreditsError, JobRequestRefusedError, ProjectNotInWorkspaceError, startJob } from '../jobs/index.js';
import * as repo from '../db/repos/batches.js';
import { insertPipeline, lockPipeline, reopenFailedStep, type NewPipelineStep } from '../db/repos/pipelines.js';
import { getJob } from '../db/repos/jobs.js';
import { workspaceShareWeight } from '../db/repos/fair-share.js';
import { awaitPipelineRunClosed, startPipelineWorkflow } from '../workflows/pipeline-client.js';
import { routeFor } from '../shared/catalog.js';
import type { JobParamsOf } from '../shared/job-params.js';
import type { JobKind } from '../kinds/index.js';
import { BATCH_ITEM_PRIORITY, itemJobId, itemPipelineId } from '../shared/batches.js';
import type { BatchActivities, BatchStep } from '../workflows/batch-types.js';

/** A pipeline item's pipeline to start after commit; `resumed`: its earlier run failed, and may still be closing. */
interface ItemPipelineStart {
  id: string;
  workspaceId: string;
  projectId: string;
  steps: number;
  resumed: boolean;
}

interface BatchActivityDeps {
  db: Database;
  jobs: JobService;
  config: Pick<Config, 'BATCH_START_PER_SECOND'>;
  /** Starts a pipeline item's parent workflow (the process's Temporal client); absent, the pipeline reconciler starts it. */
  startPipeline?: (p: ItemPipelineStart) => Promise<void>;
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

/** How long a resumed pipeline item's start waits for its failed run to close (it closes right after its failure's checkpoint). */
const RUN_CLOSE_WAIT_MS = 10_000;

/** Starts pipeline items' parent workflows on `client`, as POST /v1/pipelines (and its resume) does; a failed start is logged and left to the reconciler. */
export function pipelineItemStarter(
  client: Client,
  db: Database,
  config: Pick<Config, 'TASK_QUEUE_PREFIX' | 'FAIR_SHARE'>,
  logger?: Logger,
): (p: ItemPipelineStart) => Promise<void> {
  return async (p) => {
    try {
      if (p.resumed) await awaitPipelineRunClosed(client, p.id, RUN_CLOSE_WAIT_MS);
      const fairnessWeight = await workspaceShareWeight(db, p.workspaceId);
      await startPipelineWorkflow(client, { ...p, fairnessWeight }, config);
    } catch (err) {
      logger?.warn({ pipelineId: p.id, err: (err as Error).message }, "batch item's pipeline workflow start failed; left for the reconciler");
    }
  };
}

export function createBatchActivities(deps: BatchActivityDeps): BatchActivities {
  const { db, jobs, config } = deps;

  /** The item's job for its attempt: found (a retried call), or created and charged; or the item's refusal. */
  async function itemJob(tx: Queryable, b: Batch, item: BatchItem & { kind: JobKind }): Promise<{ job: Job; created: boolean } | { error: BatchError }> {
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

  /**
   * A pipeline item's pipeline, made (nothing charged: its steps are, each when it starts) or, after
   * a retry of the item, resumed from its failed step; one running already (resumed by its own
   * endpoint) is left as it is.
   */
  async function itemPipeline(tx: Queryable, b: Batch, item: BatchItem): Promise<ItemPipelineStart | null> {
    const id = itemPipelineId(b.id, item.position);
    const run = { id, workspaceId: b.workspace_id, projectId: b.project_id };
    if (item.pipeline_id) {
      const p = await lockPipeline(tx, id);
      if (p.status !== 'failed' || p.cancel_requested_at) return null;
      return { ...run, steps: await reopenFailedStep(tx, id), resumed: true };
    }
    const steps = (item.params as { steps: NewPipelineStep[] }).steps;
    const labels = item.body as { metadata?: Record<string, string>; tags?: string[] };
    await insertPipeline(tx, {
      ...run,
      apiKeyId: b.api_key_id,
      price: item.price,
      webhookUrl: null,
      webhookEvents: null,
      steps,
      metadata: labels.metadata,
      tags: labels.tags,
      batchId: b.id,
    });
    return { ...run, steps: steps.length, resumed: false };
  }

  /** Charges the next waiting items under the batch's lock; answers the jobs and pipelines to start after commit and whether more wait. */
  async function chargeNext(batchId: string): Promise<{ toStart: Job[]; pipelines: ItemPipelineStart[]; more: boolean; ended: boolean }> {
    return db.transaction().execute(async (tx) => {
      const b = await repo.lockBatch(tx, batchId);
      if (!b.workflow_started) await repo.updateBatch(tx, batchId, { workflowStarted: true });
      if (b.status !== 'running') return { toStart: [], pipelines: [], more: false, ended: true };
      if (b.cancel_requested_at) {
        await repo.cancelWaitingItems(tx, batchId);
        return { toStart: [], pipelines: [], more: false, ended: false };
      }
      const limit = config.BATCH_START_PER_SECOND;
      const items = await repo.waitingItems(tx, batchId, limit + 1);
      const toStart: Job[] = [];
      const pipelines: ItemPipelineStart[] = [];
      for (const item of items.slice(0, limit)) {
        if (item.kind === 'pipeline') {
          const started = await itemPipeline(tx, b, item);
          if (started) pipelines.push(started);
          await repo.markItemPipelineStarted(tx, batchId, item.position, itemPipelineId(b.id, item.position));
          continue;
        }
        const made = await itemJob(tx, b, { ...item, kind: item.kind });
        if ('error' in made) {
          await repo.markItemRefused(tx, batchId, item.position, made.error);
          continue;
        }
        await repo.markItemStarted(tx, batchId, item.position, made.job.id);
        toStart.push(made.job);
      }
      return { toStart, pipelines, more: items.length > limit, ended: false };
    });
  }

  return {
    async batchStartItems(batchId): Promise<BatchStep> {
      const { toStart, pipelines, more, ended } = await chargeNext(batchId);
      if (ended) return { next: 'end' };
      // Committed: each job's (and pipeline's) workflow starts now; one whose start fails is the reconciler's, as any job's.
      await Promise.all([...toStart.map((job) => startJob(jobs, job)), ...pipelines.map((p) => deps.startPipeline?.(p))]);
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
