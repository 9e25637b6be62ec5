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
import { taskQueues } from '../workflows/definitions.js';
import { parsePerProvider, roleName, type Role } from './roles.js';
import { createReconciler, type Reconciler } from './reconciler.js';
import { createUploadSweeper, type UploadSweeper } from './upload-sweeper.js';
import { createWebhookDispatcher, type WebhookDispatcher } from './webhook-dispatcher.js';
import type { BacklogSource, WorkerMetrics } from './metrics.js';
import { tracing } from '../shared/tracing.js';
import { dataConverterOption, payloadCodecFrom } from '../codec/payload-codec.js';
import { deploymentOptions, watchDrainage, workerVersioning, type Versioning } from './deployment.js';
import { runPromoter } from './promoter.js';
import { leaseDeployment } from './control-lease.js';
import { providerShutdownGraceMs } from '../activities/providers/call-timeouts.js';
import { createJobService, type JobService } from '../jobs/index.js';
import { circuitPolicy as providerCircuitPolicy, createProviderCircuits } from '../db/provider-circuits.js';
import { jobWorkflowPort } from '../workflows/client.js';
import { createRouteProber, type RouteProber } from './route-prober.js';
import type { LiveProviderName } from '../shared/catalog.js';
import { createBacklogSource } from './backlog-source.js';
import { reuseFollowerWaker, slotGrantWaker } from './slot-grants.js';
import { createControlFleet, gaugeLoop, routeProbeLoop, startAttemptCounter } from './control-fleet.js';
import type { ControlLeases } from './control-lease.js';

const workflowsPath = fileURLToPath(new URL('../workflows/index.js', import.meta.url));
/** Built by `npm run build` (scripts/bundle-workflows.ts); used when present so workers start fast. */
/**
 * Slots of a provider fleet's waits queue per process: a wait holds a sleeping loop and, every few
 * seconds, one status call, so a process carries many (each costs a few KB between polls).
 */
const PROVIDER_WAIT_CONCURRENCY = 1000;
const defaultBundlePath = fileURLToPath(new URL('../workflow-bundle.js', import.meta.url));

/**
 * The prebuilt bundle to load (its traced twin when tracing is on: workflow interceptors live inside
 * the bundle), or undefined to bundle the sources at start (tests, a build without bundles).
 */
function workflowBundlePath(plain: string, traced: boolean): string | undefined {
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
  /** The leases under which the loops above run (one process per deployment runs each); null when it has none. */
  control: ControlLeases | null;
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
  // The Temporal client of the reconciler role (its visibility calls, the job service's starts and
  // cancels) and of the workflows role (the provider cancels a job's run hands off, started on the
  // current build). One payload codec for the process's workers and client; a bad key stops the fleet here, at start.
  const codec = payloadCodecFrom(config);
  const client = roles.some((r) => r.kind === 'reconciler' || r.kind === 'workflows') ? await connectClient(config, traced, codec, deps.metrics) : null;
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
      // A route slot released while jobs wait is granted to the next; its workflow is woken from here.
      wakeSlotGrantee: slotGrantWaker(connection, config.TEMPORAL_NAMESPACE),
      // A job that ended wakes the identical jobs waiting for it (reuse).
      wakeReuseFollower: reuseFollowerWaker(connection, config.TEMPORAL_NAMESPACE),
      ...(client
        ? {
            workflows: jobWorkflowPort(client, {
              taskQueuePrefix: config.TASK_QUEUE_PREFIX,
              timeoutMs: 10_000,
              runTimeoutGraceMs: config.JOB_RUN_TIMEOUT_GRACE_MS,
              startWaitMs: config.JOB_START_WAIT_MS,
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
  let backlogSource: BacklogSource | null = null;
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
          // Its jobs' waits between news (activities/jobs/await.ts): a sleeping poll loop each, so
          // many of them, apart from the slots of its calls.
          await activityWorker(
            queues.providerWaits(role.provider),
            { awaitProvider: activities.provider.awaitProvider },
            PROVIDER_WAIT_CONCURRENCY,
            undefined,
            providerShutdownGraceMs([role.provider], config.WORKER_SHUTDOWN_GRACE_MS),
          ),
        );
        break;
      case 'reconciler': {
        if (!client) throw new Error('the reconciler role has no Temporal client');
        reconciler = createReconciler({ config, db: deps.db, jobs, client, logger: deps.logger, metrics: deps.metrics });
        uploadSweeper = createUploadSweeper({ config, db: deps.db, storage: deps.storage, logger: deps.logger });
        webhookDispatcher = createWebhookDispatcher({ config, db: deps.db, client, logger: deps.logger });
        backlogSource = createBacklogSource(deps.db, client, config);
        break;
      }
    }
  }
  // The loops that must run once per deployment run in the holder of their lease (worker/control-fleet.ts).
  const control =
    reconciler || routeProber
      ? createControlFleet({ config, db: deps.db, logger: deps.logger, metrics: deps.metrics, versioning, workflowService: connection.workflowService })
      : null;
  if (control && reconciler && uploadSweeper && webhookDispatcher && backlogSource) {
    control.register('reconciler', reconciler);
    control.register('webhook-dispatch', webhookDispatcher);
    control.register('upload-sweep', uploadSweeper);
    control.register('fleet-gauges', gaugeLoop(deps.metrics, backlogSource));
  }
  if (control && routeProber) control.register(routeProbeLoop(probedProviders), routeProber);
  deps.logger.info(
    {
      roles: roles.map(roleName),
      taskQueues: workers.map((w) => w.options.taskQueue),
      ...(versioning ? { deployment: versioning.deploymentName, buildId: versioning.buildId } : {}),
    },
    'worker roles',
  );

  let running: Promise<void> | null = null;
  // A process with control loops and no Temporal worker (`--roles reconciler`) runs until shutdown.
  let loopsStopped: () => void = () => undefined;
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
      // Stops the loops this process holds and hands their leases over at once.
      await control?.stop();
      await reconciler?.stop();
      await uploadSweeper?.stop();
      await webhookDispatcher?.stop();
      await routeProber?.stop();
      for (const w of workers) {
        if (w.getState() === 'RUNNING') w.shutdown();
      }
      loopsStopped();
      await running;
      await client?.connection.close();
    })());
  return {
    roles,
    versioning,
    workers,
    reconciler,
    uploadSweeper,
    webhookDispatcher,
    routeProber,
    control,
    run() {
      control?.start();
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
      running ??=
        workers.length === 0 && control
          ? new Promise<void>((resolve) => {
              // Its timers are unref'd: this holds the process open until shutdown.
              const alive = setInterval(() => undefined, 60_000);
              loopsStopped = () => (clearInterval(alive), resolve());
            })
          : Promise.all(workers.map((w) => w.run())).then(() => undefined);
      return running;
    },
    shutdown,
  };
}

/** A Temporal client of the process (the reconciler role's), traced when tracing runs. */
async function connectClient(config: Config, traced: ReturnType<typeof tracing>, codec: PayloadCodec | null, metrics?: WorkerMetrics): Promise<Client> {
  const interceptors = [...(metrics ? [startAttemptCounter(metrics)] : []), ...(traced?.clientInterceptors() ?? [])];
  return new Client({
    connection: await connectTemporal(config),
    namespace: config.TEMPORAL_NAMESPACE,
    ...dataConverterOption(codec),
    ...(interceptors.length > 0 ? { interceptors: { workflow: interceptors } } : {}),
  });
}
