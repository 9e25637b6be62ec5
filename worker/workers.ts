// The only place workers are assembled: one Temporal Worker per role (task queue), sharing one
// connection and one set of activity clients. Used by worker/main.ts and by tests. The fleet's run
// and shutdown are in worker/fleet-lifecycle.ts.
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
import { taskQueues, type ProviderName } from '../workflows/definitions.js';
import { parsePerProvider, roleName, type Role } from './roles.js';
import { createReconciler, type Reconciler } from './reconciler.js';
import { createUploadSweeper, type UploadSweeper } from './upload-sweeper.js';
import { createWebhookDispatcher, type WebhookDispatcher } from './webhook-dispatcher.js';
import type { BacklogSource, WorkerMetrics } from './metrics.js';
import { tracing } from '../shared/tracing.js';
import { dataConverterOption, payloadCodecFrom } from '../codec/payload-codec.js';
import { deploymentOptions, workerVersioning, type Versioning } from './deployment.js';
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
import { fleetLifecycle } from './fleet-lifecycle.js';

const workflowsPath = fileURLToPath(new URL('../workflows/index.js', import.meta.url));
/**
 * Slots of a provider fleet's waits queue per process: a wait holds a sleeping loop and, every few
 * seconds, one status call, so a process carries many (each costs a few KB between polls).
 */
const PROVIDER_WAIT_CONCURRENCY = 1000;
/** Built by `npm run build` (scripts/build/bundle-workflows.ts); used when present so workers start fast. */
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
  const traced = tracing();
  // The Temporal client of the reconciler role (its visibility calls, the job service's starts and
  // cancels) and of the workflows role (the provider cancels a job's run hands off, started on the
  // current build). One payload codec for the process's workers and client; a bad key stops the fleet here, at start.
  const codec = payloadCodecFrom(config);
  const client = roles.some((r) => r.kind === 'reconciler' || r.kind === 'workflows') ? await connectClient(config, traced, codec, deps.metrics) : null;
  // The process's one job service: the activities' status moves and the reconciler's starts and settlements.
  const jobs = deps.jobs ?? createFleetJobService(deps, connection, client);
  const activities = fleetActivities(deps, jobs, client);
  const concurrency = parsePerProvider(config.PROVIDER_CONCURRENCY, 'PROVIDER_CONCURRENCY');
  const ratePerSecond = parsePerProvider(config.PROVIDER_RATE_PER_SECOND, 'PROVIDER_RATE_PER_SECOND');
  const versioning = workerVersioning(config);
  const activityCommon = activityWorkerOptions(deps, connection, codec, versioning, traced);
  const kit: RoleKit = { deps, jobs, client, traced, queues: taskQueues(config.TASK_QUEUE_PREFIX), activityCommon, activities, concurrency, ratePerSecond };
  const probedProviders = roles.flatMap((r) => (r.kind === 'provider' && r.provider !== 'local' ? [r.provider as LiveProviderName] : []));
  const routeProber =
    probedProviders.length > 0 ? createRouteProber({ config, db: deps.db, providers: probedProviders, logger: deps.logger, metrics: deps.metrics }) : null;
  const { workers, reconcilerLoops } = await createRoleWorkers(kit, roles);
  const control = createControl(deps, connection.workflowService, versioning, reconcilerLoops, routeProber, probedProviders);
  deps.logger.info(
    {
      roles: roles.map(roleName),
      taskQueues: workers.map((w) => w.options.taskQueue),
      ...(versioning ? { deployment: versioning.deploymentName, buildId: versioning.buildId } : {}),
    },
    'worker roles',
  );
  const loops = {
    reconciler: reconcilerLoops?.reconciler ?? null,
    uploadSweeper: reconcilerLoops?.uploadSweeper ?? null,
    webhookDispatcher: reconcilerLoops?.webhookDispatcher ?? null,
    routeProber,
  };
  const lifecycle = fleetLifecycle({ config, db: deps.db, logger: deps.logger, connection, client, versioning, workers, control, ...loops });
  return { roles, versioning, workers, ...loops, control, ...lifecycle };
}

