// The only place workers are assembled: one Temporal Worker per role (task queue), sharing one
// connection and one set of activity clients. Used by worker/main.ts and by tests.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker, type NativeConnection, type ActivityInterceptorsFactory, type WorkerOptions } from '@temporalio/worker';
import { Client } from '@temporalio/client';
import type { PayloadCodec } from '@temporalio/common';
import { connectClient as connectTemporal, connectNative } from '../shared/temporal-connection.js';
import type { Logger } from 'pino';
import type { Config } from '../shared/config.js';
import type { Database } from '../db/index.js';
import type { Storage } from '../shared/storage.js';
import { createActivities } from '../activities/index.js';
import { providerNames, taskQueues } from '../workflows/definitions.js';
import { parsePerProvider, roleName, type Role } from './roles.js';
import { createReconciler, type Reconciler } from './reconciler.js';
import { createUploadSweeper, type UploadSweeper } from './upload-sweeper.js';
import { createWebhookDispatcher, type WebhookDispatcher } from './webhook-dispatcher.js';
import { openCircuitsByWorkspace } from '../db/repos/webhooks.js';
import { circuitPolicy } from '../activities/webhooks.js';
import type { BacklogSource, WorkerMetrics } from './metrics.js';
import { sql } from 'kysely';
import protos from '@temporalio/proto';
import { tracing } from '../shared/tracing.js';
import { dataConverterOption, payloadCodecFrom } from '../codec/payload-codec.js';
import { describeDeployment, deploymentOptions, runningOnVersion, watchDrainage, workerVersioning, type Versioning } from './deployment.js';
import { runPromoter } from './promoter.js';
import { leaseDeployment } from './control-lease.js';
import { providerShutdownGraceMs } from '../activities/providers/call-timeouts.js';
import { createJobService, type JobService } from '../jobs/index.js';
import { circuitPolicy as providerCircuitPolicy, createProviderCircuits } from '../db/provider-circuits.js';
import { jobWorkflowPort } from '../workflows/client.js';
import { createRouteProber, type RouteProber } from './route-prober.js';
import { probedRoutes as probedRouteRows } from '../db/repos/route-probes.js';
import { slotUsage } from '../db/repos/route-slots.js';
import { SLOT_WAITER_FRESH_MS } from '../shared/route-slots.js';
import type { LiveProviderName } from '../shared/catalog.js';
import { workspaceQueues } from '../db/repos/queue.js';
import { RECENT_WINDOW_SECONDS } from './queue-metrics.js';

const workflowsPath = fileURLToPath(new URL('../workflows/index.js', import.meta.url));
/** Built by `npm run build` (scripts/bundle-workflows.ts); used when present so workers start fast. */
export const defaultBundlePath = fileURLToPath(new URL('../workflow-bundle.js', import.meta.url));

/**
 * The prebuilt bundle to load (its traced twin when tracing is on: workflow interceptors live inside
 * the bundle), or undefined to bundle the sources at start (tests, a build without bundles).
 */
export function workflowBundlePath(plain: string, traced: boolean): string | undefined {
  const path = traced ? plain.replace(/\.js$/, '.traced.js') : plain;
  return existsSync(path) ? path : undefined;
}

export interface WorkerFleet {
  roles: Role[];
  /** The Worker Deployment Version every worker of the fleet polls as; null: unversioned. */
  versioning: Versioning | null;
  workers: Worker[];
  reconciler: Reconciler | null;
  /** Removes pending direct uploads never completed (runs with the reconciler role). */
  uploadSweeper: UploadSweeper | null;
  /** Starts a delivery workflow for each webhook event (runs with the reconciler role). */
  webhookDispatcher: WebhookDispatcher | null;
  /** Asks the providers of this fleet's provider roles whether each route's model is still served. */
  routeProber: RouteProber | null;
  /** Resolves when every worker has stopped (after shutdown()). */
  run(): Promise<void>;
  shutdown(): Promise<void>;
}

export interface FleetDeps {
  config: Config;
  db: Database;
  storage: Storage;
  logger: Logger;
  metrics?: WorkerMetrics;
  connection?: NativeConnection;
  /** Activity interceptors for every worker that runs activities, local ones included (tests hold an activity with one). */
  activityInterceptors?: ActivityInterceptorsFactory[];
  /** The process's job service; built here (the fleet is where the worker process is composed) when not given. */
  jobs?: JobService;
  /** Activities a build adds beside the standard set of a role's queue (the rollout test's second build). */
  extraActivities?: Partial<Record<'io' | 'fetch' | 'provider', Record<string, (...args: never[]) => Promise<unknown>>>>;
}

