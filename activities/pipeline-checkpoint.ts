// A pipeline step's checkpoint: once the step's job ended, its outputs registered as uploads (a
// completed job) or its failure recorded, and the pipeline moved on, completed or failed. The parent
// workflow runs it after each step (activities/pipelines.ts pipelineCheckpoint); the reconciler runs
// it for a pipeline whose parent an operator ended (worker/pipeline-operator-ends.ts), which no run
// checkpoints any more. Under the pipeline row's lock, as every pipeline move.
import type { Database, Queryable } from '../db/index.js';
import type { Job, JobOutput } from '../db/schema.js';
import type { Pipeline, PipelineError, PipelineStep, PipelineStepOutput } from '../db/pipeline-schema.js';
import type { Config } from '../shared/config.js';
import { isTerminal, PIPELINE_CANCELED } from '../jobs/index.js';
import * as repo from '../db/repos/pipelines.js';
import { getJob } from '../db/repos/jobs.js';
import { outputTypeOf, stepOutputUploadId } from '../shared/pipelines.js';
import type { StepOutcome } from '../workflows/pipeline-types.js';
import { enqueuePipelineEvent } from '../db/repos/pipeline-events.js';

/** The pipeline fails at `step` with `error` (by parent run `runId`; null: no run, the reconciler); `skipRest`: its later steps never run (a cancel). */
export async function failPipeline(
  tx: Queryable,
  p: Pipeline,
  step: PipelineStep,
  error: PipelineError,
  skipRest: boolean,
  runId: string | null,
): Promise<void> {
  await repo.updatePipeline(tx, p.id, { status: 'failed', error, completed: true, failedRunId: runId });
  if (skipRest) await repo.markWaitingSteps(tx, p.id, step.position, 'skipped');
  await enqueuePipelineEvent(tx, p, 'pipeline.failed');
}

/** The checkpoint of step `position` for parent run `runId` (null: the reconciler's, no run). */
export function createStepCheckpoint(deps: { db: Database; config: Pick<Config, 'OUTPUT_RETENTION_DAYS'> }) {
  const { db, config } = deps;

  return async function checkpoint(pipelineId: string, position: number, runId: string | null): Promise<StepOutcome> {
    return db.transaction().execute(async (tx) => {
      const p = await repo.lockPipeline(tx, pipelineId);
      const step = await repo.getStep(tx, pipelineId, position);
      const job = step.job_id ? await getJob(tx, step.job_id) : undefined;
      if (!job) return 'end';
      if (!isTerminal(job.status)) {
        if (step.status !== job.status) await repo.updateStep(tx, pipelineId, position, { status: job.status });
        return 'running';
      }
      const active = p.status === 'pending' || p.status === 'running';
      if (job.status === 'completed') {
        if (step.status !== 'completed') {
          const outputs = await registerOutputs(tx, p, step, job);
          await repo.updateStep(tx, pipelineId, position, { status: 'completed', outputs, error: null });
          await enqueuePipelineEvent(tx, p, 'pipeline.step.completed', step.step_id);
        }
        if (!active) return 'end';
        if (p.cancel_requested_at !== null) {
          await failPipeline(tx, p, step, PIPELINE_CANCELED, true, runId);
          return 'end';
        }
        const steps = await repo.stepsOf(tx, pipelineId);
        if (position < steps.length - 1) return 'next';
        await repo.updatePipeline(tx, pipelineId, { status: 'completed', error: null, completed: true });
        await enqueuePipelineEvent(tx, p, 'pipeline.completed');
        return 'end';
      }
      const jobError = job.error ?? { code: 'generation_failed', message: 'the generation failed' };
      if (step.status !== 'failed') {
        await repo.updateStep(tx, pipelineId, position, { status: 'failed', error: jobError });
        await enqueuePipelineEvent(tx, p, 'pipeline.step.failed', step.step_id);
      }
      if (active) {
        const canceled = p.cancel_requested_at !== null;
        const error = canceled ? PIPELINE_CANCELED : { code: jobError.code, message: `step "${step.step_id}" failed: ${jobError.message}` };
        await failPipeline(tx, p, step, error, canceled, runId);
      }
      return 'end';
    });
  };

  /**
   * Each output of the step's job registered as a completed upload of the workspace pointing at the
   * output's object (no copy), so a later step takes it as any upload id. It expires with the job's
   * outputs (OUTPUT_RETENTION_DAYS; unset: never), and removing it never removes the job's object
   * (db/upload-lifecycle.ts keeps the objects of keys outside the uploads' prefixes).
   */
  async function registerOutputs(tx: Queryable, p: Pipeline, step: PipelineStep, job: Job): Promise<PipelineStepOutput[]> {
    const outputs: JobOutput[] = job.outputs ?? [];
    const days = config.OUTPUT_RETENTION_DAYS;
    const result: PipelineStepOutput[] = [];
    for (const [i, o] of outputs.entries()) {
      const id = stepOutputUploadId(job.id, i);
      const ext = o.key.split('.').pop() ?? 'bin';
      await tx
        .insertInto('file_uploads')
        .values({
          id,
          workspace_id: p.workspace_id,
          project_id: p.project_id,
          name: `${step.step_id}-output-${i}.${ext}`,
          object_key: o.key,
          file_type: outputTypeOf(step.kind),
          mime_type: o.content_type,
          file_size: o.size,
          status: 'completed',
          source_url: null,
          expires_at: days == null ? null : new Date((job.finished_at ?? new Date()).getTime() + days * 86_400_000),
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
      result.push({ upload_id: id, key: o.key, content_type: o.content_type });
    }
    return result;
  }
}
