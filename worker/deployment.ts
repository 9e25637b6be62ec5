// Worker Versioning: every fleet (workflows, io, fetch, each provider) polls as one Worker
// Deployment Version, named by the deployment (WORKER_DEPLOYMENT_NAME) and the build
// (WORKER_BUILD_ID). A pinned job runs to the end on the version that started it, its activities
// included (the server sends them to the same version's workers of the activity's queue), while new
// jobs go to the deployment's Current (or Ramping) Version. The operations below change that routing;
// the worker uses them at start (WORKER_DEPLOYMENT_PROMOTE) and while it runs (a drained build's
// workers stop by themselves: watchDrainage), and the admin CLI (`deployment …`) for rollouts,
// ramps, rollbacks and retiring a drained build. Together they make a rainbow deploy: a new build
// starts beside the running one, becomes current once its fleets poll every queue, and the old
// build's workers keep serving the jobs pinned to it until the server reports it drained.
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import protos, { type temporal } from '@temporalio/proto';
import type { WorkerDeploymentOptions } from '@temporalio/worker';
import type { Config } from '../shared/config.js';

type WorkflowService = temporal.api.workflowservice.v1.WorkflowService;
// A CommonJS package: its enums through the default export.
const { WorkerDeploymentVersionStatus: VersionStatus, VersionDrainageStatus: DrainageStatus, TaskQueueType } = protos.temporal.api.enums.v1;

/** Written by `npm run build` (scripts/build/build-id.ts): the content hash of the runtime code. */
const buildIdPath = fileURLToPath(new URL('../build-id', import.meta.url));

export interface Versioning {
  deploymentName: string;
  buildId: string;
  promote: Config['WORKER_DEPLOYMENT_PROMOTE'];
}

export class DeploymentError extends Error {
  override name = 'DeploymentError';
  constructor(
    message: string,
    readonly code: 'not_found' | 'conflict' | 'invalid',
  ) {
    super(message);
  }
}

/** This process's version, or null when versioning is off (no WORKER_DEPLOYMENT_NAME: tests' in-process fleets). */
export function workerVersioning(config: Config, readBuildId: () => string = () => readFileSync(buildIdPath, 'utf8').trim()): Versioning | null {
  if (!config.WORKER_DEPLOYMENT_NAME) return null;
  let buildId = config.WORKER_BUILD_ID;
  if (!buildId) {
    try {
      buildId = readBuildId();
    } catch {
      throw new DeploymentError('WORKER_BUILD_ID is not set and the build wrote no build-id file (run npm run build)', 'invalid');
    }
  }
  if (!/^[A-Za-z0-9._-]{1,255}$/.test(buildId)) throw new DeploymentError('WORKER_BUILD_ID: letters, digits, ".", "_" and "-" only', 'invalid');
  return { deploymentName: config.WORKER_DEPLOYMENT_NAME, buildId, promote: config.WORKER_DEPLOYMENT_PROMOTE };
}

/**
 * Options for every Worker of a versioned process. The default behaviour is PINNED; each workflow
 * type also declares its own (workflows/*.ts setWorkflowOptions), which wins.
 */
export function deploymentOptions(v: Versioning): WorkerDeploymentOptions {
  return { version: { deploymentName: v.deploymentName, buildId: v.buildId }, useWorkerVersioning: true, defaultVersioningBehavior: 'PINNED' };
}

export type VersionStatusName = 'inactive' | 'current' | 'ramping' | 'draining' | 'drained' | 'unspecified';

interface VersionSummary {
  buildId: string;
  status: VersionStatusName;
  createdAt: string | null;
}

export interface DeploymentState {
  name: string;
  /** null: unversioned workers take new work (a fresh deployment). */
  current: string | null;
  ramping: { buildId: string | null; percent: number } | null;
  versions: VersionSummary[];
}

interface VersionState {
  buildId: string;
  status: VersionStatusName;
  rampPercent: number;
  drainage: 'draining' | 'drained' | null;
  drainageCheckedAt: string | null;
  /** `name/workflow` or `name/activity`: the task queues this version's workers have polled. */
  taskQueues: string[];
}