export async function createWorkerFleet(deps: FleetDeps, roles: Role[]): Promise<WorkerFleet> {
  const { config } = deps;
  const connection = deps.connection ?? (await connectNative(config));
  const queues = taskQueues(config.TASK_QUEUE_PREFIX);
  const traced = tracing();
  // The reconciler role's Temporal client: its visibility calls, and the job service's starts and cancels.
  // One payload codec for the process's workers and client; a bad key stops the fleet here, at start.
  const codec = payloadCodecFrom(config);
  const client = roles.some((r) => r.kind === 'reconciler') ? await connectClient(config, traced, codec) : null;
  // The process's one job service: the activities' status moves and the reconciler's starts and settlements.
  const jobs =
    deps.jobs ??
    createJobService({
      db: deps.db,
      storage: deps.storage,
      // Which providers serve each model here: the pipelines' steps are quoted and created in the worker.
      config,
      logger: deps.logger,
      circuits: createProviderCircuits(deps.db, providerCircuitPolicy(config)),
      ...(client
        ? {
            workflows: jobWorkflowPort(client, {
              taskQueuePrefix: config.TASK_QUEUE_PREFIX,
              timeoutMs: 10_000,
              runTimeoutGraceMs: config.JOB_RUN_TIMEOUT_GRACE_MS,
              fairShare: config.FAIR_SHARE,
            }),
          }
        : {}),
    });
  const standard = createActivities({ db: deps.db, storage: deps.storage, jobs, config, metrics: deps.metrics?.activityMetrics, logger: deps.logger });
  const extra = deps.extraActivities ?? {};
  const activities = {
    ...standard,
    io: { ...standard.io, ...extra.io },
    fetch: { ...standard.fetch, ...extra.fetch },
    provider: { ...standard.provider, ...extra.provider },
  };
  const concurrency = parsePerProvider(config.PROVIDER_CONCURRENCY, 'PROVIDER_CONCURRENCY');
  const ratePerSecond = parsePerProvider(config.PROVIDER_RATE_PER_SECOND, 'PROVIDER_RATE_PER_SECOND');
  const versioning = workerVersioning(config);
  const common: Partial<WorkerOptions> = {
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    // Every workflow and activity payload is opened and sealed here when keys are configured.
    ...dataConverterOption(codec),
    shutdownGraceTime: config.WORKER_SHUTDOWN_GRACE_MS,
    ...(versioning ? { workerDeploymentOptions: deploymentOptions(versioning) } : {}),
  };
  // With tracing on, every activity (local ones too) continues the trace its workflow carries, and
  // the workflow's own spans leave the sandbox through a sink to this process's exporter.
  const activityInterceptors = [...(deps.activityInterceptors ?? []), ...(traced ? [traced.activityInterceptor] : [])];
  const activityCommon: Partial<WorkerOptions> = activityInterceptors.length > 0 ? { ...common, interceptors: { activity: activityInterceptors } } : common;

  const activityWorker = (taskQueue: string, acts: object, concurrent: number, perSecond?: number, graceMs?: number) =>
    Worker.create({
      ...activityCommon,
      ...(graceMs !== undefined ? { shutdownGraceTime: graceMs } : {}),
      taskQueue,
      activities: acts,
      maxConcurrentActivityTaskExecutions: concurrent,
      ...(perSecond ? { maxTaskQueueActivitiesPerSecond: perSecond } : {}),
    });

  const workers: Worker[] = [];
  let reconciler: Reconciler | null = null;
  let uploadSweeper: UploadSweeper | null = null;
  let webhookDispatcher: WebhookDispatcher | null = null;
  const probedProviders = roles.flatMap((r) => (r.kind === 'provider' && r.provider !== 'local' ? [r.provider as LiveProviderName] : []));
  const routeProber =
    probedProviders.length > 0 ? createRouteProber({ config, db: deps.db, providers: probedProviders, logger: deps.logger, metrics: deps.metrics }) : null;
  for (const role of roles) {
    switch (role.kind) {
      case 'workflows': {
        const bundlePath = workflowBundlePath(config.WORKFLOW_BUNDLE_PATH ?? defaultBundlePath, traced !== null);
        workers.push(
          await Worker.create({
            ...activityCommon,
            ...(traced
              ? {
                  interceptors: { ...activityCommon.interceptors, ...(bundlePath ? {} : { workflowModules: [traced.workflowInterceptorModule] }) },
                  sinks: traced.workflowSinks(),
                }
              : {}),
            taskQueue: queues.workflows,
            ...(bundlePath ? { workflowBundle: { codePath: bundlePath } } : { workflowsPath }),
            maxConcurrentWorkflowTaskExecutions: Math.min(config.WORKFLOW_TASK_CONCURRENCY, 100),
            maxCachedWorkflows: 1000,
            // The pipeline's Postgres steps run here as local activities (workflows/pipeline.ts);
            // this worker takes no activity tasks from the server.
            activities: activities.io,
            enableNonLocalActivities: false,
            maxConcurrentLocalActivityExecutions: config.IO_ACTIVITY_CONCURRENCY,
          }),
        );
        break;
      }
      case 'io':
        workers.push(await activityWorker(queues.io, activities.io, config.IO_ACTIVITY_CONCURRENCY));
        break;
      case 'fetch':
        workers.push(await activityWorker(queues.fetch, activities.fetch, config.FETCH_ACTIVITY_CONCURRENCY));
        break;
      case 'webhooks':
        workers.push(await activityWorker(queues.webhooks, activities.webhooks, config.WEBHOOK_ACTIVITY_CONCURRENCY));
        break;
      case 'provider':
        workers.push(
          // A provider fleet never takes more concurrent requests than its limit, and on shutdown
          // waits for its longest paid call to answer rather than abort it (the retry would pay again).
          await activityWorker(
            queues.provider(role.provider),
            activities.provider,
            concurrency[role.provider] ?? (role.provider === 'local' ? 2 : 8),
            ratePerSecond[role.provider],
            providerShutdownGraceMs([role.provider], config.WORKER_SHUTDOWN_GRACE_MS),
          ),
        );
        break;
      case 'reconciler': {
        if (!client) throw new Error('the reconciler role has no Temporal client');
        reconciler = createReconciler({ config, db: deps.db, jobs, client, logger: deps.logger, metrics: deps.metrics });
        uploadSweeper = createUploadSweeper({ config, db: deps.db, storage: deps.storage, logger: deps.logger });
        webhookDispatcher = createWebhookDispatcher({ config, db: deps.db, client, logger: deps.logger });
        deps.metrics?.setBacklogSource(createBacklogSource(deps.db, client, config));
        break;
      }
    }
  }
  deps.logger.info(
    {
      roles: roles.map(roleName),
      taskQueues: workers.map((w) => w.options.taskQueue),
      ...(versioning ? { deployment: versioning.deploymentName, buildId: versioning.buildId } : {}),
    },
    'worker roles',
  );

  let running: Promise<void> | null = null;
  const stopPromoting = new AbortController();
  let promoting: Promise<unknown> = Promise.resolve();
  let watching: Promise<unknown> = Promise.resolve();
  let stopping: Promise<void> | null = null;
  // Once, whoever asks first: a signal, the caller, or the drain watcher.
  const shutdown = () =>
    (stopping ??= (async () => {
      stopPromoting.abort();
      await promoting;
      await watching;
      await reconciler?.stop();
      await uploadSweeper?.stop();
      await webhookDispatcher?.stop();
      await routeProber?.stop();
      for (const w of workers) {
        if (w.getState() === 'RUNNING') w.shutdown();
      }
      await running;
    })());
  return {
    roles,
    versioning,
    workers,
    reconciler,
    uploadSweeper,
    webhookDispatcher,
    routeProber,
    run() {
      reconciler?.start();
      uploadSweeper?.start();
      webhookDispatcher?.start();
      routeProber?.start();
      if (!running && versioning && workers.length > 0) {
        // The version exists once these workers have polled; promoting it runs beside them.
        // One process of the build promotes it (a lease per build, worker/promoter.ts).
        promoting = runPromoter(
          connection.workflowService,
          config.TEMPORAL_NAMESPACE,
          versioning,
          { db: deps.db, logger: deps.logger, deployment: leaseDeployment(config) },
          stopPromoting.signal,
        ).catch((err: unknown) => deps.logger.warn({ err: (err as Error).message }, 'the build promoter stopped'));
        // Rainbow deploys: a superseded build serves the jobs pinned to it, then its workers stop
        // by themselves once the server reports it drained (no orchestrator needs to know when).
        if (config.WORKER_DRAIN_CHECK_MS > 0) {
          watching = watchDrainage(
            connection.workflowService,
            config.TEMPORAL_NAMESPACE,
            versioning,
            config.WORKER_DRAIN_CHECK_MS,
            deps.logger,
            stopPromoting.signal,
          ).then((drained) => {
            if (!drained) return;
            deps.logger.info(
              { deployment: versioning.deploymentName, buildId: versioning.buildId, status: drained.status, drainageCheckedAt: drained.drainageCheckedAt },
              'this build is drained: stopping its workers',
            );
            // Not awaited here: shutdown() awaits this watcher.
            setImmediate(() => void shutdown());
          });
        }
      }
      running ??= Promise.all(workers.map((w) => w.run())).then(() => undefined);
      return running;
    },
    shutdown,
  };
}

