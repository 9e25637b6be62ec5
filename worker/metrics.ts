// Worker metrics in Prometheus text: our own (provider latency and failures by provider and model,
// jobs completed / failed by kind, reconciliations) plus the Temporal SDK runtime metrics, which
// the SDK's core exports on an internal port and this endpoint relays.
import { createServer, type Server } from 'node:http';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface WorkerMetrics {
  registry: Registry;
  activityMetrics: {
    providerCall(provider: string, model: string, op: string, seconds: number, ok: boolean): void;
    jobFinished(kind: string, outcome: 'completed' | 'failed'): void;
  };
  reconciled(action: 'started' | 'settled'): void;
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
    help: 'Jobs finished by kind and outcome (completed or failed)',
    labelNames: ['kind', 'outcome'] as const,
    registers: [registry],
  });
  const reconciliations = new Counter({
    name: 'mediagen_reconciliations_total',
    help: 'Jobs the reconciler started or settled',
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
      jobFinished: (kind, outcome) => jobs.inc({ kind, outcome }),
    },
    reconciled: (action) => reconciliations.inc({ action }),
  };
}

/** Serves /metrics: our registry, then the SDK runtime's series fetched from `sdkMetricsUrl`. */
export function serveWorkerMetrics(metrics: WorkerMetrics, host: string, port: number, sdkMetricsUrl?: string): Promise<Server> {
  const server = createServer(async (req, res) => {
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
