// A reconciler replica as another worker process composes one: its own job service (over the
// given Temporal client) and the reconciler over it. Tests and benchmarks drive it by hand.
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from '../../shared/config.js';
import type { Database } from '../../db/index.js';
import type { Storage } from '../../shared/storage.js';
import { createJobService } from '../../jobs/index.js';
import { jobWorkflowPort } from '../../workflows/client.js';
import { createReconciler, type Reconciler } from '../../worker/reconciler.js';

export function reconcilerOf(deps: { config: Config; db: Database; storage: Storage; client: Client; logger: Logger }): Reconciler {
  const { config, db, storage, client, logger } = deps;
  const workflows = jobWorkflowPort(client, {
    taskQueuePrefix: config.TASK_QUEUE_PREFIX,
    timeoutMs: 10_000,
    runTimeoutGraceMs: config.JOB_RUN_TIMEOUT_GRACE_MS,
    startWaitMs: config.JOB_START_WAIT_MS,
    fairShare: config.FAIR_SHARE,
  });
  return createReconciler({ config, db, jobs: createJobService({ db, storage, logger, workflows }), client, logger });
}
