// The gateway process: validated config, one db pool, one storage client, one lazily connecting
// Temporal client, the Express app on HOST:PORT, and a graceful shutdown on SIGTERM/SIGINT.
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:http';
import { pino } from 'pino';
import { Client, Connection } from '@temporalio/client';
import { loadConfig } from '../shared/config.js';
import { createDb } from '../db/index.js';
import { createStorage } from '../shared/storage.js';
import { createApp } from './app.js';
import { localRenderedModels } from '../shared/routing.js';
import { serveApiMetrics } from './metrics.js';
import { collectWhenIdle } from './idle-gc.js';

/** Log paths that may carry secrets; pino replaces them before anything is written. */
export const redactPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  '*.authorization',
  '*.headers.authorization',
  'config.DATABASE_URL',
  'config.S3_SECRET_KEY',
];

const SHUTDOWN_GRACE_MS = 10_000;

// Signals are caught from the first moment, so a SIGTERM during start-up still ends in an orderly
// exit (once start-up has finished) rather than the default kill.
let onSignal: ((signal: string) => void) | null = null;
let pendingSignal: string | null = null;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => (onSignal ? onSignal(signal) : (pendingSignal ??= signal)));
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = pino({ level: config.LOG_LEVEL, base: { service: 'api' }, redact: { paths: redactPaths, censor: '[redacted]' } });
  const local = localRenderedModels(config);
  if (config.NODE_ENV === 'production' && local.length > 0) {
    // Not an error (PROVIDERS_MODE=local or auto without a key is a valid choice), but clients are
    // paying for placeholders: say so once, loudly; job records carry provider: "local" too.
    logger.warn({ models: local }, `serving ${local.length} model(s) from the local renderer (no provider key set): ${local.join(', ')}`);
  }
  const db = createDb(config.DATABASE_URL, config.DATABASE_POOL_SIZE);
  const storage = createStorage(config);
  // Connection.lazy connects on first use; one connection and one client for the whole process,
  // created before the first request so there is no first-use race.
  const connection = Connection.lazy({ address: config.TEMPORAL_ADDRESS });
  const temporal = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
  const gateway = createApp({ config, db, storage, temporal, logger });

  const server = createServer(gateway.app);
  server.keepAliveTimeout = 65_000;
  collectWhenIdle(server, config.IDLE_GC_AFTER_MS);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.PORT, config.HOST, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  logger.info({ port: addr.port }, `listening on http://${host}:${addr.port}`);
  // Links to /media are built from PUBLIC_BASE_URL, never from a request's Host header.
  if (!config.PUBLIC_BASE_URL) {
    config.PUBLIC_BASE_URL = `http://${host}:${addr.port}`;
    logger.warn('PUBLIC_BASE_URL is not set: media links use the listening address');
  }
  const metricsServer = config.METRICS_ENABLED ? await serveApiMetrics(gateway.metrics, config.METRICS_HOST, config.API_METRICS_PORT) : null;
  if (metricsServer) {
    const m = metricsServer.address() as AddressInfo;
    logger.info({ port: m.port }, `metrics on http://${config.METRICS_HOST}:${m.port}/metrics`);
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
    force.unref();
    try {
      // Open event streams would hold the server open: end them (clients reconnect elsewhere).
      await gateway.closeStreams();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      metricsServer?.close();
      await gateway.close();
      await db.destroy();
      await connection.close();
      logger.info('stopped');
      process.exit(0);
    } catch (err) {
      logger.error({ err }, 'error during shutdown');
      process.exit(1);
    }
  };
  onSignal = (signal) => void shutdown(signal);
  if (pendingSignal) onSignal(pendingSignal);
}

main().catch((err: unknown) => {
  // Config errors name the variable, never its value; anything else is logged without secrets.
  process.stderr.write(`gateway failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
