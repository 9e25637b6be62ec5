// Worker metrics in Prometheus text: our own (provider latency and failures by provider and model,
// jobs completed / failed by kind, reconciliations) plus the Temporal SDK runtime metrics, which
// the SDK's core exports on an internal port and this endpoint relays.
import { createServer, type Server } from 'node:http';
import type { FinishedJob } from '../activities/jobs.js';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { WorkspaceQueue } from '../db/repos/queue.js';
import { registerQueueMetrics } from './queue-metrics.js';
import { answerHealth, type WorkerHealth } from './health.js';

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

export interface WorkerMetrics {
  registry: Registry;
  activityMetrics: {
    providerCall(provider: string, model: string, op: string, seconds: number, ok: boolean): void;
    jobFinished(job: FinishedJob, outcome: 'completed' | 'failed'): void;
    webhookAttempt(outcome: string, seconds: number | null): void;
  };
  reconciled(action: 'started' | 'settled' | 'completed'): void;
  /** A route health probe ended: the model served (available), gone, the key refused, or nothing learnt (unknown). */
  routeProbed(provider: string, model: string, outcome: 'available' | 'gone' | 'refused' | 'unknown'): void;
  /** A reconciler pass ended without failing (its lag is alerted on; passes are counted across the fleet). */
  reconcilerPassed(): void;
  /** Set while this process holds the control fleet's gauge lease (null when it gives it up): the fleet-wide gauges are read from there on scrape. */
  setBacklogSource(source: BacklogSource | null): void;
  /** A tenure of a control loop's lease began (held) or ended in this process. */
  controlLease(loop: string, held: boolean): void;
  /** A StartWorkflowExecution call of this process's client, by workflow type and outcome. */
  workflowStartAttempt(workflowType: string, outcome: 'started' | 'already_started' | 'failed'): void;
}

