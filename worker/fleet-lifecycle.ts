// A worker fleet's run() and shutdown() (worker/workers.ts assembles the fleet). Running starts the
// control loops, and on a versioned build its promoter and drain watcher, beside the Temporal
// workers. Shutdown stops the promoter and watcher, then the loops (handing their leases over at
// once), then the workers, and closes the Temporal client last, since the loops use it until they stop.
import type { NativeConnection, Worker } from '@temporalio/worker';
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from '../shared/config.js';
import type { Database } from '../db/index.js';
import { watchDrainage, type Versioning } from './deployment.js';
import { runPromoter } from './promoter.js';
import { leaseDeployment, type ControlLeases } from './control-lease.js';
import type { Reconciler } from './reconciler.js';
import type { UploadSweeper } from './upload-sweeper.js';
import type { WebhookDispatcher } from './webhook-dispatcher.js';
import type { RouteProber } from './route-prober.js';

/** The assembled fleet that run() starts and shutdown() stops. */
interface FleetParts {
  config: Config;
  db: Database;
  logger: Logger;
  connection: NativeConnection;
  client: Client | null;
  versioning: Versioning | null;
  workers: Worker[];
  control: ControlLeases | null;
  reconciler: Reconciler | null;
  uploadSweeper: UploadSweeper | null;
  webhookDispatcher: WebhookDispatcher | null;
  routeProber: RouteProber | null;
}

/** Where run() and shutdown() stand; both read and write it, so each sees what the other started. */
interface FleetState {
  /** Resolves when every worker has stopped (or, with loops only, at shutdown); null until run(). */
  running: Promise<void> | null;
  /** Lets a process with control loops and no Temporal worker end its run (set by run()). */
  loopsStopped: () => void;
  /** Stops the promoter and the drain watcher. */
  stopPromoting: AbortController;
  promoting: Promise<unknown>;
  watching: Promise<unknown>;
  /** The one shutdown in progress, once asked for. */
  stopping: Promise<void> | null;
}

/** The fleet's run() and shutdown() over its assembled parts. */
export function fleetLifecycle(parts: FleetParts): { run(): Promise<void>; shutdown(): Promise<void> } {
  const state: FleetState = {
    running: null,
    loopsStopped: () => undefined,
    stopPromoting: new AbortController(),
    promoting: Promise.resolve(),
    watching: Promise.resolve(),
    stopping: null,
  };
  // Once, whoever asks first: a signal, the caller, or the drain watcher.
  const shutdown = () => (state.stopping ??= stopFleet(parts, state));
  return { run: () => runFleet(parts, state, shutdown), shutdown };
}

/** Starts the control loops, the build's promoter and drain watcher, and the workers; resolves when the fleet has stopped. */
function runFleet(parts: FleetParts, state: FleetState, shutdown: () => Promise<void>): Promise<void> {
  const { config, versioning, workers, control } = parts;
  control?.start();
  if (!state.running && versioning && workers.length > 0) {
    // The version exists once these workers have polled; promoting it runs beside them.
    state.promoting = promoteBuild(parts, versioning, state.stopPromoting.signal);
    if (config.WORKER_DRAIN_CHECK_MS > 0) state.watching = stopWhenDrained(parts, versioning, state.stopPromoting.signal, shutdown);
  }
  state.running ??= workers.length === 0 && control ? holdOpen(state) : Promise.all(workers.map((w) => w.run())).then(() => undefined);
  return state.running;
}

/** Promotes this build to the deployment's current version; one process of the build does it (a lease per build, worker/promoter.ts). */
function promoteBuild(parts: FleetParts, versioning: Versioning, signal: AbortSignal): Promise<unknown> {
  const { config, db, logger } = parts;
  return runPromoter(
    parts.connection.workflowService,
    config.TEMPORAL_NAMESPACE,
    versioning,
    { db, logger, deployment: leaseDeployment(config) },
    signal,
  ).catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'the build promoter stopped'));
}

/**
 * Shuts the fleet down once the server reports this build drained. Rainbow deploys: a superseded
 * build serves the jobs pinned to it, then its workers stop by themselves (no orchestrator needs to know when).
 */
function stopWhenDrained(parts: FleetParts, versioning: Versioning, signal: AbortSignal, shutdown: () => Promise<void>): Promise<unknown> {
  const { config, logger } = parts;
  return watchDrainage(parts.connection.workflowService, config.TEMPORAL_NAMESPACE, versioning, config.WORKER_DRAIN_CHECK_MS, logger, signal).then(
    (drained) => {
      if (!drained) return;
      logger.info(
        { deployment: versioning.deploymentName, buildId: versioning.buildId, status: drained.status, drainageCheckedAt: drained.drainageCheckedAt },
        'this build is drained: stopping its workers',
      );
      // Not awaited here: shutdown() awaits this watcher.
      setImmediate(() => void shutdown());
    },
  );
}

/** A run for a process with control loops and no Temporal worker (`--roles reconciler`): it lasts until shutdown. */
function holdOpen(state: FleetState): Promise<void> {
  return new Promise<void>((resolve) => {
    // The loops' timers are unref'd: this holds the process open until shutdown.
    const alive = setInterval(() => undefined, 60_000);
    state.loopsStopped = () => (clearInterval(alive), resolve());
  });
}

/** Stops the promoter and watcher, the control loops, the workers, then the client, waiting for each. */
async function stopFleet(parts: FleetParts, state: FleetState): Promise<void> {
  state.stopPromoting.abort();
  await state.promoting;
  await state.watching;
  // Stops the loops this process holds and hands their leases over at once.
  await parts.control?.stop();
  await parts.reconciler?.stop();
  await parts.uploadSweeper?.stop();
  await parts.webhookDispatcher?.stop();
  await parts.routeProber?.stop();
  for (const w of parts.workers) {
    if (w.getState() === 'RUNNING') w.shutdown();
  }
  state.loopsStopped();
  await state.running;
  await parts.client?.connection.close();
}
