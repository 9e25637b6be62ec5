// The job's progress, the read model of its workflow's state: the phase each step reaches and the
// provider's percent and queue position from its polls. Status moves write the same columns in
// their own UPDATE (phaseColumns, progressColumns), so a move and its phase are one statement.
import { sql, type RawBuilder } from 'kysely';
import type { Queryable } from '../index.js';
import type { Job, JobPhase } from '../schema.js';

/**
 * The progress a status move records in the same UPDATE (the read model's phase, with the
 * provider's percent and queue position starting over): one statement instead of two.
 */
export interface MoveProgress {
  phase: JobPhase | ((job: Job) => JobPhase);
  attempt: number;
  percent?: number | null;
}

/** The progress columns of a phase change: the provider's percent and queue position start over with it. */
export function phaseColumns(phase: JobPhase | RawBuilder<JobPhase>, attempt: number, percent: number | null = null) {
  return { phase, attempt, percent, queue_position: null, progress_updated_at: sql<Date>`now()` };
}

/** The progress columns of a move, its phase worked out from the job as locked. */
export function progressColumns(p: MoveProgress | undefined, job: Job) {
  if (!p) return {};
  return phaseColumns(typeof p.phase === 'function' ? p.phase(job) : p.phase, p.attempt, p.percent ?? null);
}

/** A phase change: the provider's percent and queue position start over with it. */
export async function setJobPhase(
  db: Queryable,
  jobId: string,
  phase: JobPhase,
  attempt: number,
  percent: number | null = null,
  opts: { whileGenerating?: boolean } = {},
): Promise<void> {
  let q = db
    .updateTable('jobs')
    .set(phaseColumns(phase, attempt, percent))
    .where('id', '=', jobId);
  // A provider step's progress: a step still running after its job ended (a worker frozen, then
  // resumed) must not move an ended job's phase back.
  if (opts.whileGenerating) q = q.where('status', '=', 'generating');
  await q.execute();
}

/**
 * The provider's percent and queue position from a poll, written only while the job is still in
 * the `generating` phase and at most once per `minIntervalMs` per job, whichever worker polls.
 * Returns whether the row changed.
 */
export async function recordPollProgress(
  db: Queryable,
  jobId: string,
  p: { percent: number | null; queuePosition: number | null; attempt: number },
  minIntervalMs: number,
): Promise<boolean> {
  // A poll without a percent keeps the last one, as the workflow's query does.
  const percent = sql<number | null>`coalesce(${p.percent}::double precision, percent)`;
  const r = await db
    .updateTable('jobs')
    .set({ percent, queue_position: p.queuePosition, attempt: p.attempt, progress_updated_at: sql`now()` })
    .where('id', '=', jobId)
    .where('phase', '=', 'generating')
    .where((eb) => eb.or([sql<boolean>`${percent} is distinct from percent`, eb('queue_position', 'is distinct from', p.queuePosition)]))
    .where((eb) => {
      const due = [
        // The phase's first figure is always written.
        eb.and([eb('percent', 'is', null), eb('queue_position', 'is', null)]),
        eb('progress_updated_at', 'is', null),
        eb('progress_updated_at', '<=', sql<Date>`now() - make_interval(secs => ${minIntervalMs / 1000})`),
      ];
      // Leaving the provider's queue is news worth telling at once.
      if (p.queuePosition === null) due.push(eb('queue_position', 'is not', null));
      return eb.or(due);
    })
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}
