// The job's status moves, written once: the service's guards (canMove), the SQL fences of the
// repositories' UPDATEs (fromStatuses, passed to them as arguments) and the terminal / in-flight
// sets are all read off this one table, so the rule cannot differ between TypeScript and SQL.
// Pure data over the shared job model: any layer may import it (workflow code by type only).
import { jobStatuses, type JobStatus } from '../shared/job-model.js';

/**
 * Every status a job may move to from each status (docs/architecture.md "Life of a generation request",
 * step 6). A move to the same status is a run taking over a job (an operator's reset replaces the
 * run) or repeating its own claim. `failed → generating` is the one revival: an operator's reset
 * runs a failed job again (re-charged), unless a cancel failed it (the service's rules refuse that).
 * Completed is final.
 */
export const transitions = {
  pending: ['generating', 'failed'],
  generating: ['generating', 'completed', 'failed'],
  completed: [],
  failed: ['generating'],
} as const satisfies Record<JobStatus, readonly JobStatus[]>;

/** The moves only an operator's reset makes: a job there has ended as far as its customer knows. */
export const revivals = [{ from: 'failed', to: 'generating' }] as const satisfies readonly { from: JobStatus; to: JobStatus }[];

/** Whether the table allows `from → to`. */
export function canMove(from: JobStatus, to: JobStatus): boolean {
  return (transitions[from] as readonly JobStatus[]).includes(to);
}

/** The statuses a job may move to `to` from: the `where('status', 'in', …)` fence of the UPDATE that makes the move. */
export function fromStatuses(to: JobStatus): readonly JobStatus[] {
  return jobStatuses.filter((from) => canMove(from, to));
}

const isRevival = (from: JobStatus, to: JobStatus) => revivals.some((r) => r.from === from && r.to === to);

/** Statuses a job leaves only by a revival (or never): the job has ended; a customer's cancel is refused. */
export const terminalStatuses: readonly JobStatus[] = jobStatuses.filter((s) => (transitions[s] as readonly JobStatus[]).every((to) => isRevival(s, to)));

/** Statuses of a job not ended yet: its workflow runs, or is about to. */
export const inFlightStatuses: readonly JobStatus[] = jobStatuses.filter((s) => !terminalStatuses.includes(s));

export const isTerminal = (status: JobStatus): boolean => terminalStatuses.includes(status);
export const isInFlight = (status: JobStatus): boolean => inFlightStatuses.includes(status);
