// The gateway as one service object (createGateway(config, overrides) → start / stop), assembled
// from config: db pool, storage client, one lazily connecting Temporal client, the Express app and
// its HTTP server. api/server.ts only handles signals; tests and benchmarks build the same object
// (overrides inject a shared db, a Temporal client, or leave the process extras out).
import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import { pino, type DestinationStream, type Logger } from 'pino';
import { Client } from '@temporalio/client';
import { lazyClientConnection } from '../shared/temporal-connection.js';
import type { Config } from '../shared/config.js';
import { createDb, dbTimeouts, type Database } from '../db/index.js';
import { createStorage, type Storage } from '../shared/storage.js';
import { createApp, type App } from './app.js';
import { serveApiMetrics, type ApiMetrics } from './metrics.js';
import { collectWhenIdle, IDLE_COLLECT_AFTER_MS } from './idle-gc.js';
import { limitConnectionsPerClient, serverTimeouts } from './connection-limits.js';
import { tracing, tracingLogOptions } from '../shared/tracing.js';
import { codecDataConverter } from '../codec/payload-codec.js';

/** Log paths that may carry secrets; pino replaces them before anything is written. */
const redactPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  '*.authorization',
  '*.headers.authorization',
  'config.DATABASE_URL',
  'config.S3_SECRET_KEY',
  'config.S3_MEDIA_PREFIX_SECRET',
  'config.AWS_SECRET_ACCESS_KEY',
  'config.AWS_SESSION_TOKEN',
];

interface GatewayOverrides {
  /** A pool the caller owns (kept open at stop); else the gateway opens and closes its own. */
  db?: Database;
  storage?: Storage;
  /** A Temporal client the caller owns; else one lazy connection for the process. */
  temporal?: Client;
  logger?: Logger;
  /** Where the gateway's own logger writes (else stdout): tests read its lines. */
  logDestination?: DestinationStream;
  metrics?: ApiMetrics;
  /** The metrics port (METRICS_ENABLED) and the idle-time collection: on for the process, off in tests. */
  processExtras?: boolean;
  /** The clock of budget periods (default the system clock): tests move it past a period's end. */
  clock?: () => Date;
}

export interface Gateway {
  readonly config: Config;
  readonly db: Database;
  readonly storage: Storage;
  readonly temporal: Client;
  readonly logger: Logger;
  /** The Express app and its metrics (after start). */
  readonly app: App;
  /** http://host:port once started. */
  readonly baseUrl: string;
  start(): Promise<void>;
  /** Ends event streams, stops accepting, waits up to `graceMs` (GATEWAY_SHUTDOWN_GRACE_MS) for requests in flight, closes what it opened. */
  stop(opts?: { graceMs?: number }): Promise<void>;
}

export function createGateway(config: Config, overrides: GatewayOverrides = {}): Gateway {
  const logger =
    overrides.logger ??
    pino(
      { level: config.LOG_LEVEL, base: { service: 'api' }, redact: { paths: redactPaths, censor: '[redacted]' }, ...tracingLogOptions() },
      overrides.logDestination,
    );
  const db = overrides.db ?? createDb(config.DATABASE_URL, config.DATABASE_POOL_SIZE, {}, dbTimeouts(config));
  const storage = overrides.storage ?? createStorage(config);
  // Connection.lazy connects on first use; one connection and one client for the whole process,
  // created before the first request so there is no first-use race.
  const connection = overrides.temporal ? null : lazyClientConnection(config);
  // With tracing on, a workflow start carries the request's trace context into the workflow.
  const interceptors = tracing()?.clientInterceptors();
  const temporal =
    overrides.temporal ??
    new Client({
      connection: connection!,
      namespace: config.TEMPORAL_NAMESPACE,
      // Payloads (job input, prompts, URLs) leave the process sealed when keys are configured.
      ...codecDataConverter(config),
      ...(interceptors ? { interceptors: { workflow: interceptors } } : {}),
    });
  const extras = overrides.processExtras ?? true;
  const server: Server = createServer(serverTimeouts(config));
  // One ceiling on sockets for every client together: past it Node drops new connections at once,
  // before any of them costs a request (event streams have their own, smaller caps).
  server.maxConnections = config.GATEWAY_MAX_CONNECTIONS;
  // And one per client address, so that one client cannot take them all. The peers trusted as
  // proxies are known once the app (its `trust proxy`) exists; nothing is served before that.
  let isProxy: (address: string) => boolean = () => false;
  limitConnectionsPerClient(server, config.GATEWAY_MAX_CONNECTIONS_PER_CLIENT, (address) => isProxy(address));
  let app: App | null = null;
  let metricsServer: Server | null = null;
  let stopIdleGc: () => void = () => undefined;
  let baseUrl = '';

  return {
    config,
    db,
    storage,
    temporal,
    logger,
    get app() {
      if (!app) throw new Error('the gateway is not started');
      return app;
    },
    get baseUrl() {
      return baseUrl;
    },
    async start() {
      // Listen first: media links use the listening address when no PUBLIC_BASE_URL is set.
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(config.PORT, config.HOST, () => {
          server.off('error', reject);
          resolve();
        });
      });
      const addr = server.address() as AddressInfo;
      const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
      baseUrl = `http://${host}:${addr.port}`;
      logger.info({ port: addr.port }, `listening on ${baseUrl}`);
      // Links to /media are built from PUBLIC_BASE_URL, never from a request's Host header.
      let appConfig = config;
      if (!config.PUBLIC_BASE_URL) {
        appConfig = { ...config, PUBLIC_BASE_URL: baseUrl };
        if (extras) logger.warn('PUBLIC_BASE_URL is not set: media links use the listening address');
      }
      app = createApp({
        config: appConfig,
        db,
        storage,
        temporal,
        logger,
        ...(overrides.metrics ? { metrics: overrides.metrics } : {}),
        ...(overrides.clock ? { clock: overrides.clock } : {}),
      });
      const trust = app.app.get('trust proxy fn') as (address: string, hop: number) => boolean;
      isProxy = (address) => trust(address, 0);
      server.on('request', app.app);
      if (!extras) return;
      stopIdleGc = collectWhenIdle(server, IDLE_COLLECT_AFTER_MS);
      if (config.METRICS_ENABLED) {
        metricsServer = await serveApiMetrics(app.metrics, config.METRICS_HOST, config.API_METRICS_PORT);
        const m = metricsServer.address() as AddressInfo;
        logger.info({ port: m.port }, `metrics on http://${config.METRICS_HOST}:${m.port}/metrics`);
      }
    },
    async stop({ graceMs = config.GATEWAY_SHUTDOWN_GRACE_MS } = {}) {
      const force = setTimeout(() => server.closeAllConnections(), graceMs);
      force.unref();
      try {
        // Open event streams would hold the server open: end them (clients reconnect elsewhere).
        await app?.closeStreams();
        await new Promise<void>((resolve) => {
          if (!server.listening) return resolve();
          server.close(() => resolve());
          server.closeIdleConnections();
          if (graceMs <= 0) server.closeAllConnections();
        });
      } finally {
        clearTimeout(force);
      }
      stopIdleGc();
      metricsServer?.close();
      await app?.close();
      if (!overrides.db) await db.destroy();
      await connection?.close();
    },
  };
}
