// A job's timeline (0029_receipts): the append-only log of what happened to it. The moves are
// written by the jobs trigger and the money by the ledger code (db/repos/job-ledger.ts), each in
// the transaction that makes them; this adds the entries no row change shows (the provider's answer
// to a cancel), and reads the log back.
import type { Queryable } from '../index.js';

/** The most entries one read answers: a job makes a few per route and per run, far fewer than this. */
export const TIMELINE_MAX_ENTRIES = 500;

interface TimelineEntry {
  at: Date;
  type: string;
  details: Record<string, unknown>;
}

/** Appends entries to the job's timeline; a key the job has already is skipped (a step retried after its commit). */
export async function appendTimeline(q: Queryable, jobId: string, entries: { key: string; type: string; details: Record<string, unknown> }[]): Promise<void> {
  if (entries.length === 0) return;
  await q
    .insertInto('job_timeline')
    .values(entries.map((e) => ({ job_id: jobId, key: e.key, type: e.type, details: JSON.stringify(e.details) })))
    .onConflict((oc) => oc.columns(['job_id', 'key']).doNothing())
    .execute();
}

/** The job's timeline in the order it happened, at most `limit` entries (served by the (job_id, key) index). */
export async function jobTimeline(q: Queryable, jobId: string, limit = TIMELINE_MAX_ENTRIES): Promise<TimelineEntry[]> {
  return q.selectFrom('job_timeline').select(['at', 'type', 'details']).where('job_id', '=', jobId).orderBy('id').limit(limit).execute();
}