/** The process's job service when the caller gives none: its activities and reconciler share it. */
function createFleetJobService(deps: FleetDeps, connection: NativeConnection, client: Client | null): JobService {
  const { config } = deps;
  return createJobService({
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
}

/** The standard activities of each queue, with the ones a build adds (`deps.extraActivities`) beside them. */
function fleetActivities(deps: FleetDeps, jobs: JobService, client: Client | null) {
  const standard = createActivities({
    db: deps.db,
    storage: deps.storage,
    jobs,
    config: deps.config,
    metrics: deps.metrics?.activityMetrics,
    logger: deps.logger,
    temporal: client,
  });
  const extra = deps.extraActivities ?? {};
  return {
    ...standard,
    io: { ...standard.io, ...extra.io },
    fetch: { ...standard.fetch, ...extra.fetch },
    provider: { ...standard.provider, ...extra.provider },
  };
}

/** The options every worker shares: connection, namespace, payload codec, shutdown grace, build version and activity interceptors. */
function activityWorkerOptions(
  deps: FleetDeps,
  connection: NativeConnection,
  codec: ReturnType<typeof payloadCodecFrom>,
  versioning: Versioning | null,
  traced: ReturnType<typeof tracing>,
): Partial<WorkerOptions> {
  const { config } = deps;
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
  return activityInterceptors.length > 0 ? { ...common, interceptors: { activity: activityInterceptors } } : common;
}

/** What the role workers and loops are made of: the fleet's dependencies, services, shared options and provider limits. */
interface RoleKit {
  deps: FleetDeps;
  jobs: JobService;
  client: Client | null;
  traced: ReturnType<typeof tracing>;
  queues: ReturnType<typeof taskQueues>;
  activityCommon: Partial<WorkerOptions>;
  activities: ReturnType<typeof fleetActivities>;
  concurrency: ReturnType<typeof parsePerProvider>;
  ratePerSecond: ReturnType<typeof parsePerProvider>;
}

/** The loops the reconciler role runs under the control fleet's leases, and the source of the fleet gauges. */
interface ReconcilerLoops {
  reconciler: Reconciler;
  uploadSweeper: UploadSweeper;
  webhookDispatcher: WebhookDispatcher;
  backlogSource: BacklogSource;
}

/** Creates each role's Temporal workers in the order of `roles`, and the reconciler role's loops when it is among them. */
async function createRoleWorkers(kit: RoleKit, roles: Role[]): Promise<{ workers: Worker[]; reconcilerLoops: ReconcilerLoops | null }> {
  const { config } = kit.deps;
  const { queues, activities, activityCommon } = kit;
  const workers: Worker[] = [];
  let reconcilerLoops: ReconcilerLoops | null = null;
  for (const role of roles) {
    switch (role.kind) {
      case 'workflows':
        workers.push(await createWorkflowsWorker(kit));
        break;
      case 'io':
        workers.push(await createActivityWorker(activityCommon, queues.io, activities.io, config.IO_ACTIVITY_CONCURRENCY));
        break;
      case 'fetch':
        workers.push(await createActivityWorker(activityCommon, queues.fetch, activities.fetch, config.FETCH_ACTIVITY_CONCURRENCY));
        break;
      case 'webhooks':
        workers.push(await createActivityWorker(activityCommon, queues.webhooks, activities.webhooks, config.WEBHOOK_ACTIVITY_CONCURRENCY));
        break;
      case 'provider':
        workers.push(...(await createProviderWorkers(kit, role.provider)));
        break;
      case 'reconciler':
        reconcilerLoops = createReconcilerLoops(kit);
        break;
    }
  }
  return { workers, reconcilerLoops };
}

/** A worker of activities on one task queue, with the shared options, its concurrency and optional rate and shutdown grace. */
function createActivityWorker(common: Partial<WorkerOptions>, taskQueue: string, acts: object, concurrent: number, perSecond?: number, graceMs?: number) {
  return Worker.create({
    ...common,
    ...(graceMs !== undefined ? { shutdownGraceTime: graceMs } : {}),
    taskQueue,
    activities: acts,
    maxConcurrentActivityTaskExecutions: concurrent,
    ...(perSecond ? { maxTaskQueueActivitiesPerSecond: perSecond } : {}),
  });
}

/** The workflows role's worker: the workflow code (a prebuilt bundle when present) and the pipeline's local activities. */
function createWorkflowsWorker(kit: RoleKit): Promise<Worker> {
  const { config } = kit.deps;
  const { traced, activityCommon } = kit;
  const bundlePath = workflowBundlePath(config.WORKFLOW_BUNDLE_PATH ?? defaultBundlePath, traced !== null);
  return Worker.create({
    ...activityCommon,
    ...(traced
      ? {
          interceptors: { ...activityCommon.interceptors, ...(bundlePath ? {} : { workflowModules: [traced.workflowInterceptorModule] }) },
          sinks: traced.workflowSinks(),
        }
      : {}),
    taskQueue: kit.queues.workflows,
    ...(bundlePath ? { workflowBundle: { codePath: bundlePath } } : { workflowsPath }),
    maxConcurrentWorkflowTaskExecutions: Math.min(config.WORKFLOW_TASK_CONCURRENCY, 100),
    maxCachedWorkflows: 1000,
    // The pipeline's Postgres steps run here as local activities (workflows/job-generation.ts);
    // this worker takes no activity tasks from the server.
    activities: kit.activities.io,
    enableNonLocalActivities: false,
    maxConcurrentLocalActivityExecutions: config.IO_ACTIVITY_CONCURRENCY,
  });
}

/** A provider role's two workers: its calls, then its jobs' waits between news. */
async function createProviderWorkers(kit: RoleKit, provider: ProviderName): Promise<Worker[]> {
  const { config } = kit.deps;
  const { queues, activities, activityCommon } = kit;
  // A provider fleet never takes more concurrent requests than its limit, and on shutdown
  // waits for its longest paid call to answer rather than abort it (the retry would pay again).
  const calls = await createActivityWorker(
    activityCommon,
    queues.provider(provider),
    activities.provider,
    kit.concurrency[provider] ?? (provider === 'local' ? 2 : 8),
    kit.ratePerSecond[provider],
    providerShutdownGraceMs([provider], config.WORKER_SHUTDOWN_GRACE_MS),
  );
  // Its jobs' waits between news (activities/jobs/await.ts): a sleeping poll loop each, so
  // many of them, apart from the slots of its calls.
  const waits = await createActivityWorker(
    activityCommon,
    queues.providerWaits(provider),
    { awaitProvider: activities.provider.awaitProvider },
    PROVIDER_WAIT_CONCURRENCY,
    undefined,
    providerShutdownGraceMs([provider], config.WORKER_SHUTDOWN_GRACE_MS),
  );
  return [calls, waits];
}

/** The reconciler role's loops, all on the process's Temporal client. */
function createReconcilerLoops(kit: RoleKit): ReconcilerLoops {
  const { config, db, storage, logger, metrics } = kit.deps;
  const { client, jobs } = kit;
  if (!client) throw new Error('the reconciler role has no Temporal client');
  return {
    reconciler: createReconciler({ config, db, jobs, client, logger, metrics }),
    uploadSweeper: createUploadSweeper({ config, db, storage, logger }),
    webhookDispatcher: createWebhookDispatcher({ config, db, client, logger }),
    backlogSource: createBacklogSource(db, client, config),
  };
}

/**
 * The control fleet with the loops that must run once per deployment registered, each run by the
 * holder of its lease (worker/control-fleet.ts); null when this process has none.
 */
function createControl(
  deps: FleetDeps,
  workflowService: NativeConnection['workflowService'],
  versioning: Versioning | null,
  reconcilerLoops: ReconcilerLoops | null,
  routeProber: RouteProber | null,
  probedProviders: LiveProviderName[],
): ControlLeases | null {
  if (!reconcilerLoops && !routeProber) return null;
  const control = createControlFleet({ config: deps.config, db: deps.db, logger: deps.logger, metrics: deps.metrics, versioning, workflowService });
  if (reconcilerLoops) {
    control.register('reconciler', reconcilerLoops.reconciler);
    control.register('webhook-dispatch', reconcilerLoops.webhookDispatcher);
    control.register('upload-sweep', reconcilerLoops.uploadSweeper);
    control.register('fleet-gauges', gaugeLoop(deps.metrics, reconcilerLoops.backlogSource));
  }
  if (routeProber) control.register(routeProbeLoop(probedProviders), routeProber);
  return control;
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
