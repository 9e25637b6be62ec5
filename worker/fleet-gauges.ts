// The fleet-wide gauges, read on scrape by the holder of the control fleet's gauge lease only (one
// answer for the fleet, not one per replica): every other process exports none of these series (0
// for the unlabelled ones). They are registered here, apart from the process's own counters in
// worker/metrics.ts, because they read the fleet's state from a source rather than count events.
import { Gauge, type Registry } from 'prom-client';
import type { WorkspaceQueue } from '../db/repos/queue.js';
import { registerQueueMetrics } from './queue-metrics.js';

/** What the reconciler role reads on each scrape: the webhook outbox and the task queues' backlogs. */
export interface BacklogSource {
  webhooks(): Promise<{ pending: number; oldestAgeSeconds: number }>;
  /** Webhook circuits open or half-open, per workspace (workspaces with none are left out). */
  openWebhookCircuits(): Promise<Array<{ workspaceId: string; open: number }>>;
  taskQueues(): Promise<{ taskQueue: string; backlog: number; ageSeconds: number }[]>;
  /** Running workflows per version of the deployment whose workers no longer poll (none when unversioned). */
  versionsWithoutPollers(): Promise<{ deployment: string; buildId: string; running: number }[]>;
  /** Every probed route with whether the route health probe last found its model served (worker/route-prober.ts). */
  routeProbes?(): Promise<{ provider: string; model: string; available: boolean }[]>;
  /** Routes whose provider announced the model's end, with the shutdown date (YYYY-MM-DD) when given (worker/route-prober.ts). */
  routeLifecycles?(): Promise<{ provider: string; model: string; shutdownAt: string | null }[]>;
  /** Per route with a slot pool (ROUTE_SLOTS): slots held and jobs waiting for one, fleet-wide. */
  routeSlots?(): Promise<{ route: string; inUse: number; waiting: number }[]>;
  /** Every workspace with jobs in flight or recently submitted: the per-workspace queue gauges (worker/queue-metrics.ts). */
  workspaceQueues?(): Promise<WorkspaceQueue[]>;
}

/** Answers the source while this process holds the gauge lease, else null (then the gauges export nothing). */
type CurrentSource = () => BacklogSource | null;

/** Registers every fleet-wide gauge on `registry` (the per-workspace ones of worker/queue-metrics.ts last); each reads `source` on scrape. */
export function registerFleetGauges(registry: Registry, source: CurrentSource): void {
  registerWebhookGauges(registry, source);
  registerTaskQueueGauges(registry, source);
  registerRouteGauges(registry, source);
  registerRouteSlotGauges(registry, source);
  registerQueueMetrics(registry, () => source()?.workspaceQueues?.() ?? null);
}

/** The webhook outbox's backlog and oldest event, and the webhook circuits open per workspace. */
function registerWebhookGauges(registry: Registry, source: CurrentSource): void {
  new Gauge({
    name: 'mediagen_webhook_backlog',
    help: 'Webhook events waiting for delivery (neither delivered, given up nor superseded)',
    registers: [registry],
    async collect() {
      const backlog = source();
      if (!backlog) {
        this.reset();
        webhookAge.reset();
        return;
      }
      const w = await backlog.webhooks().catch(() => null);
      if (w) {
        this.set(w.pending);
        webhookAge.set(w.oldestAgeSeconds);
      }
    },
  });
  // Set by the backlog gauge's collect above, from the same read of the outbox.
  const webhookAge = new Gauge({
    name: 'mediagen_webhook_oldest_pending_age_seconds',
    help: 'Age of the oldest webhook event still waiting for delivery (0 when none)',
    registers: [registry],
  });
  new Gauge({
    name: 'mediagen_webhook_open_circuits',
    help: 'Webhook circuits open or half-open (deliveries waiting), by workspace',
    labelNames: ['workspace_id'] as const,
    registers: [registry],
    async collect() {
      const backlog = source();
      if (!backlog) return this.reset();
      const circuits = await backlog.openWebhookCircuits().catch(() => null);
      if (!circuits) return;
      this.reset();
      for (const c of circuits) this.set({ workspace_id: c.workspaceId }, c.open);
    },
  });
}

