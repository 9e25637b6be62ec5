// A batch as the API answers it (its record, with its items counted by status) and its manifest
// (JSON, JSON Lines or CSV), read from the batch, its items and their jobs (a pipeline item: its
// pipeline, its last step's outputs, its steps' jobs).
import type { Request, Response } from 'express';
import type { AppDeps } from '../../deps.js';
import type { Queryable } from '../../../db/index.js';
import type { Batch, BatchItem } from '../../../db/batch-schema.js';
import type { Job } from '../../../db/schema.js';
import type { Pipeline, PipelineStep } from '../../../db/pipeline-schema.js';
import * as repo from '../../../db/repos/batches.js';
import { stepsOfMany } from '../../../db/repos/pipelines.js';
import { csvDocument } from '../../../shared/csv.js';
import { MANIFEST_COLUMNS, type BatchItemStatus, type BatchRecord, type ManifestRow } from '../../../shared/batches.js';

const ms = (d: Date | null) => (d === null ? null : d.getTime());

export async function presentBatch(q: Queryable, b: Batch): Promise<BatchRecord> {
  return {
    id: b.id,
    project_id: b.project_id,
    status: b.status,
    item_count: b.item_count,
    counts: await repo.countsOf(q, b.id),
    price: b.price,
    charged: await repo.chargedOf(q, b.id),
    webhook_url: b.webhook_url,
    created_at: b.created_at.getTime(),
    updated_at: b.updated_at.getTime(),
    completed_at: ms(b.completed_at),
    canceled_at: ms(b.cancel_requested_at),
  };
}

/** An item's status: its own until it has a job (or pipeline), its job's (its pipeline's: running reads as generating) after. */
function statusOf(item: BatchItem, job: Job | null, pipeline: Pipeline | null): BatchItemStatus {
  if (item.status !== 'started') return item.status === 'waiting' || item.status === 'canceled' || item.status === 'failed' ? item.status : 'waiting';
  if (pipeline) return pipeline.status === 'running' ? 'generating' : pipeline.status;
  return job?.status ?? 'pending';
}

/** A pipeline item's part of its row: its last step's outputs once completed, its steps' jobs (every attempt's), its error. */
async function pipelinePart(deps: AppDeps, p: Pipeline, steps: PipelineStep[], credits: Map<string, number>) {
  const last = steps[steps.length - 1];
  return {
    output_urls: p.status === 'completed' && last ? await Promise.all((last.outputs ?? []).map((o) => deps.storage.url(o.key))) : [],
    credits: steps.flatMap((s) => s.jobs).reduce((n, id) => n + (credits.get(id) ?? 0), 0),
    error: p.error ? { code: p.error.code, message: p.error.message } : null,
  };
}

/** The manifest's rows, in item order: output URLs signed now, credits net over every attempt's job. */
async function manifestRows(deps: AppDeps, b: Batch): Promise<ManifestRow[]> {
  const rows = await repo.itemsWithJobs(deps.db, b.id);
  const steps = await stepsOfMany(
    deps.db,
    rows.flatMap((r) => (r.pipeline ? [r.pipeline.id] : [])),
  );
  const credits = await repo.creditsByJob(deps.db, [...rows.flatMap((r) => r.item.jobs), ...steps.flatMap((s) => s.jobs)]);
  return Promise.all(
    rows.map(async ({ item, job, pipeline }) => {
      const own = pipeline
        ? await pipelinePart(
            deps,
            pipeline,
            steps.filter((s) => s.pipeline_id === pipeline.id),
            credits,
          )
        : {
            output_urls: job?.status === 'completed' ? await Promise.all((job.outputs ?? []).map((o) => deps.storage.url(o.key))) : [],
            credits: item.jobs.reduce((n, id) => n + (credits.get(id) ?? 0), 0),
            error: job?.error ? { code: job.error.code, message: job.error.message } : null,
          };
      return {
        custom_id: item.custom_id,
        job_id: job?.id ?? null,
        status: statusOf(item, job, pipeline),
        output_urls: own.output_urls,
        credits: own.credits,
        error: own.error ?? item.error ?? null,
        pipeline_id: pipeline?.id ?? null,
      };
    }),
  );
}

/** The manifest in the format the request accepts: JSON (`{ data }`), JSON Lines or CSV. */
export async function manifestAnswer(req: Request, res: Response, deps: AppDeps, b: Batch): Promise<void> {
  const rows = await manifestRows(deps, b);
  res.vary('Accept');
  const wants = req.accepts(['application/json', 'application/jsonl', 'application/x-ndjson', 'text/csv']);
  if (wants === 'application/jsonl' || wants === 'application/x-ndjson') {
    res.type(`${wants}; charset=utf-8`).send(rows.map((r) => `${JSON.stringify(r)}\n`).join(''));
    return;
  }
  if (wants === 'text/csv') {
    const lines = rows.map((r) => [r.custom_id, r.job_id ?? '', r.status, r.output_urls.join(' '), r.credits, r.error?.code ?? '', r.pipeline_id ?? '']);
    res.type('text/csv; charset=utf-8; header=present').send(csvDocument([[...MANIFEST_COLUMNS], ...lines]));
    return;
  }
  res.json({ data: rows });
}
