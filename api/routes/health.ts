// /healthz (process up) and /readyz (Postgres, Temporal and storage reachable), no auth.
import { Router } from 'express';
import type { AppDeps } from '../app.js';
import type { ApiMetrics } from '../metrics.js';
import { pingDb } from '../../db/index.js';

export function createHealthRouter(deps: AppDeps & { metrics: ApiMetrics }): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    const checks: Record<string, string> = {};
    const run = async (name: string, fn: () => Promise<unknown>) => {
      try {
        await withTimeout(fn(), 2000);
        checks[name] = 'ok';
      } catch {
        checks[name] = 'unavailable';
      }
    };
    await Promise.all([
      run('postgres', () => pingDb(deps.db)),
      run('temporal', () => deps.temporal.connection.workflowService.getSystemInfo({})),
      run('storage', () => deps.storage.ping()),
    ]);
    const ok = Object.values(checks).every((v) => v === 'ok');
    res.status(ok ? 200 : 503).json({ status: ok ? 'ready' : 'not_ready', checks });
  });
  router.get('/metrics', async (_req, res) => {
    res.setHeader('Content-Type', deps.metrics.registry.contentType);
    res.send(await deps.metrics.registry.metrics());
  });
  return router;
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