export function createWorkerMetrics(): WorkerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'mediagen_worker_' });
  const latency = new Histogram({
    name: 'mediagen_provider_request_duration_seconds',
    help: 'Provider call latency by provider, model and operation',
    labelNames: ['provider', 'model', 'op'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers: [registry],
  });
  const failures = new Counter({
    name: 'mediagen_provider_failures_total',
    help: 'Failed provider calls by provider, model and operation',
    labelNames: ['provider', 'model', 'op'] as const,
    registers: [registry],
  });
  const jobs = new Counter({
    name: 'mediagen_jobs_finished_total',
    help: 'Jobs finished by kind, model, provider and outcome (completed or failed)',
    labelNames: ['kind', 'model', 'provider', 'outcome'] as const,
    registers: [registry],
  });
  const jobDuration = new Histogram({
    name: 'mediagen_job_duration_seconds',
    help: 'Time from create to completed (or failed), by kind, model and outcome',
    labelNames: ['kind', 'model', 'outcome'] as const,
    buckets: [1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 3600],
    registers: [registry],
  });
  const refunds = new Counter({
    name: 'mediagen_credits_total',
    help: 'Credits refunded by the workers when a job fails (the gateway counts charges and its own refunds)',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const webhookAttempts = new Counter({
    name: 'mediagen_webhook_attempts_total',
    help: 'Webhook delivery attempts by outcome: delivered, or the error class (timeout, connection, refused, no_secret, http_4xx, http_5xx, http_other)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const webhookLatency = new Histogram({
    name: 'mediagen_webhook_attempt_duration_seconds',
    help: 'Webhook delivery attempts that sent a request: from sending it to the answer or the failure',
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const lastPass = new Gauge({
    name: 'mediagen_reconciler_last_pass_timestamp_seconds',
    help: 'Unix time of the last reconciler pass that ended without failing',
    registers: [registry],
  });
  const passes = new Counter({
    name: 'mediagen_reconciler_passes_total',
    help: "Reconciler passes that ended without failing; summed over the fleet, one per RECONCILE_INTERVAL_MS (only the control lease's holder runs them)",
    registers: [registry],
  });
  const leaseHeld = new Gauge({
    name: 'mediagen_control_lease_held',
    help: "1 while this process holds the control loop's lease (it runs the loop), else 0; summed over the fleet, 1 per loop",
    labelNames: ['loop'] as const,
    registers: [registry],
  });
  const leaseTenures = new Counter({
    name: 'mediagen_control_lease_tenures_total',
    help: "Tenures of a control loop's lease this process began (a take-over, or the first holder)",
    labelNames: ['loop'] as const,
    registers: [registry],
  });
  const startAttempts = new Counter({
    name: 'mediagen_workflow_start_attempts_total',
    help: "StartWorkflowExecution calls of this process's Temporal client by workflow type and outcome (started, already_started, failed)",
    labelNames: ['workflow_type', 'outcome'] as const,
    registers: [registry],
  });
  let backlog: BacklogSource | null = null;
  // Read on scrape, by the holder of the control fleet's gauge lease only (one answer for the fleet,
  // not one per replica): every other process exports none of these series (0 for the unlabelled ones).
  new Gauge({
    name: 'mediagen_webhook_backlog',
    help: 'Webhook events waiting for delivery (neither delivered, given up nor superseded)',
    registers: [registry],
    async collect() {
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
      if (!backlog) return this.reset();
      const circuits = await backlog.openWebhookCircuits().catch(() => null);
      if (!circuits) return;
      this.reset();
      for (const c of circuits) this.set({ workspace_id: c.workspaceId }, c.open);
    },
  });
  new Gauge({
    name: 'mediagen_task_queue_backlog',
    help: 'Tasks waiting in a task queue (approximate, from the Temporal server), by task queue and type',
    labelNames: ['task_queue'] as const,
    registers: [registry],
    async collect() {
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
      if (!backlog) return this.reset();
      const versions = await backlog.versionsWithoutPollers().catch(() => null);
      if (!versions) return;
      this.reset();
      for (const v of versions) this.set({ deployment: v.deployment, build_id: v.buildId }, v.running);
    },
  });
  new Gauge({
    name: 'mediagen_route_available',
    help: "Whether the route health probe last found the route's model served by its provider (1) or gone / its key refused (0), by provider and model; fleet-wide, from Postgres",
    labelNames: ['provider', 'model'] as const,
    registers: [registry],
    async collect() {
      if (!backlog?.routeProbes) return this.reset();
      const routes = await backlog.routeProbes().catch(() => null);
      if (!routes) return;
      this.reset();
      for (const r of routes) this.set({ provider: r.provider, model: r.model }, r.available ? 1 : 0);
    },
  });
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
  new Gauge({
    name: 'mediagen_route_slots_in_use',
    help: 'Slots of a route pool (ROUTE_SLOTS) held by jobs whose request is in flight at the provider, by route; fleet-wide, from Postgres',
    labelNames: ['route'] as const,
    registers: [registry],
    async collect() {
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
  const slotWaiters = new Gauge({
    name: 'mediagen_route_slot_waiters',
    help: 'Jobs waiting for a slot of a route pool (ROUTE_SLOTS) before their submit, by route; fleet-wide, from Postgres',
    labelNames: ['route'] as const,
    registers: [registry],
  });
  registerQueueMetrics(registry, () => backlog?.workspaceQueues?.() ?? null);
  const routeProbes = new Counter({
    name: 'mediagen_route_probes_total',
    help: 'Route health probes by provider, model and outcome (available, gone, refused, unknown: a 5xx or timeout that tells nothing)',
    labelNames: ['provider', 'model', 'outcome'] as const,
    registers: [registry],
  });
  const reconciliations = new Counter({
    name: 'mediagen_reconciliations_total',
    help: 'Jobs the reconciler started, settled, or completed from their stored outputs',
    labelNames: ['action'] as const,
    registers: [registry],
  });
  return {
    registry,
    activityMetrics: {
      providerCall(provider, model, op, seconds, ok) {
        latency.observe({ provider, model, op }, seconds);
        if (!ok) failures.inc({ provider, model, op });
      },
      jobFinished(job, outcome) {
        jobs.inc({ kind: job.kind, model: job.model, provider: job.provider, outcome });
        jobDuration.observe({ kind: job.kind, model: job.model, outcome }, (Date.now() - job.createdAt.getTime()) / 1000);
        if (job.refunded > 0) refunds.inc({ reason: 'refunded' }, job.refunded);
      },
      webhookAttempt(outcome, seconds) {
        webhookAttempts.inc({ outcome });
        if (seconds !== null) webhookLatency.observe(seconds);
      },
    },
    reconciled: (action) => reconciliations.inc({ action }),
    routeProbed: (provider, model, outcome) => routeProbes.inc({ provider, model, outcome }),
    reconcilerPassed: () => {
      lastPass.set(Date.now() / 1000);
      passes.inc();
    },
    setBacklogSource(source) {
      backlog = source;
    },
    controlLease(loop, held) {
      leaseHeld.set({ loop }, held ? 1 : 0);
      if (held) leaseTenures.inc({ loop });
    },
    workflowStartAttempt: (workflowType, outcome) => startAttempts.inc({ workflow_type: workflowType, outcome }),
  };
}

/** Serves /metrics: our registry, then the SDK runtime's series fetched from `sdkMetricsUrl`. */
/** Serves /metrics, and /healthz and /readyz when `health` is given (worker/health.ts). */
export function serveWorkerMetrics(metrics: WorkerMetrics, host: string, port: number, sdkMetricsUrl?: string, health?: () => WorkerHealth): Promise<Server> {
  const server = createServer(async (req, res) => {
    if (health && answerHealth(req, res, health)) return;
    if (req.url !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    let sdk = '';
    if (sdkMetricsUrl) {
      try {
        const r = await fetch(sdkMetricsUrl, { signal: AbortSignal.timeout(2000) });
        sdk = await r.text();
      } catch {
        sdk = '# Temporal SDK runtime metrics unavailable\n';
      }
    }
    res.writeHead(200, { 'Content-Type': metrics.registry.contentType });
    res.end(`${await metrics.registry.metrics()}\n${sdk}`);
  });
  return new Promise((resolve) => server.listen(port, host, () => resolve(server)));
}
