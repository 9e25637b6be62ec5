// Reuse of identical requests (docs/api/reuse.md), the job service's part:
//   the key     — sha256 over the canonical validated request: its kind, model and parameters
//                 (defaults resolved, the seed and the output spec among them) with every upload
//                 input replaced by its content's entity tag, so the same file uploaded twice is
//                 the same input and an upload replaced is not. Scoped to the workspace by the row.
//   the choice  — a job's first step (reuseStep, under the key's row lock in `reuse_sources`, so
//                 every gateway and worker agrees): lead (no usable source: it runs and becomes the
//                 key's source), wait (the source is in flight: its end wakes this job) or adopt (the
//                 source completed and its outputs are kept: they are copied, and the job completes
//                 at the reuse price).
//   the answer  — completeFromReuse: the job's price becomes the reuse price (its create charged the
//                 model's, so the difference is refunded with a timeline entry naming the source),
//                 then completed with its own copies of the outputs.
// A source that failed, was canceled or whose outputs were deleted or expired is a miss: the next
// job that asks takes the key over and runs. A follower's cancel is its own: the source and every
// other follower go on.
import { createHash } from 'node:crypto';
import type { Queryable, Tx } from '../db/index.js';
import type { Job, JobOutput } from '../db/schema.js';
import * as jobsRepo from '../db/repos/jobs.js';
import { settleChargeTo } from '../db/repos/job-ledger.js';
import { appendTimeline } from '../db/repos/job-timeline.js';
import { outputsGoneReason } from '../shared/retention.js';
import { claimJob } from './moves.js';
import { IllegalStatusMoveError } from './rules.js';

/** The key of a canonical request: its kind, model and parameters, uploads by content (`digests`: upload id → entity tag). */
export function reuseKeyOf(request: { kind: string; model: string; params: Record<string, unknown> }, digests: ReadonlyMap<string, string>): string {
  const byContent = (v: unknown): unknown => {
    if (typeof v === 'string' && digests.has(v)) return { content: digests.get(v) };
    if (Array.isArray(v)) return v.map(byContent);
    return v;
  };
  const params = Object.fromEntries(
    Object.entries(request.params)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => [k, byContent(v)]),
  );
  return createHash('sha256')
    .update(canonicalJson({ kind: request.kind, model: request.model, params }))
    .digest('hex');
}

/** JSON with every object's keys sorted: equal values, equal text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** What a job's reuse step decided. */
type ReuseDecision = { lead: true } | { wait: string } | { adopt: string };

type SourceRow = Pick<Job, 'id' | 'status' | 'outputs' | 'outputs_removed_at' | 'finished_at' | 'updated_at'>;

/** Whether a completed source's outputs can still answer a follower (kept, not deleted or expired). */
export function sourceUsable(source: SourceRow, outputRetentionDays: number | null, now = Date.now()): boolean {
  return source.status === 'completed' && (source.outputs?.length ?? 0) > 0 && outputsGoneReason(source, outputRetentionDays, now) === null;
}

/**
 * The reuse step of job `jobId` (with a reuse key), in `tx`: takes the key when no usable source
 * holds it, else follows its source (recorded as the job's `reused_from`). A job no longer in flight
 * (canceled before its first step) leads: its run ends by the usual rules.
 */
