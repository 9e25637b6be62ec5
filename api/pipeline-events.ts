// A pipeline as its event stream (GET /v1/pipelines/{id}/events) presents it: the record GET
// /v1/pipelines/{id} answers, and its change counter, the stream's event id.
//
// The counter is the pipeline row's `event_seq` (moved by every change of the pipeline and of its
// steps, 0033_pipeline_events) plus the `event_seq` of every job its steps made, every attempt's
// (each moved by every status or progress change of that job, 0006_job_events_seq), plus one so the
// first state counts. Each term only grows (a step's job list only grows, jobs are never deleted),
// so the sum only grows, and it grows with every change the record shows. The jobs' counters are
// added here rather than bumping the pipeline row from the jobs' trigger: that would take the
// pipeline's row lock in every progress write of a step's job, while a step's start holds that lock
// and then debits the workspace, a lock order that can deadlock against a job's refund.
import { sql } from 'kysely';
import type { Database } from '../db/index.js';
import { getPipeline } from '../db/repos/pipelines.js';
import type { Storage } from '../shared/storage.js';
import type { PipelineRecord } from '../shared/pipelines.js';
import { presentPipeline } from './routes/pipelines/present.js';

export interface PipelineView {
  /** The change counter (the SSE id). */
  seq: number;
  workspaceId: string;
  record: PipelineRecord;
}

/** Completed or failed: nothing follows (a resume of a failed pipeline is a new wait). */
export const isTerminalPipeline = (v: PipelineView) => v.record.status === 'completed' || v.record.status === 'failed';

/** The pipeline's view, read in one snapshot (its row, steps and jobs agree); undefined when there is no such pipeline. */
export async function readPipelineView(db: Database, storage: Pick<Storage, 'url'>, id: string): Promise<PipelineView | undefined> {
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .setAccessMode('read only')
    .execute(async (tx) => {
      const p = await getPipeline(tx, id);
      if (!p) return undefined;
      const record = await presentPipeline(tx, storage, p);
      const jobs = await sql<{ n: string | null }>`
        select sum(j.event_seq) as n from jobs j
         where j.id in (select unnest(s.jobs) from pipeline_steps s where s.pipeline_id = ${id})`.execute(tx);
      return { seq: 1 + p.event_seq + Number(jobs.rows[0]?.n ?? 0), workspaceId: p.workspace_id, record };
    });
}
