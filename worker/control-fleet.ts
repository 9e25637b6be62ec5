// The control fleet: the loops that must run once per deployment, each under its lease
// (worker/control-lease.ts), in whichever process of the current build holds it:
// - `reconciler`: the job and pipeline reconciler's passes (worker/reconciler.ts);
// - `webhook-dispatch`: the outbox dispatcher and its sweep (worker/webhook-dispatcher.ts);
// - `upload-sweep`: expired uploads and the retention sweeps (worker/upload-sweeper.ts);
// - `fleet-gauges`: the gauges read from Postgres and Temporal on scrape (the webhook outbox, the
//   task queues' backlogs, the per-workspace queues, routes): only the holder exports them, so a
//   sum over the replicas is the fleet's figure;
// - `route-probe:<providers>`: the route health probe (worker/route-prober.ts) of the processes
//   serving those providers (each route is also claimed per period, so two probers never probe it
//   twice).
// Every process with the reconciler role (or a probed provider role) competes; the others idle
// (one read of the lease rows per tick) until the holder dies, stalls or stops being current.
import type { Logger } from 'pino';
import type { temporal } from '@temporalio/proto';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { Config } from '../shared/config.js';
import type { Database } from '../db/index.js';
import { createControlLeases, leaseDeployment, type ControlLeases, type LeasedLoop } from './control-lease.js';
import { describeDeployment, type Versioning } from './deployment.js';
import type { BacklogSource, WorkerMetrics } from './metrics.js';

type WorkflowService = temporal.api.workflowservice.v1.WorkflowService;

/** The loops of the reconciler role, by lease name. */
export const RECONCILER_LOOPS = ['reconciler', 'webhook-dispatch', 'upload-sweep', 'fleet-gauges'] as const;

/** The lease name of the route probe of a process serving these providers. */
export const routeProbeLoop = (providers: readonly string[]) => `route-probe:${[...providers].sort().join(',')}`;

/** The gauges' lease: the holder exports the fleet-wide gauges, the others none. */
export function gaugeLoop(metrics: WorkerMetrics | undefined, source: BacklogSource): LeasedLoop {
  return {
    start: () => metrics?.setBacklogSource(source),
    stop: async () => metrics?.setBacklogSource(null),
  };
}

/**
 * Whether this process's build may hold control leases: with Worker Versioning, the deployment's
 * current build, or, while no build is current (a fresh deployment, one run unversioned until
 * now), any build not superseded. Asks the server at most once per `cacheMs` (the lease TTL: a
 * superseded build gives its loops up within that plus a third of it).
 */
function currentBuildCheck(svc: WorkflowService, namespace: string, v: Versioning, cacheMs: number): () => Promise<boolean> {
  let answer: boolean | null = null;
  let at = 0;
  return async () => {
    if (answer !== null && performance.now() - at < cacheMs) return answer;
    const d = await describeDeployment(svc, namespace, v.deploymentName);
    const mine = d?.versions.find((x) => x.buildId === v.buildId);
    answer = !d || d.current === v.buildId || (d.current === null && mine?.status !== 'draining' && mine?.status !== 'drained');
    at = performance.now();
    return answer;
  };
}

/** The process's lease manager for its control loops; null when it runs none. */
export function createControlFleet(deps: {
  config: Config;
  db: Database;
  logger: Logger;
  metrics?: WorkerMetrics | undefined;
  versioning: Versioning | null;
  workflowService: WorkflowService;
}): ControlLeases {
  const { config, versioning } = deps;
  return createControlLeases({
    db: deps.db,
    deployment: leaseDeployment(config),
    buildId: versioning?.buildId ?? null,
    ttlMs: config.CONTROL_LEASE_TTL_MS,
    logger: deps.logger,
    ...(versioning ? { eligible: currentBuildCheck(deps.workflowService, config.TEMPORAL_NAMESPACE, versioning, config.CONTROL_LEASE_TTL_MS) } : {}),
    onChange: (loop, held) => deps.metrics?.controlLease(loop, held),
  });
}

/** Counts every workflow start this process's client attempts (mediagen_workflow_start_attempts_total). */
export function startAttemptCounter(metrics: WorkerMetrics): WorkflowClientInterceptor {
  return {
    async startWithDetails(input, next) {
      try {
        const out = await next(input);
        metrics.workflowStartAttempt(input.workflowType, 'started');
        return out;
      } catch (err) {
        metrics.workflowStartAttempt(input.workflowType, err instanceof WorkflowExecutionAlreadyStartedError ? 'already_started' : 'failed');
        throw err;
      }
    },
  };
}
