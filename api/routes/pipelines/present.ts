// The pipeline record (shared/pipelines.ts pipelineRecordSchema) from its rows and its steps' jobs:
// a step in flight shows its job's status and progress, a completed one its outputs (presigned
// URLs, as the job URL endpoint answers them), and each step its charges and refunds summed over
// its attempts' jobs (the jobs' receipt columns, 0029_receipts), so the record nets to the ledger.
import type { Queryable } from '../../../db/index.js';
import type { Job } from '../../../db/schema.js';
import type { Pipeline, PipelineStep } from '../../../db/pipeline-schema.js';
import { jobsByIds, stepsOfMany } from '../../../db/repos/pipelines.js';
import { isTerminal } from '../../../jobs/index.js';
import type { Storage } from '../../../shared/storage.js';
import type { PipelineRecord } from '../../../shared/pipelines.js';

const ms = (d: Date | null) => (d === null ? null : d.getTime());

async function presentStep(storage: Pick<Storage, 'url'>, step: PipelineStep, jobs: Map<string, Job>): Promise<PipelineRecord['steps'][number]> {
  const attempts = step.jobs.map((id) => jobs.get(id)).filter((j): j is Job => j !== undefined);
  const current = step.job_id ? jobs.get(step.job_id) : undefined;
  const inFlight = current !== undefined && !isTerminal(current.status);
  // A job that ended before the step was checkpointed shows its end, except that a completed one
  // still shows as generating while the step takes its outputs: a step is completed with its
  // outputs, and is never seen going back to pending.
  const settling = current !== undefined && !inFlight && !['completed', 'failed', 'skipped'].includes(step.status);
  const checkpointing = settling && current.status === 'completed';
  const outputs = await Promise.all(
    (step.status === 'completed' ? (step.outputs ?? []) : []).map(async (o) => ({
      url: await storage.url(o.key),
      media_type: o.content_type,
      upload_id: o.upload_id,
    })),
  );
  return {
    id: step.step_id,
    kind: step.kind,
    model: step.model,
    status: checkpointing ? 'generating' : inFlight || settling ? current.status : step.status,
    job_id: step.job_id,
    jobs: step.jobs,
    progress: inFlight ? { phase: current.phase, percent: current.percent } : checkpointing ? { phase: 'checkpointing', percent: null } : null,
    outputs,
    error: step.error,
    price: step.price,
    charged: attempts.reduce((n, j) => n + j.credits_charged, 0),
    refunded: attempts.reduce((n, j) => n + j.credits_refunded, 0),
  };
}

/** The records of `pipelines`, in their order (one read of their steps, one of their jobs). */
export async function presentPipelines(q: Queryable, storage: Pick<Storage, 'url'>, pipelines: Pipeline[]): Promise<PipelineRecord[]> {
  const steps = await stepsOfMany(
    q,
    pipelines.map((p) => p.id),
  );
  const jobs = await jobsByIds(
    q,
    steps.flatMap((s) => s.jobs),
  );
  return Promise.all(
    pipelines.map(async (p) => {
      const own = await Promise.all(steps.filter((s) => s.pipeline_id === p.id).map((s) => presentStep(storage, s, jobs)));
      return {
        id: p.id,
        project_id: p.project_id,
        status: p.status,
        error: p.error,
        price: p.price,
        charged: own.reduce((n, s) => n + s.charged - s.refunded, 0),
        webhook_url: p.webhook_url,
        webhook_events: p.webhook_events,
        created_at: p.created_at.getTime(),
        updated_at: p.updated_at.getTime(),
        completed_at: ms(p.completed_at),
        steps: own,
        metadata: p.metadata,
        tags: p.tags,
      };
    }),
  );
}

export async function presentPipeline(q: Queryable, storage: Pick<Storage, 'url'>, p: Pipeline): Promise<PipelineRecord> {
  return (await presentPipelines(q, storage, [p]))[0]!;
}
