// Gateway metrics in Prometheus text format, served at /metrics on their own port (API_METRICS_PORT,
// on METRICS_HOST = loopback by default) so the public API port never exposes them.
import { createServer, type Server } from 'node:http';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { providerNames } from '../shared/job-model.js';
import { providerCancel } from '../shared/routing.js';

export interface ApiMetrics {
  registry: Registry;
  observeRequest(method: string, route: string, status: number, seconds: number): void;
  rateLimited(cls: string): void;
  jobCreated(kind: string, model: string): void;
  credits(reason: 'charged' | 'refunded', amount: number): void;
  /** A customer's cancel, by the provider serving the job, whether it came after the submit and whether that provider honors cancels. */
  jobCanceled(provider: string, afterSubmit: boolean, honored: boolean): void;
  /** A create refused by the per-workspace cancel-churn limit. */
  cancelChurnRefused(): void;
  /** A create refused by a budget (402 budget_exceeded), by the budget's scope and period. */
  budgetRefused(scope: 'key' | 'project', period: 'day' | 'month'): void;
  /** Where an API key lookup was answered: from memory (an unknown id) or by a Postgres query. */
  authLookup(source: 'memory' | 'database'): void;
}

/** The provider circuit breakers that are not closed (db/repos/provider-circuits.ts openCircuits), read at each scrape. */
type CircuitReader = () => Promise<ReadonlyArray<{ provider: string; model: string; state: string }>>;

export function createApiMetrics(opts: { circuits?: CircuitReader } = {}): ApiMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'mediagen_api_' });
  if (opts.circuits) {
    const read = opts.circuits;
    // The fleet's shared breaker state, from Postgres at scrape time: every gateway reports the same.
    new Gauge({
      name: 'mediagen_provider_circuit_open',
      help: 'Provider routes whose circuit breaker is not closed, by provider and model: 1 open (new jobs skip the route), 0.5 half-open (a trial job goes through)',
      labelNames: ['provider', 'model'] as const,
      registers: [registry],
      async collect() {
        this.reset();
        for (const c of await read()) this.set({ provider: c.provider, model: c.model }, c.state === 'open' ? 1 : 0.5);
      },
    });
  }
  const requests = new Counter({
    name: 'mediagen_http_requests_total',
    help: 'HTTP requests by method, route and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'mediagen_http_request_duration_seconds',
    help: 'HTTP request latency by method, route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const refusals = new Counter({
    name: 'mediagen_rate_limit_refusals_total',
    help: 'Requests refused by the rate limiter, by class',
    labelNames: ['class'] as const,
    registers: [registry],
  });
  const jobs = new Counter({
    name: 'mediagen_jobs_created_total',
    help: 'Jobs created by kind and model',
    labelNames: ['kind', 'model'] as const,
    registers: [registry],
  });
  const credits = new Counter({
    name: 'mediagen_credits_total',
    help: 'Credits charged at create time and refunded by the gateway, by reason',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const cancels = new Counter({
    name: 'mediagen_job_cancels_total',
    help: "Customers' cancels by the provider serving the job, stage (before_submit, after_submit) and whether that provider honors cancels (after the submit, a cancel that is not honored keeps the provider's cost)",
    labelNames: ['provider', 'stage', 'honored'] as const,
    registers: [registry],
  });
  // Every provider's series from the start, so rules over them have data before a first cancel.
  for (const provider of providerNames) {
    const honored = provider !== 'local' && providerCancel[provider] !== 'never';
    cancels.inc({ provider, stage: 'before_submit', honored: String(honored) }, 0);
    if (provider !== 'local') cancels.inc({ provider, stage: 'after_submit', honored: String(honored) }, 0);
  }
  const churnRefusals = new Counter({
    name: 'mediagen_cancel_churn_refusals_total',
    help: 'Creates refused because the workspace canceled too many jobs after their submit (429 cancel_churn_limited)',
    registers: [registry],
  });
  const budgetRefusals = new Counter({
    name: 'mediagen_budget_refusals_total',
    help: 'Creates refused because they would pass a budget of their key or project (402 budget_exceeded), by scope (key, project) and period (day, month)',
    labelNames: ['scope', 'period'] as const,
    registers: [registry],
  });
  for (const scope of ['key', 'project']) for (const period of ['day', 'month']) budgetRefusals.inc({ scope, period }, 0);
  const authLookups = new Counter({
    name: 'mediagen_auth_lookups_total',
    help: 'API key lookups that missed the key cache, by where they were answered (memory: unknown id refused without a query)',
    labelNames: ['source'] as const,
    registers: [registry],
  });
  return {
    registry,
    observeRequest(method, route, status, seconds) {
      const labels = { method, route, status: String(status) };
      requests.inc(labels);
      latency.observe(labels, seconds);
    },
    rateLimited: (cls) => refusals.inc({ class: cls }),
    jobCreated: (kind, model) => jobs.inc({ kind, model }),
    credits: (reason, amount) => credits.inc({ reason }, amount),
    jobCanceled: (provider, afterSubmit, honored) => cancels.inc({ provider, stage: afterSubmit ? 'after_submit' : 'before_submit', honored: String(honored) }),
    cancelChurnRefused: () => churnRefusals.inc(),
    budgetRefused: (scope, period) => budgetRefusals.inc({ scope, period }),
    authLookup: (source) => authLookups.inc({ source }),
  };
}

/** Serves GET /metrics (and nothing else) on host:port; port 0 picks a free one. */
export function serveApiMetrics(metrics: Pick<ApiMetrics, 'registry'>, host: string, port: number): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n');
      return;
    }
    metrics.registry.metrics().then(
      (text) => res.writeHead(200, { 'Content-Type': metrics.registry.contentType, 'Cache-Control': 'no-store' }).end(text),
      () => res.writeHead(500).end(),
    );
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}
