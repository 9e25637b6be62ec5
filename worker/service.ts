// The worker process as one service object (createWorkerService(config, roles, overrides) → start /
// stop), assembled from config: db pool, storage client, the fleet of Temporal workers for the
// roles, and (for the process) its metrics endpoint. worker/main.ts only handles signals; tests and
// benchmarks build the same object.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { pino, type DestinationStream, type Logger } from 'pino';
import type { Config } from '../shared/config.js';
import { createDb, dbTimeouts, type Database } from '../db/index.js';
import { createStorage, type Storage } from '../shared/storage.js';
import { describeRoutes } from '../shared/routing.js';
import { roleName, type Role } from './roles.js';
import { createWorkerFleet, type FleetDeps, type WorkerFleet } from './workers.js';
import { tracingLogOptions } from '../shared/tracing.js';
import { createWorkerMetrics, serveWorkerMetrics, type WorkerMetrics } from './metrics.js';
import { workerHealth } from './health.js';
import { configureMediaSandbox } from '../activities/providers/media-sandbox.js';
import { setMediaToolConcurrency } from '../activities/providers/media-tools.js';

export interface WorkerServiceOverrides {
  /** A pool the caller owns (kept open at stop); else the service opens and closes its own. */
  db?: Database;
  storage?: Storage;
  logger?: Logger;
  /** Where the service's own logger writes (else stdout): tests read its lines. */
  logDestination?: DestinationStream;
  metrics?: WorkerMetrics;
  activityInterceptors?: FleetDeps['activityInterceptors'];
  extraActivities?: FleetDeps['extraActivities'];
  /** Where the SDK core serves its own metrics (relayed on ours); set by worker/main.ts. */
  sdkMetricsUrl?: string;
  /** The metrics port (WORKER_METRICS_PORT) and the route log lines: on for the process, off in tests. */
  processExtras?: boolean;
}

export interface WorkerService {
  readonly config: Config;
  readonly db: Database;
  readonly storage: Storage;
  readonly roles: Role[];
  readonly logger: Logger;
  /** The running fleet (after start). */
  readonly fleet: WorkerFleet;
  /** Resolves when every worker has stopped. */
  readonly done: Promise<void>;
  start(): Promise<void>;
  /** Stops polling, lets in-flight activities finish within WORKER_SHUTDOWN_GRACE_MS, closes what it opened. */
  stop(): Promise<void>;
}

/**
 * The database pool of a worker process: at least one connection per Postgres step it may run at
 * once (the workflows role's local activities, the io queue's activities), so a step never waits
 * for a connection while holding a slot, plus a few for the reconciler and metrics.
 */
export function workerPoolSize(config: Config, roles: Role[]): number {
  const steps = roles.some((r) => r.kind === 'workflows' || r.kind === 'io') ? config.IO_ACTIVITY_CONCURRENCY + 4 : 0;
  return Math.max(config.DATABASE_POOL_SIZE, steps);
}

export function createWorkerService(config: Config, roles: Role[], overrides: WorkerServiceOverrides = {}): WorkerService {
  const logger = overrides.logger ?? pino({ level: config.LOG_LEVEL, base: { service: 'worker' }, ...tracingLogOptions() }, overrides.logDestination);
  const db = overrides.db ?? createDb(config.DATABASE_URL, workerPoolSize(config, roles), {}, dbTimeouts(config));
  const storage = overrides.storage ?? createStorage(config);
  const metrics = overrides.metrics ?? createWorkerMetrics();
  const extras = overrides.processExtras ?? true;
  let fleet: WorkerFleet | null = null;
  let metricsServer: Server | null = null;
  let resolveDone: () => void = () => undefined;
  let rejectDone: (err: unknown) => void = () => undefined;
  const done = new Promise<void>((resolve, reject) => {
    resolveDone = resolve;
    rejectDone = reject;
  });
  // Callers await `done` (worker/main.ts); a failure nobody awaits must not crash the process.
  done.catch(() => undefined);
  let stopping: Promise<void> | null = null;

  async function closeOwn(): Promise<void> {
    metricsServer?.close();
    if (!overrides.db) await db.destroy();
  }

  return {
    config,
    db,
    storage,
    roles,
    logger,
    get fleet() {
      if (!fleet) throw new Error('the worker service is not started');
      return fleet;
    },
    done,
    async start() {
      setMediaToolConcurrency(config.MEDIA_TOOL_CONCURRENCY);
      await configureMediaSandbox(
        {
          mode: config.MEDIA_SANDBOX,
          fileSizeBytes: config.MEDIA_TOOL_FILE_MB * 1024 * 1024,
        },
        (why) =>
          logger.warn({ why }, "media tools run without the sandbox's network and user isolation (MEDIA_SANDBOX=auto): minimal environment and caps only"),
      );
      if (extras && roles.some((r) => r.kind === 'reconciler')) {
        // Bucket lifecycle (abort stale multipart uploads; OUTPUT_RETENTION_DAYS): applied by the
        // reconciler's fleet alone, so only its storage identity needs the bucket-admin actions.
        await storage
          .applyLifecycle(config.OUTPUT_RETENTION_DAYS)
          .then(
            (r) =>
              r.changed &&
              logger.info({ outputRetentionDays: config.OUTPUT_RETENTION_DAYS, abortIncompleteUploadsRule: r.abortRule }, 'bucket lifecycle rules applied'),
          )
          .catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'could not apply the bucket lifecycle rules'));
      }
      fleet = await createWorkerFleet(
        {
          config,
          db,
          storage,
          logger,
          metrics,
          ...(overrides.activityInterceptors ? { activityInterceptors: overrides.activityInterceptors } : {}),
          ...(overrides.extraActivities ? { extraActivities: overrides.extraActivities } : {}),
        },
        roles,
      );
      if (extras) {
        for (const line of describeRoutes(config)) logger.info(line);
        if (config.WORKER_METRICS_PORT !== null) {
          // METRICS_HOST (loopback unless set), not HOST: the image listens on all interfaces for the gateway.
          const f = fleet;
          const health = () => workerHealth({ workers: () => f.workers, stopping: () => stopping !== null });
          metricsServer = await serveWorkerMetrics(metrics, config.METRICS_HOST, config.WORKER_METRICS_PORT, overrides.sdkMetricsUrl, health);
          const { port } = metricsServer.address() as AddressInfo;
          logger.info({ port }, `metrics on http://${config.METRICS_HOST}:${port}/metrics`);
        }
      }
      logger.info(
        { roles: roles.map(roleName), ...(fleet.versioning ? { deployment: fleet.versioning.deploymentName, buildId: fleet.versioning.buildId } : {}) },
        'worker started',
      );
      fleet.run().then(
        async () => {
          await closeOwn();
          resolveDone();
        },
        async (err: unknown) => {
          await closeOwn().catch(() => undefined);
          rejectDone(err);
        },
      );
    },
    stop() {
      stopping ??= (async () => {
        if (!fleet) return closeOwn();
        await fleet.shutdown();
        await done;
      })();
      return stopping;
    },
  };
}