export async function decideReuse(tx: Tx, jobId: string, outputRetentionDays: number | null): Promise<ReuseDecision> {
  const job = await jobsRepo.lockJob(tx, jobId);
  if (!job.reuse_key || (job.status !== 'pending' && job.status !== 'generating')) return { lead: true };
  const key = { workspace_id: job.workspace_id, reuse_key: job.reuse_key };
  await tx
    .insertInto('reuse_sources')
    .values({ ...key, job_id: job.id })
    .onConflict((oc) => oc.doNothing())
    .execute();
  const held = await tx
    .selectFrom('reuse_sources')
    .select('job_id')
    .where('workspace_id', '=', key.workspace_id)
    .where('reuse_key', '=', key.reuse_key)
    .forUpdate()
    .executeTakeFirstOrThrow();
  // The run's first step: its workflow is marked started (the reconciler stops asking), and the job follows `sourceId` (null: none).
  const follow = async (sourceId: string | null) => {
    if (job.reused_from !== sourceId || !job.workflow_started)
      await tx.updateTable('jobs').set({ reused_from: sourceId, workflow_started: true }).where('id', '=', job.id).execute();
  };
  if (held.job_id === job.id) {
    await follow(null);
    return { lead: true };
  }
  const source = await tx
    .selectFrom('jobs')
    .select(['id', 'status', 'outputs', 'outputs_removed_at', 'finished_at', 'updated_at', 'workspace_id', 'reuse_key'])
    .where('id', '=', held.job_id)
    .executeTakeFirst();
  // The key's row names a job of the same workspace and key; anything else is taken over.
  const same = source && source.workspace_id === job.workspace_id && source.reuse_key === job.reuse_key;
  if (same && sourceUsable(source, outputRetentionDays)) {
    await follow(source.id);
    return { adopt: source.id };
  }
  if (same && (source.status === 'pending' || source.status === 'generating')) {
    await follow(source.id);
    return { wait: source.id };
  }
  await tx
    .updateTable('reuse_sources')
    .set({ job_id: job.id, updated_at: new Date() })
    .where('workspace_id', '=', key.workspace_id)
    .where('reuse_key', '=', key.reuse_key)
    .execute();
  await follow(null);
  return { lead: true };
}

/** The source a follower adopts, read again at its adoption (undefined: no longer usable, a miss). */
export async function usableSource(tx: Tx, job: Job, outputRetentionDays: number | null): Promise<SourceRow | undefined> {
  if (!job.reused_from || !job.reuse_key) return undefined;
  const source = await tx
    .selectFrom('jobs')
    .select(['id', 'status', 'outputs', 'outputs_removed_at', 'finished_at', 'updated_at'])
    .where('id', '=', job.reused_from)
    .where('workspace_id', '=', job.workspace_id)
    .where('reuse_key', '=', job.reuse_key)
    .executeTakeFirst();
  return source && sourceUsable(source, outputRetentionDays) ? source : undefined;
}

/**
 * → completed from source `sourceId` with the job's own copies of its outputs, for run `runId`
 * (claiming the job first), its price now `price` (the reuse price): the difference from what the
 * create charged is refunded, the timeline entry naming the source. A completed job is left as it is.
 */
export async function completeFromReuse(
  tx: Tx,
  jobId: string,
  outputs: JobOutput[],
  runId: string,
  sourceId: string,
  price: number,
): Promise<{ refunded: number; job: Job }> {
  let job = await jobsRepo.lockJob(tx, jobId);
  if (job.status === 'completed') return { refunded: 0, job };
  job = (await claimJob(tx, jobId, runId)).job;
  const target = Math.min(price, job.price);
  job = (await tx.updateTable('jobs').set({ price: target, reused_from: sourceId }).where('id', '=', jobId).returningAll().executeTakeFirstOrThrow()) as Job;
  const moved = await settleChargeTo(tx, job, target, 'reused', { reused_from: sourceId });
  await appendTimeline(tx, jobId, [{ key: 'reused', type: 'reused', details: { reused_from: sourceId, price: target } }]);
  const row = await jobsRepo.moveToCompleted(tx, jobId, outputs, runId);
  if (!row) throw new IllegalStatusMoveError(jobId, job.status, 'completed');
  return { refunded: -moved, job: row };
}

/** The jobs waiting for `sourceId` (its followers in flight): the ones its end wakes. */
export async function followersOf(q: Queryable, sourceId: string): Promise<string[]> {
  const rows = await q.selectFrom('jobs').select('id').where('reused_from', '=', sourceId).where('status', 'in', ['pending', 'generating']).execute();
  return rows.map((r) => r.id);
}
