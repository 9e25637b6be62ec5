// The reuse steps of a job's workflow (docs/api/reuse.md; the rules are jobs/reuse.ts): decide under
// the key's row lock, copy a completed source's outputs into the job's own keys (so deleting the
// source never breaks its followers), complete at the reuse price, and wake the followers of a
// source that ended.
import { Context } from '@temporalio/activity';
import type { JobOutput } from '../../db/schema.js';
import { getJob } from '../../db/repos/jobs.js';
import { completeFromReuse, decideReuse, followersOf, usableSource } from '../../jobs/reuse.js';
import { IllegalStatusMoveError } from '../../jobs/rules.js';
import { jobOutputKey } from '../../shared/job-media.js';
import { typedParams } from '../../shared/job-params.js';
import type { JobIoActivities } from '../../workflows/activity-types.js';
import { currentRunId, stepFailure, type JobActivityDeps } from './common.js';

type ReuseActivities = Pick<JobIoActivities, 'reuseStep' | 'adoptReused' | 'wakeReuseFollowers'>;

/** A copy whose source object is gone: the source's outputs were deleted meanwhile. */
const isMissing = (err: unknown): boolean => ['NoSuchKey', 'NotFound'].includes((err as { code?: string }).code ?? '');

export function createReuseActivities(deps: JobActivityDeps): ReuseActivities {
  const { db, storage, config } = deps;
  return {
    reuseStep: (jobId) => db.transaction().execute((tx) => decideReuse(tx, jobId, config.OUTPUT_RETENTION_DAYS)),

    async adoptReused(jobId) {
      const job = await getJob(db, jobId);
      if (!job) throw new Error(`job ${jobId} not found`);
      if (job.status === 'completed') return { adopted: job.outputs?.length ?? 0 };
      const source = await db.transaction().execute((tx) => usableSource(tx, job, config.OUTPUT_RETENTION_DAYS));
      if (!source) return { miss: true };
      const outputs: JobOutput[] = [];
      for (const [i, output] of (source.outputs ?? []).entries()) {
        const ext = /\.([A-Za-z0-9]+)$/.exec(output.key)?.[1] ?? 'bin';
        const key = jobOutputKey(storage, jobId, i + 1, ext);
        Context.current().heartbeat(i);
        try {
          await storage.copy(output.key, key);
        } catch (err) {
          if (isMissing(err)) return { miss: true };
          throw err;
        }
        outputs.push({ ...output, key });
      }
      try {
        const { job: done, refunded } = await db
          .transaction()
          .execute((tx) => completeFromReuse(tx, jobId, outputs, currentRunId(), source.id, config.REUSE_PRICE_CREDITS));
        deps.metrics?.jobFinished(
          { kind: done.kind, model: done.model, provider: typedParams(done).params.provider, createdAt: new Date(done.created_at), refunded },
          'completed',
        );
        return { adopted: outputs.length };
      } catch (err) {
        // Canceled while its copies were made: no media without payment. (Any other error is retried
        // with the copies in place: a commit whose answer was lost must keep its outputs.)
        if (err instanceof IllegalStatusMoveError) await storage.removePrefix(`${storage.jobMediaPrefix(jobId)}/`).catch(() => undefined);
        throw stepFailure(err);
      }
    },

    async wakeReuseFollowers(jobId) {
      const followers = await followersOf(db, jobId);
      await deps.jobs.wakeReuseFollowers(followers);
      return followers.length;
    },
  };
}
