// /healthz (process up) and /readyz (Postgres, Temporal and storage reachable), no auth.
// /metrics is not here: it has its own port (api/metrics.ts serveApiMetrics).
// Mounted before the /v1 authentication, so none of these needs a key.
import type { Router } from 'express';
import { z } from 'zod';
import type { AppDeps } from '../deps.js';
import type { ApiMetrics } from '../metrics.js';
import { Endpoints } from '../endpoint.js';
import { pingDb } from '../../db/index.js';

const readiness = z.object({
  status: z.enum(['ready', 'not_ready']),
  checks: z.record(z.string(), z.enum(['ok', 'unavailable'])),
});

const READY_CHECK_TIMEOUT_MS = 2000;
export const READY_CACHE_MS = 1500;

/** What the health handlers use: readiness checks cached for READY_CACHE_MS. */
interface HealthServices {
  readiness(): Promise<Record<string, string>>;
}

/** The health endpoints, each declared once (routing and the OpenAPI document); no key needed. */
export const healthEndpoints = new Endpoints<HealthServices>()
  .add({
    method: 'get',
    path: '/healthz',
    summary: 'Liveness: the process is up',
    tags: ['Health'],
    rateClass: null,
    raw: 'json',
    response: z.object({ status: z.literal('ok') }),
    errors: [],
    handler({ res }) {
      res.json({ status: 'ok' });
    },
  })
  .add({
    method: 'get',
    path: '/readyz',
    summary: 'Readiness',
    description: 'Postgres, Temporal and object storage reachable: 200, else 503 with the same body.',
    tags: ['Health'],
    rateClass: null,
    raw: 'json',
    response: readiness,
    errors: [503],
    async handler({ res, services }) {
      const checks = await services.readiness();
      const ok = Object.values(checks).every((v) => v === 'ok');
      res.status(ok ? 200 : 503).json({ status: ok ? 'ready' : 'not_ready', checks });
    },
  });

export function createHealthRouter(deps: AppDeps & { metrics: ApiMetrics }): Router {
  // Readiness is cached for READY_CACHE_MS and shared by concurrent callers, so a flood of /readyz
  // costs at most one round trip to each dependency per period.
  const readiness = cachedFor(READY_CACHE_MS, async () => {
    const checks: Record<string, string> = {};
    const run = async (name: string, fn: () => Promise<unknown>) => {
      try {
        await withTimeout(fn(), READY_CHECK_TIMEOUT_MS);
        checks[name] = 'ok';
      } catch {
        checks[name] = 'unavailable';
      }
    };
    await Promise.all([
      run('postgres', () => pingDb(deps.db)),
      // A gRPC deadline (not only a timer) so no call or retry outlives the check.
      run('temporal', () =>
        deps.temporal.withDeadline(Date.now() + READY_CHECK_TIMEOUT_MS - 100, () => deps.temporal.connection.workflowService.getSystemInfo({})),
      ),
      run('storage', () => deps.storage.ping()),
    ]);
    return checks;
  });
  return healthEndpoints.router({ readiness });
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('timeout')), ms);
    p.then(
      (v) => (clearTimeout(t), resolve(v)),
      (e) => (clearTimeout(t), reject(e)),
    );
  });
}

/** Memoizes an async result for `ttlMs` after it settles; callers during a run share it. */
export function cachedFor<T>(ttlMs: number, fn: () => Promise<T>, now: () => number = Date.now): () => Promise<T> {
  let current: { value: Promise<T>; expiresAt: number } | null = null;
  return () => {
    if (current && current.expiresAt > now()) return current.value;
    const entry = { value: fn(), expiresAt: Number.POSITIVE_INFINITY };
    current = entry;
    entry.value.then(
      () => (entry.expiresAt = now() + ttlMs),
      () => (entry.expiresAt = 0),
    );
    return entry.value;
  };
}