const statusNames: Record<number, VersionStatusName> = {
  [VersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_INACTIVE]: 'inactive',
  [VersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_CURRENT]: 'current',
  [VersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_RAMPING]: 'ramping',
  [VersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINING]: 'draining',
  [VersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINED]: 'drained',
};

function iso(t: { seconds?: unknown; nanos?: number | null } | null | undefined): string | null {
  if (!t?.seconds) return null;
  return new Date(Number(t.seconds) * 1000 + Math.floor((t.nanos ?? 0) / 1e6)).toISOString();
}

const isNotFound = (err: unknown) => (err as { code?: number }).code === 5;

export function identity(role: string): string {
  return `${role}@${hostname()}/${process.pid}`;
}

/** The deployment's routing and versions; null when no worker of it has ever polled. */
export async function describeDeployment(svc: WorkflowService, namespace: string, name: string): Promise<DeploymentState | null> {
  let res;
  try {
    res = await svc.describeWorkerDeployment({ namespace, deploymentName: name });
  } catch (err) {
    if (isNotFound(err)) return null;
    throw err;
  }
  const info = res.workerDeploymentInfo;
  const routing = info?.routingConfig;
  const ramping = routing?.rampingDeploymentVersion?.buildId ?? null;
  const rampPercent = routing?.rampingVersionPercentage ?? 0;
  return {
    name,
    current: routing?.currentDeploymentVersion?.buildId || null,
    ramping: ramping || rampPercent > 0 ? { buildId: ramping || null, percent: rampPercent } : null,
    versions: (info?.versionSummaries ?? []).map((v) => ({
      buildId: v.deploymentVersion?.buildId ?? '',
      status: statusNames[v.status ?? 0] ?? 'unspecified',
      createdAt: iso(v.createTime),
    })),
  };
}

/** One version's routing status, drainage and task queues; null when it does not exist (never polled, or deleted). */
export async function describeVersion(svc: WorkflowService, namespace: string, name: string, buildId: string): Promise<VersionState | null> {
  let res;
  try {
    res = await svc.describeWorkerDeploymentVersion({ namespace, deploymentVersion: { deploymentName: name, buildId } });
  } catch (err) {
    if (isNotFound(err)) return null;
    throw err;
  }
  const info = res.workerDeploymentVersionInfo;
  const drainage = info?.drainageInfo?.status;
  return {
    buildId,
    status: statusNames[info?.status ?? 0] ?? 'unspecified',
    rampPercent: info?.rampPercentage ?? 0,
    drainage:
      drainage === DrainageStatus.VERSION_DRAINAGE_STATUS_DRAINING
        ? 'draining'
        : drainage === DrainageStatus.VERSION_DRAINAGE_STATUS_DRAINED
          ? 'drained'
          : null,
    drainageCheckedAt: iso(info?.drainageInfo?.lastCheckedTime),
    taskQueues: (info?.taskQueueInfos ?? [])
      .map(
        (q) =>
          `${q.name}/${q.type === TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW ? 'workflow' : q.type === TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY ? 'activity' : 'other'}`,
      )
      .sort(),
  };
}

/**
 * Workflows still running on the version (pinned to it; auto-upgrade ones move on by themselves).
 * From visibility, so a run that closed a moment ago may still count for a second.
 */
export async function runningOnVersion(svc: WorkflowService, namespace: string, name: string, buildId: string): Promise<number> {
  const res = await svc.countWorkflowExecutions({ namespace, query: `TemporalWorkerDeploymentVersion = '${name}:${buildId}' AND ExecutionStatus = 'Running'` });
  return Number(res.count ?? 0);
}

/**
 * The task queues the deployment's current version serves that `buildId` has no worker on yet. A
 * version missing one must not take new jobs: its workflows would schedule activities nobody of
 * its build polls (the server's own check skips queues that were idle for a while).
 */
