// The job's progress as the provider steps write it.
import type { Database } from '../../db/index.js';
import type { JobPhase } from '../../db/schema.js';
import * as progressRepo from '../../db/repos/job-progress.js';

/**
 * Progress writes from provider activities. Polls skip the round trip when nothing changed since
 * this process last wrote the job, and the SQL throttles writes per job across every worker.
 */
export interface ProgressWriter {
  phase(jobId: string, phase: JobPhase, attempt: number, percent?: number | null): Promise<void>;
  poll(jobId: string, p: { percent: number | null; queuePosition: number | null; attempt: number }): Promise<void>;
}

const LAST_POLL_CACHE_MAX = 10_000;

export function createProgressWriter(db: Database, minIntervalMs: number): ProgressWriter {
  // jobId → the values this process last asked to store (oldest entries dropped first).
  const last = new Map<string, string>();
  return {
    async phase(jobId, phase, attempt, percent = null) {
      last.delete(jobId);
      await progressRepo.setJobPhase(db, jobId, phase, attempt, percent, { whileGenerating: true });
    },
    async poll(jobId, p) {
      const seen = `${p.percent}/${p.queuePosition}`;
      if (last.get(jobId) === seen) return;
      const written = await progressRepo.recordPollProgress(db, jobId, p, minIntervalMs);
      if (!written) return;
      last.delete(jobId);
      if (last.size >= LAST_POLL_CACHE_MAX) last.delete(last.keys().next().value!);
      last.set(jobId, seen);
    },
  };
}
