// A job's failover between provider routes (params.routes): which route a run uses next, asking
// each route's circuit breaker, and each route's outcome counted toward its breaker. Part of the
// job service (jobs/service.ts), split out by concern.
import type { Logger } from 'pino';
import type { Database } from '../db/index.js';
import type { Job } from '../db/schema.js';
import * as jobsRepo from '../db/repos/jobs.js';
import type { createSlotRelease } from './slot-release.js';
import type { ProviderCircuits } from '../db/provider-circuits.js';
import { typedParams } from '../shared/job-params.js';
import type { ProviderAttempt, RouteChoice } from '../shared/job-model.js';
import { IllegalStatusMoveError } from './rules.js';

/** Where a job goes next (routeJob): a route, or none left; and the request given up, to cancel. */
export type RouteDecision = { route: RouteChoice | null; previousRef: Record<string, unknown> | null };

export function createJobFailover(
  deps: { db: Database; circuits?: ProviderCircuits | undefined; logger?: Pick<Logger, 'warn' | 'info'> | undefined },
  slots: Pick<ReturnType<typeof createSlotRelease>, 'releaseRouteSlot'>,
) {
  const { db } = deps;
  return {
    /**
     * The route run `runId`'s job uses next, among its failover routes (params.routes), passing over
     * routes the route health probe found gone. At the start (`gaveUp` absent): the first route from
     * the job's current one whose circuit breaker admits a new job. After a route failed in a way another provider can fix (`gaveUp`): the breaker
     * counts the failure, the job records the attempt and forgets that route's request (answered
     * for its cancel), and moves to the next admitted route after it — or the next one at all when
     * every breaker is open (the job still gets its chance); `route` null when none is left. The
     * job is charged nothing here: its price was fixed at create, whichever provider serves it.
     */
    async routeJob(jobId: string, runId: string, gaveUp: ProviderAttempt | undefined, attempt: number): Promise<RouteDecision> {
      const job = await jobsRepo.getJob(db, jobId);
      if (!job || job.status !== 'generating' || job.status_run_id !== runId)
        throw new IllegalStatusMoveError(jobId, job?.status ?? 'pending', 'generating', 'this run does not hold it');
      const { params } = typedParams(job);
      const routes = params.routes ?? [];
      const from = gaveUp?.provider ?? params.provider;
      // A retry of this step after the give-up committed: the route it moved to (none when the job
      // stayed on the route it gave up) and the request it gave up, from the stored attempt; no
      // breaker is asked again.
      const repeat = gaveUp ? job.provider_attempts.find((a) => a.provider === gaveUp.provider && a.error === gaveUp.error) : undefined;
      if (repeat)
        return { route: params.provider === from ? null : (routes.find((r) => r.provider === params.provider) ?? null), previousRef: repeat.ref ?? null };
      const at = routes.findIndex((r) => r.provider === from);
      const after = gaveUp ? routes.slice(at + 1) : routes.slice(Math.max(at, 0));
      // Routes whose model the route probe found gone are skipped outright; only when every route
      // left is gone does the job still try the first of them.
      const gone = deps.circuits ? await deps.circuits.outOfRotation(job.model) : new Set<string>();
      const candidates = after.some((r) => !gone.has(r.provider)) ? after.filter((r) => !gone.has(r.provider)) : after;
      let route = candidates[0];
      for (const c of candidates) {
        if (!deps.circuits || (await deps.circuits.admit(c.provider, job.model, jobId))) {
          route = c;
          break;
        }
      }
      if (!gaveUp && (!route || route.provider === params.provider)) return { route: route ?? null, previousRef: null };
      // No route left: the attempt is still recorded and its request forgotten (the job stays on it to fail).
      const to = route ?? { provider: from, provider_model_id: params.provider_model_id ?? '' };
      const moved = await jobsRepo.switchJobRoute(db, jobId, runId, { from, to, ...(gaveUp ? { gaveUp } : {}), attempt });
      if (!moved) throw new IllegalStatusMoveError(jobId, job.status, 'generating', 'this run does not hold it');
      if (gaveUp && !moved.moved) {
        // Another attempt of this step committed the give-up meanwhile: answered as above.
        const now = typedParams(moved.job).params;
        const current = now.provider === from ? null : (routes.find((r) => r.provider === now.provider) ?? null);
        return { route: current, previousRef: moved.previousRef };
      }
      // The slot held at the route given up goes back (the next submit takes one at the new route).
      if (gaveUp) await slots.releaseRouteSlot(jobId);
      // Counted once: a retry of this step after the move committed finds the job moved already.
      if (gaveUp && moved.moved) {
        try {
          await deps.circuits?.record(gaveUp.provider, job.model, { ok: false, error: gaveUp.error, jobId });
        } catch (err) {
          deps.logger?.warn({ jobId, err: (err as Error).message }, 'circuit breaker outcome not recorded');
        }
      }
      return { route: route ?? null, previousRef: moved.previousRef };
    },

    /** Counts a completed job toward its serving route's circuit breaker (jobs with failover routes only; once per job, however often a step repeats). */
    async routeSucceeded(job: Job): Promise<void> {
      const { params } = typedParams(job);
      if (!params.routes || !deps.circuits) return;
      try {
        await deps.circuits.record(params.provider, job.model, { ok: true, jobId: job.id });
      } catch (err) {
        deps.logger?.warn({ jobId: job.id, err: (err as Error).message }, 'circuit breaker outcome not recorded');
      }
    },
  };
}