async function missingTaskQueues(svc: WorkflowService, namespace: string, name: string, buildId: string): Promise<string[]> {
  const target = await describeVersion(svc, namespace, name, buildId);
  if (!target) throw new DeploymentError(`version ${buildId} of deployment ${name} does not exist: no worker of that build has polled yet`, 'not_found');
  const deployment = await describeDeployment(svc, namespace, name);
  const others = [deployment?.current, deployment?.ramping?.buildId].filter((b): b is string => !!b && b !== buildId);
  const missing = new Set<string>();
  for (const other of others) {
    const o = await describeVersion(svc, namespace, name, other);
    for (const q of o?.taskQueues ?? []) if (!target.taskQueues.includes(q)) missing.add(q);
  }
  return [...missing].sort();
}

/** Makes `buildId` the Current Version: new jobs start on it; jobs pinned elsewhere stay where they are. */
export async function setCurrentVersion(
  svc: WorkflowService,
  namespace: string,
  name: string,
  buildId: string,
  opts: { force?: boolean; identity: string },
): Promise<{ previous: string | null }> {
  const missing = await missingTaskQueues(svc, namespace, name, buildId);
  if (missing.length && !opts.force) {
    throw new DeploymentError(`version ${buildId} has no workers yet on ${missing.join(', ')}: deploy every fleet of the build first (or --force)`, 'conflict');
  }
  try {
    const res = await svc.setWorkerDeploymentCurrentVersion({
      namespace,
      deploymentName: name,
      buildId,
      identity: opts.identity,
      ignoreMissingTaskQueues: !!opts.force,
    });
    return { previous: res.previousDeploymentVersion?.buildId || null };
  } catch (err) {
    throw asDeploymentError(err);
  }
}

/** Sends `percent` of new jobs to `buildId` (0: no ramp), the rest to the Current Version. */
export async function setRampingVersion(
  svc: WorkflowService,
  namespace: string,
  name: string,
  buildId: string,
  percent: number,
  opts: { force?: boolean; identity: string },
): Promise<void> {
  if (!(percent >= 0 && percent <= 100)) throw new DeploymentError('the ramp percentage must be from 0 to 100', 'invalid');
  if (percent > 0) {
    const missing = await missingTaskQueues(svc, namespace, name, buildId);
    if (missing.length && !opts.force)
      throw new DeploymentError(
        `version ${buildId} has no workers yet on ${missing.join(', ')}: deploy every fleet of the build first (or --force)`,
        'conflict',
      );
  }
  try {
    await svc.setWorkerDeploymentRampingVersion({
      namespace,
      deploymentName: name,
      buildId: percent > 0 ? buildId : '',
      percentage: percent,
      identity: opts.identity,
      ignoreMissingTaskQueues: !!opts.force,
    });
  } catch (err) {
    throw asDeploymentError(err);
  }
}

/** Deletes a drained version (the server refuses while its workers still poll). */
export async function deleteVersion(svc: WorkflowService, namespace: string, name: string, buildId: string, identity: string): Promise<void> {
  try {
    await svc.deleteWorkerDeploymentVersion({ namespace, deploymentVersion: { deploymentName: name, buildId }, identity });
  } catch (err) {
    throw asDeploymentError(err);
  }
}

function asDeploymentError(err: unknown): Error {
  const code = (err as { code?: number }).code;
  const message = (err as Error).message?.replace(/^\d+ [A-Z_]+: /, '') ?? String(err);
  if (code === 5) return new DeploymentError(message, 'not_found');
  if (code === 9 || code === 6 || code === 10) return new DeploymentError(message, 'conflict');
  if (code === 3) return new DeploymentError(message, 'invalid');
  return err as Error;
}

/**
 * Before a release changes which builds have workers (a Helm upgrade or rollback, ops/helm
 * deployment-guard.yaml): the deployment must never be left with a Current Version whose workers
 * the release removes, or new jobs would wait for workers that never come. Passes when the current
 * build is among `keep`; else makes `target` (the release's current build) current, once it has a
 * worker on every task queue of the current one (waiting up to `waitMs` for them), an operator's
 * explicit promote that the promotion memory does not refuse; else refuses, changing nothing.
 */
