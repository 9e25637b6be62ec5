// Part of the reconciler role: removes pending direct uploads that were never completed within
// PENDING_UPLOAD_TTL_SECONDS (their incoming object, then the row). Idempotent, so several
// replicas may run it; a pass runs every RECONCILE_INTERVAL_MS.
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Database } from '../db/index.js';
import type { Storage } from '../activities/storage.js';
import { sweepExpiredUploads } from '../activities/direct-uploads.js';
import { periodic } from './periodic.js';
import { sweepIdempotencyKeys } from '../db/repos/idempotency.js';

export interface UploadSweeper {
  start(): void;
  stop(): Promise<void>;
  /** One pass; returns how many pending uploads it removed. */
  runOnce(now?: Date): Promise<number>;
}

export function createUploadSweeper(deps: { config: Config; db: Database; storage: Storage; logger: Logger }): UploadSweeper {
  async function runOnce(now = new Date()): Promise<number> {
    const removed = await sweepExpiredUploads(deps, now);
    // Idempotency keys past their 24 h replay window (issue 14) go with the same pass.
    await sweepIdempotencyKeys(deps.db);
    if (removed > 0) deps.logger.info({ removed }, 'removed expired pending uploads');
    return removed;
  }

  const loop = periodic(deps.config.RECONCILE_INTERVAL_MS, () => runOnce(), (err) => deps.logger.warn({ err: err.message }, 'pending upload sweep failed'));
  return { start: loop.start, stop: loop.stop, runOnce };
}
