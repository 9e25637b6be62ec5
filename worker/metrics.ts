// Worker metrics in Prometheus text: our own (provider latency and failures by provider and model,
// jobs completed / failed by kind, reconciliations) plus the Temporal SDK runtime metrics, which
// the SDK's core exports on an internal port and this endpoint relays.
import { createServer, type Server } from 'node:http';
import type { FinishedJob } from '../activities/jobs.js';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { registerFleetGauges, type BacklogSource } from './fleet-gauges.js';
import { answerHealth, type WorkerHealth } from './health.js';

// The fleet gauges' source is declared beside the gauges that read it (worker/fleet-gauges.ts) and
// exported here too, with the metrics it feeds, for the modules that build one or hand it over.
export type { BacklogSource };

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
  // The registry lists metrics in the order they are registered, so the steps below keep the order
  // /metrics has: the activities' metrics, the control loops', the workflow starts, the fleet-wide
  // gauges, then the route probes and reconciliations.
  const activityMetrics = registerActivityMetrics(registry);
  const loops = registerControlLoopMetrics(registry);
  const startAttempts = new Counter({
    name: 'mediagen_workflow_start_attempts_total',
    help: "StartWorkflowExecution calls of this process's Temporal client by workflow type and outcome (started, already_started, failed)",
    labelNames: ['workflow_type', 'outcome'] as const,
    registers: [registry],
  });
  let backlog: BacklogSource | null = null;
  registerFleetGauges(registry, () => backlog);
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
    activityMetrics,
    reconciled: (action) => reconciliations.inc({ action }),
    routeProbed: (provider, model, outcome) => routeProbes.inc({ provider, model, outcome }),
    reconcilerPassed: loops.reconcilerPassed,
    setBacklogSource(source) {
      backlog = source;
    },
    controlLease: loops.controlLease,
    workflowStartAttempt: (workflowType, outcome) => startAttempts.inc({ workflow_type: workflowType, outcome }),
  };
}

/** Registers the activities' metrics (provider calls, finished jobs, webhook attempts) on `registry` and answers the recorder for them. */
function registerActivityMetrics(registry: Registry): WorkerMetrics['activityMetrics'] {
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
  return {
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
  };
}

/** Registers the control loops' metrics (reconciler passes, lease tenures) on `registry` and answers their recorders. */
function registerControlLoopMetrics(registry: Registry): Pick<WorkerMetrics, 'reconcilerPassed' | 'controlLease'> {
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
  return {
    reconcilerPassed: () => {
      lastPass.set(Date.now() / 1000);
      passes.inc();
    },
    controlLease(loop, held) {
      leaseHeld.set({ loop }, held ? 1 : 0);
      if (held) leaseTenures.inc({ loop });
    },
  };
}

/** Serves /metrics (our registry, then the SDK runtime's series fetched from `sdkMetricsUrl`), and /healthz and /readyz when `health` is given (worker/health.ts). */
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
