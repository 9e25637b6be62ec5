// What the pipeline's parent workflow (pipeline-run.ts) and its activities (activities/pipelines.ts)
// exchange: pure data, safe in the workflow sandbox. The workflow is started with the pipeline id
// alone; its activities read everything else from Postgres, so payloads stay small.
import type { Priority } from '@temporalio/common';
import type { GenerationInput } from './definitions.js';

/**
 * The type of a pipeline activity's non-retryable failure: the pipeline's own data cannot make the
 * step (an impossible reference, a step row out of step with its pipeline), so retrying cannot help.
 */
export const PIPELINE_STEP_INVALID = 'PipelineStepInvalid';

/** The parent workflow of a pipeline (workflows/pipeline-run.ts); its workflow id is the pipeline id. */
export const pipelineWorkflowType = 'pipelineRun';

export interface PipelineRunInput {
  pipelineId: string;
}

/** How a step's job workflow is started as the parent's child: what the gateway's start of a job sets (workflows/client.ts). */
export interface ChildStart {
  workflowType: string;
  /** The job id: the job's workflow id, as for every job. */
  workflowId: string;
  taskQueue: string;
  input: GenerationInput;
  priority: Priority;
  /** Values of the job's search attributes, by their key in definitions.ts `searchAttributes`. */
  searchAttributes: Record<string, string>;
  summary: string;
  details: string;
  runTimeoutMs: number;
}

/** What the parent does next with a step: run its job's workflow as a child, wait for the job it has, or stop. */
export type StepStart = { action: 'run'; child: ChildStart } | { action: 'wait' } | { action: 'stop' };

/** After a step's job: it still runs (look again later), the next step may start, or the pipeline ended. */
export type StepOutcome = 'running' | 'next' | 'end';

/** The parent's activities (local activities of the workflow worker, on the io queue too). */
export interface PipelineActivities {
  /** The number of steps and the first one not completed; marks the pipeline's workflow as started. */
  pipelinePlan(pipelineId: string): Promise<{ steps: number; from: number }>;
  /**
   * Creates the step's job for its current attempt through the job service (quote, budgets,
   * conditional debit, job row and charge in one transaction), its references resolved to the
   * uploads of the earlier steps' outputs. Idempotent: the job id is the step's attempt's, so a
   * retried or reset call finds the job it made and charges nothing more. A refusal (credits, a
   * budget, a route) fails the pipeline at this step (`stop`), as does a cancel asked before it.
   */
  pipelineStartStep(pipelineId: string, position: number): Promise<StepStart>;
  /** Reads the step's job: once it ended, checkpoints its outputs (registered as uploads) or its failure into the pipeline. */
  pipelineCheckpoint(pipelineId: string, position: number): Promise<StepOutcome>;
  /**
   * The step's work gave up (a non-retryable failure, or retried past the give-up time): the step
   * fails with `reason`, the pipeline fails naming it, later steps are skipped, and the step's job
   * is refunded when it never started. `position` null: the plan itself gave up (the first step not
   * completed is failed). Nothing when the pipeline already ended.
   */
  pipelineGiveUp(pipelineId: string, position: number | null, reason: string): Promise<void>;
}