export async function guardRelease(
  svc: WorkflowService,
  namespace: string,
  name: string,
  opts: { keep: string[]; target: string; waitMs: number; identity: string },
): Promise<{ current: string | null; promoted: boolean }> {
  const state = await describeDeployment(svc, namespace, name);
  if (!state?.current || opts.keep.includes(state.current)) return { current: state?.current ?? null, promoted: false };
  if (!opts.keep.includes(opts.target))
    throw new DeploymentError(`the release's current build ${opts.target} is not among its builds (${opts.keep.join(', ')})`, 'invalid');
  const deadline = Date.now() + opts.waitMs;
  let missing: string[] = [];
  for (;;) {
    try {
      missing = await missingTaskQueues(svc, namespace, name, opts.target);
    } catch (err) {
      if (!(err instanceof DeploymentError && err.code === 'not_found')) throw err;
      missing = ['(no worker of it has polled)'];
    }
    if (missing.length === 0 || Date.now() >= deadline) break;
    await new Promise((r) => setTimeout(r, 2_000));
  }
  if (missing.length > 0)
    throw new DeploymentError(
      `the release removes the workers of ${state.current}, the current version, and ${opts.target} has no workers on ${missing.join(', ')}: ` +
        `keep ${state.current} in the release's builds (current: false) until ${opts.target}'s workers run, then upgrade again`,
      'conflict',
    );
  await setCurrentVersion(svc, namespace, name, opts.target, { identity: opts.identity });
  return { current: opts.target, promoted: true };
}

/**
 * Whether the `newer` policy promotes this build, from the deployment's state and `everCurrent`
 * (the builds our own table recorded as current at least once, db/repos/deployment-builds.ts):
 * only a build that was never current — by our record, which survives the server deleting its
 * version and recreating it inactive with a fresh create time when a worker of it polls again; and
 * by the server's status (it moves a superseded version to draining, then drained) — registered no
 * earlier than the current one, and not while an operator ramps another build. So a restarted
 * worker of an old build never takes new jobs back, whatever the server recreated.
 */
export function newerDecision(
  deployment: DeploymentState,
  buildId: string,
  everCurrent: ReadonlySet<string> = new Set(),
): { promote: true } | { promote: false; reason: string } {
  const mine = deployment.versions.find((x) => x.buildId === buildId);
  if (!mine) return { promote: false, reason: 'not registered yet' };
  if (everCurrent.has(buildId))
    return {
      promote: false,
      reason: 'this build was the current version before (recorded in deployment_builds): an operator promotes it again (deployment promote) if that is wanted',
    };
  if (mine.status !== 'inactive')
    return {
      promote: false,
      reason: `this build was current before and is ${mine.status} now: an operator promotes it again (deployment promote) if that is wanted`,
    };
  const current = deployment.versions.find((x) => x.buildId === deployment.current);
  if (current?.createdAt && mine.createdAt && mine.createdAt < current.createdAt) {
    return { promote: false, reason: `this build registered before the current one (${deployment.current}): it is older, so it is not promoted` };
  }
  if (deployment.ramping?.buildId && deployment.ramping.buildId !== buildId)
    return { promote: false, reason: `an operator ramps ${deployment.ramping.buildId}` };
  return { promote: true };
}

/**
 * While a versioned worker runs: resolves once the server reports its build drained (no longer
 * current nor ramping, and no workflow pinned to it still open), checked every `intervalMs`, so
 * the process can stop by itself; resolves null when `signal` aborts first. A build that was never
 * current is inactive, not drained: its workers keep running until an operator decides.
 */
export async function watchDrainage(
  svc: WorkflowService,
  namespace: string,
  v: Versioning,
  intervalMs: number,
  log: { warn(o: object, m: string): void },
  signal: AbortSignal,
): Promise<VersionState | null> {
  while (!signal.aborted) {
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, intervalMs);
      signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
    });
    if (signal.aborted) break;
    try {
      const state = await describeVersion(svc, namespace, v.deploymentName, v.buildId);
      if (state && (state.status === 'drained' || (state.drainage === 'drained' && state.status !== 'current' && state.status !== 'ramping'))) return state;
    } catch (err) {
      log.warn({ deployment: v.deploymentName, buildId: v.buildId, err: (err as Error).message }, 'could not read the drainage of this build; retrying');
    }
  }
  return null;
}
