// createApp(deps): the Express gateway. Stateless: everything shared between replicas (keys,
// rate-limit counters, credits, jobs) lives in Postgres; jobs run in Temporal.
import express, { type Express } from 'express';
import { createDb, type Database } from '../db/index.js';
import type { AppDeps } from './deps.js';
import { errorMiddleware, methodNotAllowed, notFoundRoute, optionsRoutes } from './errors.js';
import { requestContext, securityHeaders } from './request-context.js';
import { createApiMetrics, type ApiMetrics } from './metrics.js';
import { openCircuits } from '../db/repos/provider-circuits.js';
import { createAuth, type Auth } from './auth.js';
import { createConsoleSessions } from './console-session.js';
import { createConsoleRouter, storageOrigins } from './routes/console.js';
import { createHealthRouter } from './routes/health.js';
import { createDiscoveryRouter } from './routes/discovery.js';
import { createUploadsRouter } from './routes/uploads.js';
import { createJobsRouter } from './routes/jobs/router.js';
import { createJobService, type JobService } from '../jobs/index.js';
import { jobWorkflowPort } from '../workflows/client.js';
import { createJobListsRouter } from './routes/job-lists.js';
import { createModelsRouter } from './routes/models.js';
import { createQueueRouter } from './routes/queue.js';
import { createRetentionRouter } from './routes/retention.js';
import { createAuditRouter } from './routes/audit.js';
import { createWebhookDeliveriesRouter } from './routes/webhook-deliveries.js';
import { createWebhookEndpointsRouter } from './routes/webhook-endpoints.js';
import { createUsageRouter } from './routes/usage.js';
import { createBudgetsRouter } from './routes/budgets.js';
import { createBalanceRouter } from './routes/balance.js';
import { createApiKeysRouter } from './routes/api-keys.js';
import { createTimelineRouter } from './routes/timeline.js';
import { createPipelinesRouter } from './routes/pipelines/router.js';
import { createBatchesRouter } from './routes/batches/router.js';
import { createBulkActionsRouter } from './routes/bulk-actions.js';
import { createEventsRouter } from './routes/events.js';
import { createWorkspaceEventsRouter } from './routes/workspace-events.js';
import { createJobEventHub, type JobEventHub } from './job-events.js';
import { readPipelineView } from './pipeline-events.js';
import { createStreamRegistry, type StreamRegistry } from './stream-limits.js';
import { allOperations, createOpenApiRouter } from './openapi.js';
import { refuseNulInUrl } from './body.js';
import { createMediaRouter } from './routes/media.js';
import { createDocsRouter } from './routes/docs.js';
import { scopeRequest } from './last-resort.js';

export interface App {
  app: Express;
  metrics: ApiMetrics;
  /** The live job and pipeline events feeding the event streams (one LISTEN connection for the process). */
  jobEvents: JobEventHub;
  /** The open event streams, by key and workspace (their caps). */
  streams: StreamRegistry;
  /** Ends every open event stream (at shutdown, before the server closes: they would hold it open). */
  closeStreams(): Promise<void>;
  /** Stops background timers (key cache listener, last-used flush) and the event streams. */
  close(): Promise<void>;
}

/** The gateway's dependencies with its own filled in (metrics, job service, limiter pool): what the routers receive. */
type GatewayDeps = AppDeps & { metrics: ApiMetrics; jobs: JobService; limiterDb: Database };

/** What the app's middleware is built from, made once by createApp and shared by the routers that need it. */
interface GatewayParts {
  deps: GatewayDeps;
  auth: Auth;
  sessions: ReturnType<typeof createConsoleSessions>;
  jobEvents: JobEventHub;
  streams: StreamRegistry;
}

export function createApp(deps: AppDeps): App {
  const metrics = deps.metrics ?? createApiMetrics({ circuits: () => openCircuits(deps.db) });
  // Its own small pool that fails fast: a slow or flooded database refuses quickly (503) instead
  // of queueing every tenant's requests behind one another.
  const ownLimiterDb = deps.limiterDb ? null : createLimiterDb(deps.config.DATABASE_URL);
  const jobs = deps.jobs ?? createGatewayJobService(deps);
  const full = { ...deps, metrics, jobs, limiterDb: deps.limiterDb ?? ownLimiterDb! };
  const { config } = deps;
  const streams = createStreamRegistry({
    perKey: config.SSE_MAX_STREAMS_PER_KEY,
    perWorkspace: config.SSE_MAX_STREAMS_PER_WORKSPACE,
    total: config.SSE_MAX_STREAMS,
  });
  const sessions = createConsoleSessions(deps.db);
  const auth = createGatewayAuth(full, sessions, streams);
  const jobEvents = createJobEventHub({
    databaseUrl: deps.config.DATABASE_URL,
    db: deps.db,
    logger: deps.logger,
    readPipeline: (id) => readPipelineView(deps.db, deps.storage, id),
  });
  const app = createExpressApp({ deps: full, auth, sessions, jobEvents, streams });

  return {
    app,
    metrics,
    jobEvents,
    streams,
    closeStreams: () => jobEvents.close(),
    async close() {
      await jobEvents.close();
      await auth.close();
      await ownLimiterDb?.destroy();
    },
  };
}

