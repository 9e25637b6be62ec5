// /healthz (process up) and /readyz (can this gateway answer status reads), no auth.
// Readiness turns on what status reads need: Postgres. Temporal and storage serve creates, cancels,
// uploads and downloads; while one of them is unreachable every gateway shares the outage, and
// taking them all out of the load balancer would stop status reads too, so /readyz stays 200 and
// says `degraded`, naming the part. Only a gateway that has not reached one of them since it
// started is not ready: a rollout of a gateway that cannot reach Temporal stops there.
// /metrics is not here: it has its own port (api/metrics.ts serveApiMetrics).
// Mounted before the /v1 authentication, so none of these needs a key.
import type { Router } from 'express';
import { z } from 'zod';
import type { AppDeps } from '../deps.js';
import type { ApiMetrics } from '../metrics.js';
import { Endpoints } from '../endpoint.js';
import { pingDb } from '../../db/index.js';

const readiness = z.object({
  status: z.enum(['ready', 'degraded', 'not_ready']),
  checks: z.record(z.string(), z.enum(['ok', 'unavailable'])),
});

/** What status reads need: without it a gateway is not ready. */
const REQUIRED = 'postgres';

const READY_CHECK_TIMEOUT_MS = 2000;
export const READY_CACHE_MS = 1500;

/** What the health handlers use: readiness checks cached for READY_CACHE_MS. */
interface HealthServices {
  readiness(): Promise<Readiness>;
}

export interface Readiness {
  status: 'ready' | 'degraded' | 'not_ready';
  checks: Record<string, 'ok' | 'unavailable'>;
}

/**
 * The status from the checks: not ready without Postgres, or without a part this gateway has never
 * reached (`reached` remembers, across calls, every part seen ok); degraded when a part it reached
 * before is unavailable now.
 */
function readinessOf(checks: Record<string, 'ok' | 'unavailable'>, reached: Set<string>): Readiness {
  for (const [name, v] of Object.entries(checks)) if (v === 'ok') reached.add(name);
  const down = Object.keys(checks).filter((name) => checks[name] !== 'ok');
  const status = down.length === 0 ? 'ready' : down.includes(REQUIRED) || down.some((name) => !reached.has(name)) ? 'not_ready' : 'degraded';
  return { status, checks };
}

/** The health endpoints, each declared once (routing and the OpenAPI document); no key needed. */
export const healthEndpoints = new Endpoints<HealthServices>()
  .add({
    method: 'get',
    path: '/healthz',
    summary: 'Liveness: the process is up',
    tags: ['Health'],
    scope: null,
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
    description:
      'Postgres, Temporal and object storage reachable: 200 `ready`. Temporal or storage unreachable after this gateway has reached it once: 200 `degraded` (status reads still work). Postgres unreachable, or Temporal or storage never reached since start: 503 `not_ready`, with the same body.',
    tags: ['Health'],
    scope: null,
    rateClass: null,
    raw: 'json',
    response: readiness,
    errors: [503],
    async handler({ res, services }) {
      const { checks, status } = await services.readiness();
      res.status(status === 'not_ready' ? 503 : 200).json({ status, checks });
    },
  });

export function createHealthRouter(deps: AppDeps & { metrics: ApiMetrics }): Router {
  // Readiness is cached for READY_CACHE_MS and shared by concurrent callers, so a flood of /readyz
  // costs at most one round trip to each dependency per period.
  const reached = new Set<string>();
  const readiness = cachedFor(READY_CACHE_MS, async () => {
    const checks: Record<string, 'ok' | 'unavailable'> = {};
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
    return readinessOf(checks, reached);
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
