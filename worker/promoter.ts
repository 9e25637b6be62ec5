// The promoter: the loop that makes a new build the deployment's Current Version once its fleets
// poll every queue (WORKER_DEPLOYMENT_PROMOTE), with a memory of its own. Which builds were ever
// current is kept in Postgres (deployment_builds), written whenever the promoter sees or makes a
// current build, so a build that was current once never promotes itself again — not after the
// server deleted its version and recreated it, inactive and with a fresh create time, because a
// worker of it polled again. Only an operator's `deployment promote` (a rollback) makes it current.
import type { temporal } from '@temporalio/proto';
import type { Logger } from 'pino';
import type { Database } from '../db/index.js';
import { everCurrentBuilds, recordCurrentBuild } from '../db/repos/deployment-builds.js';
import { createControlLeases } from './control-lease.js';
import { describeDeployment, identity, newerDecision, setCurrentVersion, type Versioning } from './deployment.js';

type WorkflowService = temporal.api.workflowservice.v1.WorkflowService;

/** The promoter's memory of current builds (db/repos/deployment-builds.ts over the process's pool). */
interface BuildMemory {
  everCurrent(): Promise<Set<string>>;
  recordCurrent(buildId: string): Promise<void>;
}

function buildMemory(db: Database, deploymentName: string): BuildMemory {
  return {
    everCurrent: () => everCurrentBuilds(db, deploymentName),
    recordCurrent: (buildId) => recordCurrentBuild(db, deploymentName, buildId),
  };
}

/** How long a promoter's lease lasts unrenewed: another process of the build takes over within 4/3 of it. */
const PROMOTER_LEASE_TTL_MS = 15_000;

/**
 * Runs the promoter in one process of the build, not in every one: the processes of a build compete
 * for the lease `build-promotion:<build id>` (worker/control-lease.ts, `deployment` as the other
 * control loops key it), and its holder runs promoteAtStart; if the holder dies or stalls, another
 * takes the lease over and runs it again (it is idempotent). Resolves once `signal` aborts and the
 * lease is released.
 */
export async function runPromoter(
  svc: WorkflowService,
  namespace: string,
  v: Versioning,
  deps: { db: Database; logger: Logger; deployment: string; ttlMs?: number },
  signal: AbortSignal,
): Promise<void> {
  if (v.promote === 'never' || signal.aborted) return;
  const memory = buildMemory(deps.db, v.deploymentName);
  let outcome: Promise<unknown> = Promise.resolve();
  const leases = createControlLeases({
    db: deps.db,
    deployment: deps.deployment,
    buildId: v.buildId,
    ttlMs: deps.ttlMs ?? PROMOTER_LEASE_TTL_MS,
    logger: deps.logger,
  });
  leases.register(`build-promotion:${v.buildId}`, {
    start(lease) {
      outcome = promoteAtStart(svc, namespace, v, memory, deps.logger, AbortSignal.any([lease.signal, signal])).catch((err: unknown) =>
        deps.logger.warn({ err: (err as Error).message }, 'could not compare this build with the current version of the deployment'),
      );
    },
    stop: () => outcome.then(() => undefined),
  });
  leases.start();
  await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
  await leases.stop();
}

/**
 * At worker start: once this process's version is registered (its first poll), make it Current
 * when the policy says so: `newer` (the default: rainbow deploys) when it is a build that was
 * never current and is newer than the current one (newerDecision, with the memory), `first` only
 * when the deployment has no Current Version yet (a fresh deployment, or one that only ever ran
 * unversioned workers), `always` every time (`npm run dev`, which replaces every process at once),
 * `never` leaves routing to the operator. Retries until the version has every task queue the
 * Current one has (a build's other fleets may start later), or until `signal` aborts. Every current
 * build it sees or makes is recorded.
 */
async function promoteAtStart(
  svc: WorkflowService,
  namespace: string,
  v: Versioning,
  memory: BuildMemory,
  log: { info(o: object, m: string): void; warn(o: object, m: string): void },
  signal: AbortSignal,
): Promise<'promoted' | 'already-current' | 'left' | 'aborted'> {
  if (v.promote === 'never') return 'left';
  const who = identity('mediagen-worker');
  let delay = 250;
  let lastReason = '';
  let recorded: Set<string> | null = null;
  while (!signal.aborted) {
    try {
      recorded ??= await memory.everCurrent();
      const deployment = await describeDeployment(svc, namespace, v.deploymentName);
      if (deployment?.current && !recorded.has(deployment.current)) {
        await memory.recordCurrent(deployment.current);
        recorded.add(deployment.current);
      }
      // The version's own status may say so before the routing does (another process of the build promoted it).
      if (deployment?.current === v.buildId || deployment?.versions.some((x) => x.buildId === v.buildId && x.status === 'current')) {
        if (!recorded.has(v.buildId)) await memory.recordCurrent(v.buildId);
        return 'already-current';
      }
      if (deployment && deployment.current !== null && v.promote === 'first') {
        log.info(
          { deployment: v.deploymentName, buildId: v.buildId, current: deployment.current },
          'this build is not the current version: new jobs go to the current one until an operator promotes this build',
        );
        return 'left';
      }
      const decision = deployment && v.promote === 'newer' ? newerDecision(deployment, v.buildId, recorded) : null;
      if (decision && !decision.promote && decision.reason !== 'not registered yet') {
        log.info(
          { deployment: v.deploymentName, buildId: v.buildId, current: deployment!.current, reason: decision.reason },
          'this build is not made the current version',
        );
        return 'left';
      }
      if (deployment?.versions.some((x) => x.buildId === v.buildId)) {
        const { previous } = await setCurrentVersion(svc, namespace, v.deploymentName, v.buildId, { identity: who });
        // Should this process die before the record, the next promoter pass of any build sees this
        // one current and records it (above), before it could decide anything.
        await memory.recordCurrent(v.buildId);
        log.info({ deployment: v.deploymentName, buildId: v.buildId, previous }, 'this build is now the current version');
        return 'promoted';
      }
      lastReason = 'waiting for the version to be registered';
    } catch (err) {
      const reason = (err as Error).message;
      if (reason !== lastReason) log.warn({ deployment: v.deploymentName, buildId: v.buildId, reason }, 'not the current version yet; retrying');
      lastReason = reason;
    }
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, delay);
      signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
    });
    delay = Math.min(delay * 2, 5_000);
  }
  return 'aborted';
}