/** The gateway's one job service, over its Temporal client: its routes quote, create, start and cancel jobs through it. */
function createGatewayJobService(deps: AppDeps): JobService {
  return createJobService({
    db: deps.db,
    storage: deps.storage,
    config: deps.config,
    logger: deps.logger,
    ...(deps.clock ? { clock: deps.clock } : {}),
    workflows: jobWorkflowPort(deps.temporal, {
      taskQueuePrefix: deps.config.TASK_QUEUE_PREFIX,
      timeoutMs: deps.config.WORKFLOW_START_TIMEOUT_MS,
      runTimeoutGraceMs: deps.config.JOB_RUN_TIMEOUT_GRACE_MS,
      startWaitMs: deps.config.JOB_START_WAIT_MS,
      fairShare: deps.config.FAIR_SHARE,
    }),
  });
}

/** The API key check, which also accepts a console session and ends the event streams a revoked key holds. */
function createGatewayAuth(deps: GatewayDeps, sessions: ReturnType<typeof createConsoleSessions>, streams: StreamRegistry): Auth {
  return createAuth({
    ...deps,
    sessionKeyOf: (req) => sessions.sessionKeyOf(req),
    onKeyRevoked: (keyId) => {
      const closed = streams.closeKey(keyId);
      if (closed > 0) deps.logger.info({ apiKeyId: keyId, closed }, 'closed the event streams of a revoked key');
    },
    onLiveKeys: (ids) => {
      const closed = streams.retainKeys(ids);
      if (closed > 0) deps.logger.info({ closed }, 'closed event streams whose key was revoked while the key listener was down');
    },
  });
}

/** The Express app: its settings, then its middleware in the order a request meets it, the error handlers last. */
function createExpressApp(parts: GatewayParts): Express {
  const app = express();
  app.disable('x-powered-by');
  // Off unless configured: then req.ip is the client a trusted load balancer names in X-Forwarded-For.
  app.set('trust proxy', parts.deps.config.TRUST_PROXY);
  app.set('etag', false);
  mountOpenRoutes(app, parts);
  mountV1Routes(app, parts);
  app.use(methodNotAllowed(allOperations()));
  app.use(notFoundRoute);
  app.use(errorMiddleware(parts.deps.logger));
  return app;
}

/** The request's context and headers, and the routes that need no API key: health, the API's description, media, the console. */
function mountOpenRoutes(app: Express, { deps, auth, sessions }: GatewayParts): void {
  app.use(scopeRequest);
  app.use(requestContext(deps));
  app.use(securityHeaders);
  app.use(refuseNulInUrl);
  // Only an OPTIONS request is matched against every endpoint's path here: the others skip the table.
  const options = optionsRoutes(allOperations());
  app.use((req, res, next) => (req.method === 'OPTIONS' ? options(req, res, next) : next()));
  app.use(createHealthRouter(deps));
  app.use(createOpenApiRouter(deps));
  app.use('/docs', createDocsRouter());
  app.use(createMediaRouter(deps));
  app.use(sessions.router((raw) => auth.verifyKey(raw)));
  app.use('/console', createConsoleRouter(storageOrigins(deps.config)));
}

/** The API proper: everything under /v1 is authenticated first; rate-limit classes are applied per route. */
function mountV1Routes(app: Express, { deps, auth, jobEvents, streams }: GatewayParts): void {
  app.use('/v1', auth.middleware);
  app.use(createDiscoveryRouter(deps, auth));
  app.use(createUploadsRouter(deps, auth));
  app.use(createJobsRouter(deps, auth));
  app.use(createJobListsRouter(deps, auth));
  app.use(createPipelinesRouter(deps, auth));
  app.use(createBatchesRouter(deps, auth));
  app.use(createBulkActionsRouter(deps, auth));
  app.use(createModelsRouter(deps, auth));
  app.use(createQueueRouter(deps, auth));
  app.use(createRetentionRouter(deps, auth));
  app.use(createAuditRouter(deps, auth));
  app.use(createWebhookDeliveriesRouter(deps, auth));
  app.use(createWebhookEndpointsRouter(deps, auth));
  app.use(createUsageRouter(deps, auth));
  app.use(createBudgetsRouter(deps, auth));
  app.use(createBalanceRouter(deps, auth));
  app.use(createApiKeysRouter(deps, auth));
  app.use(createTimelineRouter(deps, auth));
  app.use(createEventsRouter(deps, auth, jobEvents, streams));
  app.use(createWorkspaceEventsRouter({ deps, hub: jobEvents, streams }, auth));
}

const LIMITER_POOL_SIZE = 4;

/**
 * The rate limiter's pool: a few connections, kept open once made (a new one costs a TLS and SCRAM
 * handshake, seconds on a CPU-starved host, while the lease itself is one short statement), and
 * two seconds to connect or to run a lease before the request is refused with 503.
 */
function createLimiterDb(databaseUrl: string): Database {
  return createDb(databaseUrl, LIMITER_POOL_SIZE, { connectionTimeoutMillis: 2_000, statement_timeout: 2_000, query_timeout: 3_000, idleTimeoutMillis: 0 });
}