/** The task queues' backlogs and ages from the Temporal server, and the workflows pinned to builds nobody polls for. */
function registerTaskQueueGauges(registry: Registry, source: CurrentSource): void {
  new Gauge({
    name: 'mediagen_task_queue_backlog',
    help: 'Tasks waiting in a task queue (approximate, from the Temporal server), by task queue and type',
    labelNames: ['task_queue'] as const,
    registers: [registry],
    async collect() {
      const backlog = source();
      if (!backlog) {
        this.reset();
        queueAge.reset();
        return;
      }
      const queues = await backlog.taskQueues().catch(() => []);
      this.reset();
      queueAge.reset();
      for (const q of queues) {
        this.set({ task_queue: q.taskQueue }, q.backlog);
        queueAge.set({ task_queue: q.taskQueue }, q.ageSeconds);
      }
    },
  });
  // Set by the backlog gauge's collect above, from the same read of the task queues.
  const queueAge = new Gauge({
    name: 'mediagen_task_queue_backlog_age_seconds',
    help: 'Age of the oldest task waiting in a task queue (approximate, from the Temporal server)',
    labelNames: ['task_queue'] as const,
    registers: [registry],
  });
  new Gauge({
    name: 'mediagen_workflows_without_pollers',
    help: 'Running workflows pinned to a build none of whose workers polls the workflows queue any more (they end only at their run timeout), by deployment and build',
    labelNames: ['deployment', 'build_id'] as const,
    registers: [registry],
    async collect() {
      const backlog = source();
      if (!backlog) return this.reset();
      const versions = await backlog.versionsWithoutPollers().catch(() => null);
      if (!versions) return;
      this.reset();
      for (const v of versions) this.set({ deployment: v.deployment, build_id: v.buildId }, v.running);
    },
  });
}

/** What the route health probe last learnt of each route: whether its model is served, and any end its provider announced. */
function registerRouteGauges(registry: Registry, source: CurrentSource): void {
  new Gauge({
    name: 'mediagen_route_available',
    help: "Whether the route health probe last found the route's model served by its provider (1) or gone / its key refused (0), by provider and model; fleet-wide, from Postgres",
    labelNames: ['provider', 'model'] as const,
    registers: [registry],
    async collect() {
      const backlog = source();
      if (!backlog?.routeProbes) return this.reset();
      const routes = await backlog.routeProbes().catch(() => null);
      if (!routes) return;
      this.reset();
      for (const r of routes) this.set({ provider: r.provider, model: r.model }, r.available ? 1 : 0);
    },
  });
  // Set by the deprecation gauge's collect below, from the same read of the routes' lifecycles.
  const shutdowns = new Gauge({
    name: 'mediagen_route_shutdown_timestamp_seconds',
    help: "The shutdown date a provider announced for a route's model (Unix seconds, midnight UTC), by provider and model; only routes with a date; fleet-wide, from Postgres",
    labelNames: ['provider', 'model'] as const,
    registers: [registry],
  });
  new Gauge({
    name: 'mediagen_route_deprecated',
    help: "1 for each route whose provider announced the model's end (a shutdown date or a deprecated status), by provider and model; fleet-wide, from Postgres",
    labelNames: ['provider', 'model'] as const,
    registers: [registry],
    async collect() {
      const backlog = source();
      if (!backlog?.routeLifecycles) {
        this.reset();
        shutdowns.reset();
        return;
      }
      const routes = await backlog.routeLifecycles().catch(() => null);
      if (!routes) return;
      this.reset();
      shutdowns.reset();
      for (const r of routes) {
        this.set({ provider: r.provider, model: r.model }, 1);
        if (r.shutdownAt) shutdowns.set({ provider: r.provider, model: r.model }, Date.parse(`${r.shutdownAt}T00:00:00Z`) / 1000);
      }
    },
  });
}

/** The route slot pools (ROUTE_SLOTS): slots held and jobs waiting for one, per route. */
function registerRouteSlotGauges(registry: Registry, source: CurrentSource): void {
  new Gauge({
    name: 'mediagen_route_slots_in_use',
    help: 'Slots of a route pool (ROUTE_SLOTS) held by jobs whose request is in flight at the provider, by route; fleet-wide, from Postgres',
    labelNames: ['route'] as const,
    registers: [registry],
    async collect() {
      const backlog = source();
      if (!backlog?.routeSlots) {
        this.reset();
        slotWaiters.reset();
        return;
      }
      const routes = await backlog.routeSlots().catch(() => null);
      if (!routes) return;
      this.reset();
      slotWaiters.reset();
      for (const r of routes) {
        this.set({ route: r.route }, r.inUse);
        slotWaiters.set({ route: r.route }, r.waiting);
      }
    },
  });
  // Set by the slots gauge's collect above, from the same read of the pools.
  const slotWaiters = new Gauge({
    name: 'mediagen_route_slot_waiters',
    help: 'Jobs waiting for a slot of a route pool (ROUTE_SLOTS) before their submit, by route; fleet-wide, from Postgres',
    labelNames: ['route'] as const,
    registers: [registry],
  });
}
