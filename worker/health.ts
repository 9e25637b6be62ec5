// A worker's liveness and readiness, answered on its metrics port (WORKER_METRICS_PORT) beside
// /metrics, for Kubernetes' probes. The answer itself proves the event loop turns; beyond that:
// - /healthz (liveness): no Temporal worker of the process has failed (a failed worker ends the
//   process soon after, but a restart should not wait on that). A worker that is stopping, draining
//   or waiting on an unreachable Temporal server is alive: killing it would cut the paid calls it
//   is letting finish, and a new process would wait on the same server.
// - /readyz (readiness): the process has started and every Temporal worker polls (RUNNING), and it
//   is not shutting down. A rollout waits on it before it stops the next old pod.
// Neither asks Postgres or Temporal: a dependency's blip must not restart or unready every pod at once.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { State } from '@temporalio/worker';

export interface WorkerHealth {
  /** The event loop answers and no worker has failed. */
  live: boolean;
  /** Started, every worker polling, not shutting down. */
  ready: boolean;
  /** Each Temporal worker's task queue and SDK state (a process with control loops only has none). */
  workers: { taskQueue: string; state: State }[];
}

/** What the health of a process is read from: its workers (null before the fleet exists) and whether it is stopping. */
export interface HealthSource {
  workers(): { options: { taskQueue: string }; getState(): State }[] | null;
  stopping(): boolean;
}

export function workerHealth(source: HealthSource): WorkerHealth {
  const ws = source.workers();
  const workers = (ws ?? []).map((w) => ({ taskQueue: w.options.taskQueue, state: w.getState() }));
  const live = workers.every((w) => w.state !== 'FAILED');
  const ready = ws !== null && live && !source.stopping() && workers.every((w) => w.state === 'RUNNING');
  return { live, ready, workers };
}

/** Answers /healthz and /readyz (200 or 503, with the workers' states); false for any other path. */
export function answerHealth(req: IncomingMessage, res: ServerResponse, health: () => WorkerHealth): boolean {
  const path = req.url?.split('?')[0];
  if (path !== '/healthz' && path !== '/readyz') return false;
  const h = health();
  const ok = path === '/healthz' ? h.live : h.ready;
  const status = path === '/healthz' ? (ok ? 'ok' : 'failed') : ok ? 'ready' : 'not_ready';
  res.writeHead(ok ? 200 : 503, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
  res.end(JSON.stringify({ status, workers: h.workers }));
  return true;
}
