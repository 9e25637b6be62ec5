// The pipeline parent workflow's activities (workflows/pipeline-run.ts): plan, start a step, and
// checkpoint it. Every move takes the pipeline row's lock first, so a cancel (the gateway's, under
// the same lock) either sees the step's job and cancels it, or is seen here before the job exists.
//
// Money: a step's job is created through jobs/create-job.ts chargeJob, exactly as the gateway creates
// a job (quote, budgets, conditional debit, job row with its route and ledger charge, in one
// transaction), so a step is charged when it starts and refunded by the job's own rules. The job id
// is the step's attempt's (shared/pipelines.ts stepJobId): a retried activity, a replay or an
// operator's reset of the parent finds the job it made and neither creates nor charges another.
import { mergeLabels } from '../shared/labels.js';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Database, Queryable, Tx } from '../db/index.js';
import type { Job } from '../db/schema.js';
import type { Pipeline, PipelineError, PipelineStep } from '../db/pipeline-schema.js';
import type { Config } from '../shared/config.js';
import type { JobService } from '../jobs/index.js';
import {
  BudgetExceededError,
  chargeJob,
  InsufficientCreditsError,
  isTerminal,
  JobRequestRefusedError,
  PIPELINE_CANCELED,
  ProjectNotInWorkspaceError,
} from '../jobs/index.js';
import * as repo from '../db/repos/pipelines.js';
import { getJob } from '../db/repos/jobs.js';
import { routeFor } from '../shared/catalog.js';
import type { JobParamsOf } from '../shared/job-params.js';
import type { JobKind } from '../kinds/index.js';
import { resolveReferences, stepJobId } from '../shared/pipelines.js';
import { boundedRun, jobSummary, jobToStart } from '../workflows/client.js';
import { taskQueues } from '../workflows/definitions.js';
import { workflowTypes } from '../kinds/index.js';
import { taskPriority } from '../shared/task-priority.js';
import { PIPELINE_STEP_INVALID, type ChildStart, type PipelineActivities, type StepStart } from '../workflows/pipeline-types.js';
import { failJob } from '../jobs/moves.js';
import { enqueuePipelineEvent } from '../db/repos/pipeline-events.js';
import { createStepCheckpoint, failPipeline } from './pipeline-checkpoint.js';

interface PipelineActivityDeps {
  db: Database;
  jobs: JobService;
  config: Config;
}

/** The child start of a step's job: the options the gateway's start of a job sets (workflows/client.ts startJobWorkflow). */
function childStartOf(job: Job, config: Pick<Config, 'TASK_QUEUE_PREFIX' | 'JOB_RUN_TIMEOUT_GRACE_MS' | 'JOB_START_WAIT_MS' | 'FAIR_SHARE'>): ChildStart {
  const start = jobToStart(job, config.TASK_QUEUE_PREFIX);
  const run = boundedRun(start.input, { runTimeoutGraceMs: config.JOB_RUN_TIMEOUT_GRACE_MS, startWaitMs: config.JOB_START_WAIT_MS });
  return {
    workflowType: workflowTypes[job.kind],
    workflowId: job.id,
    taskQueue: taskQueues(config.TASK_QUEUE_PREFIX).workflows,
    input: run.input,
    priority: taskPriority(start, { fairness: config.FAIR_SHARE }),
    searchAttributes: {
      workspaceId: start.workspaceId,
      projectId: start.projectId,
      jobKind: start.kind,
      mediaModel: start.model,
      jobStatus: start.status,
      servingProvider: start.input.provider,
      jobPriority: start.priority,
    },
    summary: jobSummary(start),
    details: `Job ${job.id} of workspace ${job.workspace_id}, project ${job.project_id}.`,
    runTimeoutMs: run.runTimeoutMs,
  };
}

/** The parent workflow run this activity runs for. */
const currentRun = () => Context.current().info.workflowExecution?.runId ?? null;

/** Why the job service refused to create a step's job, as the pipeline's error. */
function refusalOf(err: unknown, step: PipelineStep): PipelineError | null {
  const at = `step "${step.step_id}"`;
  if (err instanceof InsufficientCreditsError)
    return { code: 'insufficient_credits', message: `${at}: insufficient credits: it requires ${err.required} credits, the workspace has ${err.available}` };
  if (err instanceof BudgetExceededError)
    return { code: 'budget_exceeded', message: `${at}: a budget of ${err.budget.scope} ${err.budget.scope_id} has ${err.remaining} credits left` };
  if (err instanceof JobRequestRefusedError) return { code: err.code, message: `${at}: ${err.message}` };
  if (err instanceof ProjectNotInWorkspaceError) return { code: 'forbidden', message: `${at}: ${err.message}` };
  return null;
}