/**
 * The fleet-wide gauges, read on scrape by the reconciler role's process: the webhook outbox from
 * Postgres, and each task queue's approximate backlog from the Temporal server.
 */
function createBacklogSource(db: Database, client: Client, config: Config): BacklogSource {
  const queues = taskQueues(config.TASK_QUEUE_PREFIX);
  return {
    async webhooks() {
      const row = await sql<{ pending: number; age: number | null }>`
        select count(*)::int as pending, extract(epoch from now() - min(created_at))::float8 as age
        from webhook_deliveries where delivered_at is null and failed_at is null and superseded_at is null`.execute(db);
      const r = row.rows[0];
      return { pending: r?.pending ?? 0, oldestAgeSeconds: r?.age ?? 0 };
    },
    workspaceQueues: () => workspaceQueues(db, RECENT_WINDOW_SECONDS),
    openWebhookCircuits: () => {
      const policy = circuitPolicy(config);
      return openCircuitsByWorkspace(db, new Date(Date.now() - policy.cooldownMs - policy.trialTimeoutMs - 60_000));
    },
    async taskQueues() {
      const names = [
        { name: queues.workflows, type: protos.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW },
        ...[queues.io, queues.fetch, queues.webhooks, ...providerNames.map((p) => queues.provider(p))].map((name) => ({
          name,
          type: protos.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
        })),
      ];
      return Promise.all(
        names.map(async ({ name, type }) => {
          const res = await client.workflowService.describeTaskQueue({
            namespace: config.TEMPORAL_NAMESPACE,
            taskQueue: { name },
            taskQueueType: type,
            reportStats: true,
          });
          const stats = res.stats;
          const age = stats?.approximateBacklogAge;
          return {
            taskQueue: name,
            backlog: Number(stats?.approximateBacklogCount ?? 0),
            ageSeconds: age ? Number(age.seconds ?? 0) + (age.nanos ?? 0) / 1e9 : 0,
          };
        }),
      );
    },
    async versionsWithoutPollers() {
      const name = config.WORKER_DEPLOYMENT_NAME;
      if (!name) return [];
      const svc = client.workflowService;
      const deployment = await describeDeployment(svc, config.TEMPORAL_NAMESPACE, name);
      if (!deployment) return [];
      // One describe for the workflows queue: the server lists the pollers of every version of it.
      const res = await svc.describeTaskQueue({
        namespace: config.TEMPORAL_NAMESPACE,
        taskQueue: { name: queues.workflows },
        taskQueueType: protos.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        reportPollers: true,
      });
      const freshSince = Date.now() - config.VERSION_POLLERS_FRESH_MS;
      const polled = new Set(
        (res.pollers ?? [])
          .filter((p) => p.deploymentOptions?.deploymentName === name && Number(p.lastAccessTime?.seconds ?? 0) * 1000 >= freshSince)
          .map((p) => p.deploymentOptions!.buildId ?? ''),
      );
      const out: { deployment: string; buildId: string; running: number }[] = [];
      for (const v of deployment.versions) {
        if (v.status === 'drained' || polled.has(v.buildId)) continue;
        const running = await runningOnVersion(svc, config.TEMPORAL_NAMESPACE, name, v.buildId);
        if (running > 0) out.push({ deployment: name, buildId: v.buildId, running });
      }
      return out;
    },
    routeProbes: async () => (await probedRouteRows(db)).map((r) => ({ provider: r.provider, model: r.model, available: r.status === 'available' })),
    routeSlots: () => slotUsage(db, SLOT_WAITER_FRESH_MS),
  };
}

/** A Temporal client of the process (the reconciler role's), traced when tracing runs. */
async function connectClient(config: Config, traced: ReturnType<typeof tracing>, codec: PayloadCodec | null): Promise<Client> {
  const interceptors = traced?.clientInterceptors();
  return new Client({
    connection: await connectTemporal(config),
    namespace: config.TEMPORAL_NAMESPACE,
    ...dataConverterOption(codec),
    ...(interceptors ? { interceptors: { workflow: interceptors } } : {}),
  });
}
