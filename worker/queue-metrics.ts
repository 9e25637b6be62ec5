// Per-workspace queue gauges, read on scrape from Postgres by the holder of the control fleet's
// gauge lease (one answer for the fleet): jobs queued (created, not yet submitted to a provider) and running
// (submitted, not finished), the age of the oldest queued job, and the recent waits (create →
// submit, last 15 minutes). Workspaces are unbounded, series are not: each gauge has a series for
// at most TOP_WORKSPACES workspaces by queued jobs plus TOP_WORKSPACES by oldest queued job (so a
// starved workspace with few jobs is still named), and one `workspace_id="other"` series that folds
// the rest together (sums; for ages and waits, the largest).
import { Gauge, type Registry } from 'prom-client';
import type { WorkspaceQueue } from '../db/repos/queue.js';

/** How many workspaces each ranking (queued jobs, oldest queued job) names. */
export const TOP_WORKSPACES = 10;
/** The label of the workspaces folded together. */
export const OTHER_WORKSPACES = 'other';
/** The window of the recent waits and submits. */
export const RECENT_WINDOW_SECONDS = 15 * 60;

/**
 * The workspaces to name: the top `top` by queued jobs and the top `top` by oldest queued job
 * (ties by id, so the set does not flap between scrapes); the rest folded into one `other` entry
 * (absent when there is no rest).
 */
export function boundWorkspaces(rows: WorkspaceQueue[], top = TOP_WORKSPACES): WorkspaceQueue[] {
  const byId = (a: WorkspaceQueue, b: WorkspaceQueue) => (a.workspaceId < b.workspaceId ? -1 : 1);
  const named = new Set<string>();
  for (const r of [...rows].sort((a, b) => b.queued - a.queued || byId(a, b)).slice(0, top)) if (r.queued > 0) named.add(r.workspaceId);
  for (const r of [...rows].sort((a, b) => b.oldestQueuedSeconds - a.oldestQueuedSeconds || byId(a, b)).slice(0, top)) {
    if (r.queued > 0) named.add(r.workspaceId);
  }
  // Workspaces with nothing queued are named only while the labels have room (most have none queued).
  for (const r of [...rows].sort((a, b) => b.running + b.submittedRecently - (a.running + a.submittedRecently) || byId(a, b))) {
    if (named.size >= top) break;
    named.add(r.workspaceId);
  }
  const rest = rows.filter((r) => !named.has(r.workspaceId));
  const out = rows.filter((r) => named.has(r.workspaceId));
  if (rest.length === 0) return out;
  const sum = (f: (r: WorkspaceQueue) => number) => rest.reduce((a, r) => a + f(r), 0);
  const max = (f: (r: WorkspaceQueue) => number) => Math.max(...rest.map(f));
  out.push({
    workspaceId: OTHER_WORKSPACES,
    queued: sum((r) => r.queued),
    running: sum((r) => r.running),
    oldestQueuedSeconds: max((r) => r.oldestQueuedSeconds),
    submittedRecently: sum((r) => r.submittedRecently),
    waitP50Seconds: max((r) => r.waitP50Seconds),
    waitP90Seconds: max((r) => r.waitP90Seconds),
  });
  return out;
}

/** Registers the per-workspace gauges on `registry`; `read` answers the workspaces (null: not the gauge lease's holder, no series). */
export function registerQueueMetrics(registry: Registry, read: () => Promise<WorkspaceQueue[]> | null): void {
  // The registry starts every metric's collect at once, before any read answers: the gauges of
  // one scrape share the read in flight, and the next scrape reads anew.
  let inFlight: Promise<WorkspaceQueue[] | null> | null = null;
  const rows = (): Promise<WorkspaceQueue[] | null> => {
    if (!inFlight) {
      const pending = read();
      // No source (not the gauge lease's holder): no series. A failed read keeps the last ones.
      const current = pending ? pending.then((r) => boundWorkspaces(r)).catch(() => null) : Promise.resolve([]);
      inFlight = current;
      void current.finally(() => {
        if (inFlight === current) inFlight = null;
      });
    }
    return inFlight;
  };
  const gauge = (name: string, help: string, value: (r: WorkspaceQueue) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['workspace_id'] as const,
      registers: [registry],
      async collect() {
        const rs = await rows();
        if (!rs) return;
        this.reset();
        for (const r of rs) this.set({ workspace_id: r.workspaceId }, value(r));
      },
    });
  gauge(
    'mediagen_workspace_jobs_queued',
    `Jobs created and not yet submitted to their provider, by workspace (the top ${TOP_WORKSPACES} by queued jobs and by oldest queued job; the rest as workspace_id="other")`,
    (r) => r.queued,
  );
  gauge(
    'mediagen_workspace_jobs_running',
    'Jobs submitted to their provider and not finished, by workspace (same workspaces as mediagen_workspace_jobs_queued)',
    (r) => r.running,
  );
  gauge(
    'mediagen_workspace_queue_oldest_seconds',
    "Age of the workspace's oldest job not yet submitted to its provider, 0 when none (other: the largest of the rest)",
    (r) => r.oldestQueuedSeconds,
  );
  gauge(
    'mediagen_workspace_jobs_submitted_recent',
    `Jobs of the workspace submitted to their provider in the last ${RECENT_WINDOW_SECONDS / 60} minutes`,
    (r) => r.submittedRecently,
  );
  new Gauge({
    name: 'mediagen_workspace_queue_wait_seconds',
    help: `Queue wait (create to provider submit) of the workspace's jobs submitted in the last ${RECENT_WINDOW_SECONDS / 60} minutes, as quantiles 0.5 and 0.9 (other: the largest of the rest); absent for a workspace with none submitted`,
    labelNames: ['workspace_id', 'quantile'] as const,
    registers: [registry],
    async collect() {
      const rs = await rows();
      if (!rs) return;
      this.reset();
      for (const r of rs) {
        if (r.submittedRecently === 0) continue;
        this.set({ workspace_id: r.workspaceId, quantile: '0.5' }, r.waitP50Seconds);
        this.set({ workspace_id: r.workspaceId, quantile: '0.9' }, r.waitP90Seconds);
      }
    },
  });
}