export function createPipelineActivities(deps: PipelineActivityDeps): PipelineActivities {
  const { db, jobs, config } = deps;
  const checkpoint = createStepCheckpoint({ db, config });

  /**
   * The upload id of an earlier step's output (the step completed before this one could start), or
   * the step's error when that step has no such output: its provider returned fewer outputs than
   * asked, and no retry makes one appear.
   */
  function resolveParams(steps: PipelineStep[], step: PipelineStep): { params: Record<string, unknown> } | { error: PipelineError } {
    for (const ref of step.refs) {
      const from = steps.find((s) => s.step_id === ref.from);
      if (!from?.outputs?.[ref.output]) {
        const got = from?.outputs?.length ?? 0;
        return {
          error: {
            code: 'missing_step_output',
            message: `step "${step.step_id}": step "${ref.from}" returned ${got} output${got === 1 ? '' : 's'}, so its output ${ref.output} does not exist`,
          },
        };
      }
    }
    return { params: resolveReferences(step.params, step.refs, (ref) => steps.find((s) => s.step_id === ref.from)!.outputs![ref.output]!.upload_id) };
  }

  /** Creates the step's job for `attempt` (charged), or answers the pipeline's error when the job service refuses it. */
  async function createStepJob(tx: Queryable, p: Pipeline, step: PipelineStep, jobId: string): Promise<{ job: Job } | { error: PipelineError }> {
    const resolved = resolveParams(await repo.stepsOf(tx, p.id), step);
    if ('error' in resolved) return resolved;
    const params = resolved.params;
    const route = routeFor(step.model);
    if (!route) return { error: { code: 'invalid_model', message: `step "${step.step_id}": model ${step.model} is not supported` } };
    // The step's job carries the pipeline's labels and the step's own (checked within bounds at create).
    const labels = mergeLabels(p, step.body as { metadata?: Record<string, string>; tags?: string[] });
    if ('error' in labels) return { error: { code: 'invalid_request', message: `step "${step.step_id}": ${labels.error}` } };
    try {
      // The one create of a job (jobs/create-job.ts); the step's job starts as this parent's child.
      const { job } = await chargeJob(jobs, tx, {
        id: jobId,
        kind: step.kind,
        workspaceId: p.workspace_id,
        projectId: p.project_id,
        apiKeyId: p.api_key_id ?? '',
        model: step.model,
        route,
        params: params as JobParamsOf<JobKind>,
        priority: step.priority,
        metadata: labels.metadata,
        tags: labels.tags,
        deadlineSeconds: step.deadline_seconds,
        webhook: null,
      });
      return { job };
    } catch (err) {
      const error = refusalOf(err, step);
      if (!error) throw err;
      return { error };
    }
  }

  return {
    async pipelineGiveUp(pipelineId, position, reason) {
      await db.transaction().execute(async (tx) => {
        const p = await repo.lockPipeline(tx, pipelineId);
        if (p.status !== 'pending' && p.status !== 'running') return;
        const steps = await repo.stepsOf(tx, pipelineId);
        const step = position === null ? steps.find((s) => s.status !== 'completed') : steps.find((s) => s.position === position);
        if (!step) throw ApplicationFailure.nonRetryable(`pipeline ${pipelineId} has no step ${position ?? 'left to run'}`, PIPELINE_STEP_INVALID);
        const error: PipelineError = { code: 'pipeline_step_failed', message: `step "${step.step_id}" gave up: ${reason}` };
        // A job that never started is refunded in full (no provider saw it); one that runs goes on
        // under its own rules (refunded if it fails; a completed one keeps its outputs, under its job id).
        const job = step.job_id ? await getJob(tx, step.job_id) : undefined;
        // Failed as canceled, so a later reset of its workflow never revives and charges it again.
        if (job?.status === 'pending') await failJob(tx as Tx, job.id, { code: 'canceled', message: `the pipeline gave up on this step: ${reason}` }, null);
        await repo.updateStep(tx, pipelineId, step.position, { status: 'failed', error });
        await enqueuePipelineEvent(tx, p, 'pipeline.step.failed', step.step_id);
        await failPipeline(tx, p, step, error, true, currentRun());
      });
    },

    async pipelinePlan(pipelineId) {
      await repo.updatePipeline(db, pipelineId, { workflowStarted: true });
      const steps = await repo.stepsOf(db, pipelineId);
      const from = steps.findIndex((s) => s.status !== 'completed');
      return { steps: steps.length, from: from < 0 ? steps.length : from };
    },

    async pipelineStartStep(pipelineId, position): Promise<StepStart> {
      return db.transaction().execute(async (tx) => {
        const p = await repo.lockPipeline(tx, pipelineId);
        let step = await repo.getStep(tx, pipelineId, position);
        if (step.status === 'completed') return { action: 'wait' };
        if (p.status === 'completed') return { action: 'stop' };
        if (p.status === 'failed') {
          // An operator's reset (another run) re-runs a failed pipeline from its failed step, as a
          // resume does (next attempt, same body); the run that failed it, retrying a workflow task,
          // does not; a canceled pipeline stays canceled.
          if (p.cancel_requested_at !== null || step.status !== 'failed' || p.failed_run_id === currentRun()) return { action: 'stop' };
          await repo.updateStep(tx, pipelineId, position, { attempt: step.attempt + 1, status: 'waiting', jobId: null, error: null });
          await repo.updatePipeline(tx, pipelineId, { status: 'running', error: null, completed: false, failedRunId: null });
          step = await repo.getStep(tx, pipelineId, position);
        }
        if (p.cancel_requested_at !== null) {
          await failPipeline(tx, p, step, PIPELINE_CANCELED, true, currentRun());
          return { action: 'stop' };
        }
        const jobId = stepJobId(step.kind, pipelineId, position, step.attempt);
        const existing = await getJob(tx, jobId);
        let job = existing;
        if (!job) {
          const made = await createStepJob(tx, p, step, jobId);
          if ('error' in made) {
            await repo.updateStep(tx, pipelineId, position, { status: 'failed', error: made.error });
            await failPipeline(tx, p, step, made.error, false, currentRun());
            return { action: 'stop' };
          }
          job = made.job;
        }
        // A job that ended while no run watched it (a restarted or reset parent) is the checkpoint's
        // to settle: it registers the outputs and sends the step's event.
        await repo.updateStep(tx, pipelineId, position, { status: isTerminal(job.status) ? step.status : job.status, jobId: job.id, addJob: job.id });
        if (p.status === 'pending') await repo.updatePipeline(tx, pipelineId, { status: 'running' });
        return { action: 'run', child: childStartOf(job, config) };
      });
    },

    pipelineCheckpoint: (pipelineId, position) => checkpoint(pipelineId, position, currentRun()),
  };
}
