// Worker process entry: `npm run worker -- --roles workflows,io,provider:local` (or WORKER_ROLES);
// no roles runs all of them. SIGTERM/SIGINT: stop polling, let in-flight activities finish within
// WORKER_SHUTDOWN_GRACE_MS, exit 0.
import { Runtime, makeTelemetryFilterString } from '@temporalio/worker';
import { pino } from 'pino';
import { loadConfig } from '../shared/config.js';
import { createDb } from '../db/index.js';
import { createStorage } from '../shared/storage.js';
import { parseRoles, roleName } from './roles.js';
import { createWorkerFleet } from './workers.js';
import type { AddressInfo } from 'node:net';
import { createWorkerMetrics, serveWorkerMetrics } from './metrics.js';
import { describeRoutes } from '../shared/routing.js';

function rolesFromArgs(argv: string[]): string | undefined {
  const i = argv.indexOf('--roles');
  if (i >= 0) return argv[i + 1];
  return argv.find((a) => a.startsWith('--roles='))?.slice('--roles='.length);
}

async function main() {
  const config = loadConfig();
  const logger = pino({ level: config.LOG_LEVEL, base: { service: 'worker' } });
  const roles = parseRoles(rolesFromArgs(process.argv.slice(2)) ?? config.WORKER_ROLES);

  const metrics = createWorkerMetrics();
  let sdkMetricsUrl: string | undefined;
  if (config.WORKER_METRICS_PORT !== null) {
    // The SDK core serves its own Prometheus endpoint; ours relays it next to our series.
    const { createServer } = await import('node:net');
    const sdkPort = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    sdkMetricsUrl = `http://127.0.0.1:${sdkPort}/metrics`;
    Runtime.install({
      logger: undefined,
      telemetryOptions: {
        logging: { filter: makeTelemetryFilterString({ core: 'WARN' }) },
        metrics: { prometheus: { bindAddress: `127.0.0.1:${sdkPort}` } },
      },
    });
  }

  const db = createDb(config.DATABASE_URL, config.DATABASE_POOL_SIZE);
  const storage = createStorage(config);
  // Bucket lifecycle (abort stale multipart uploads; OUTPUT_RETENTION_DAYS): idempotent, so every worker applies it.
  await storage
    .applyLifecycle(config.OUTPUT_RETENTION_DAYS)
    .then((r) => r.changed && logger.info({ outputRetentionDays: config.OUTPUT_RETENTION_DAYS, abortIncompleteUploadsRule: r.abortRule }, 'bucket lifecycle rules applied'))
    .catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'could not apply the bucket lifecycle rules'));
  const fleet = await createWorkerFleet({ config, db, storage, logger, metrics }, roles);
  for (const line of describeRoutes(config)) logger.info(line);
  const metricsServer = config.WORKER_METRICS_PORT !== null ? await serveWorkerMetrics(metrics, config.HOST, config.WORKER_METRICS_PORT, sdkMetricsUrl) : null;
  if (metricsServer) {
    const { port } = metricsServer.address() as AddressInfo;
    logger.info({ port }, `metrics on http://${config.HOST}:${port}/metrics`);
  }

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: no new tasks, finishing in-flight ones');
    void fleet.shutdown();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  logger.info({ roles: roles.map(roleName) }, 'worker started');
  await fleet.run();
  metricsServer?.close();
  await db.destroy();
  logger.info('worker stopped');
}

main().then(
  () => process.exit(0),
  (err) => {
    // Config errors name variables, never values.
    console.error(`worker failed: ${(err as Error).message}`);
    process.exit(1);
  },
);
