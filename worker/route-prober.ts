// The route health probe: every ROUTE_PROBE_INTERVAL_MS a provider fleet asks its provider whether
// each live route's model is still served (activities/providers/probes.ts: a free model get/list
// call), so a dead route is found before a customer's job is. It runs in the holder of its control
// lease (worker/control-fleet.ts) only. The finding is stored in Postgres
// (route_probes), where every replica reads it: GET /v1/models shows the route unavailable with why,
// and the failover (jobs/failover.ts) takes it out of rotation: new jobs skip it and jobs failing
// over do not move onto it. A probe that cannot tell (5xx, timeout) changes nothing; the next probe
// that finds the model again puts the route back. Each route is claimed per period in one statement,
// so of many replicas of a fleet one probes it.
// The probe also reads what the provider publishes of the model's end (OpenAI's shutdown_date, fal's
// deprecated status: activities/providers/probes.ts). A new announcement, or a moved shutdown date, is
// recorded on the route (deprecated_at, shutdown_at: GET /v1/models shows deprecated_at) and alerted on
// at once: an error log line "route lifecycle: …" and the mediagen_route_shutdown_timestamp_seconds /
// mediagen_route_deprecated gauges behind the MediagenRouteDeprecated and MediagenRouteShutdownSoon
// alerts, so a retirement never arrives silently.
import type { Logger } from 'pino';
import type { Config } from '../shared/config.js';
import type { Database } from '../db/index.js';
import { catalog, routeFor, type LiveProviderName, type ModelRoute } from '../shared/catalog.js';
import { liveRoutesFor } from '../shared/routing.js';
import { providerKeys } from '../providers/index.js';
import * as probes from '../db/repos/route-probes.js';
import { routeProbes, type ProbeLifecycle, type ProbeOutcome } from '../activities/providers/probes.js';
import type { WorkerMetrics } from './metrics.js';

/** Routes probed at once by one replica. */
const PROBE_CONCURRENCY = 4;

interface ProbedRoute {
  provider: LiveProviderName;
  model: string;
  providerModelId: string;
  kind: ModelRoute['kind'];
}

export interface RouteProber {
  start(): void;
  stop(): Promise<void>;
  /** One pass over the routes due; answers what each probe found (for tests and logs). */
  runOnce(): Promise<Array<ProbedRoute & { outcome: ProbeOutcome }>>;
}

/** The live routes here of these providers that have a probe and their keys set in this process, and the routes' speech steps on them. */
export function probedRoutes(config: Config, providers: readonly LiveProviderName[]): ProbedRoute[] {
  const probeOf = routeProbes(config);
  const keyed = (p: LiveProviderName) => (providerKeys[p] as readonly string[]).every((k) => Boolean((config as Record<string, unknown>)[k]));
  const wanted = providers.filter((p) => probeOf[p] && keyed(p));
  if (config.PROVIDERS_MODE === 'local' || wanted.length === 0) return [];
  return Object.keys(catalog).flatMap((model) => {
    const route = routeFor(model)!;
    // A provider fleet holds its own key only: a route with a speech step is probed on its provider
    // whether or not this process sees the speech provider's key, and its speech step on the speech
    // provider (a speech model gone makes the route's jobs fail) whether or not it sees the route's.
    const routes = liveRoutesFor(config, { ...route, speech: undefined })
      .filter((r) => wanted.includes(r.provider as LiveProviderName))
      .map((r) => ({ provider: r.provider as LiveProviderName, model, providerModelId: r.provider_model_id, kind: route.kind }));
    const speech = route.speech;
    if (speech && wanted.includes(speech.provider)) routes.push({ provider: speech.provider, model, providerModelId: speech.modelId, kind: route.kind });
    return routes;
  });
}

export function createRouteProber(deps: {
  config: Config;
  db: Database;
  providers: readonly LiveProviderName[];
  logger: Logger;
  metrics?: WorkerMetrics | undefined;
}): RouteProber {
  const { config, db, logger } = deps;
  const intervalMs = config.ROUTE_PROBE_INTERVAL_MS;
  const probeOf = routeProbes(config);
  const routes = probedRoutes(config, deps.providers);
  // Passes start one interval apart (not an interval after the previous one ended), and a claim holds
  // the route for most of a period, so each route is probed once per interval: a model lost is found
  // within one interval.
  const leaseMs = Math.max(1, Math.floor(intervalMs * 0.8));
  let stopping = new AbortController();

  async function probeOne(route: ProbedRoute): Promise<ProbeOutcome | undefined> {
    if (!(await probes.claimDueProbe(db, route, leaseMs))) return undefined;
    const outcome = await probeOf[route.provider]!(route.providerModelId, { signal: stopping.signal, kind: route.kind });
    deps.metrics?.routeProbed(route.provider, route.model, outcome.state);
    const where = { provider: route.provider, model: route.model, providerModelId: route.providerModelId };
    if (outcome.state === 'unknown') {
      await probes.recordProbeError(db, route, outcome.reason);
      logger.info({ ...where, reason: outcome.reason }, 'route probe could not tell; the route stays as it was');
      return outcome;
    }
    const available = outcome.state === 'available';
    const { changed } = await probes.recordProbe(db, route, { status: available ? 'available' : 'unavailable', reason: available ? null : outcome.reason });
    if (changed && !available)
      logger.warn(
        where,
        `${outcome.reason}; taken out of rotation for ${route.model}: new jobs skip it and no job fails over onto it. Check the catalog (shared/catalog, providers/${route.provider}/descriptor.ts) and the provider's model list or account`,
      );
    if (changed && available)
      logger.info(where, `${route.provider} route for ${route.providerModelId}: the model is served again; back in rotation for ${route.model}`);
    if (outcome.state === 'available') await lifecycleOf(route, outcome.lifecycle, where);
    return outcome;
  }

  async function lifecycleOf(route: ProbedRoute, lifecycle: ProbeLifecycle | undefined, where: Record<string, string>) {
    if (!lifecycle) {
      const { cleared } = await probes.clearLifecycle(db, route);
      if (cleared) logger.info(where, `route lifecycle: ${route.provider} no longer announces the end of ${route.providerModelId}; its deprecation is cleared`);
      return;
    }
    const { fresh, deprecatedAt } = await probes.recordLifecycle(db, route, lifecycle);
    if (!fresh) return;
    const when = lifecycle.shutdownAt ? `shuts down on ${lifecycle.shutdownAt}` : 'is deprecated (no shutdown date given)';
    logger.error(
      { ...where, alert: 'route_lifecycle', deprecatedAt, shutdownAt: lifecycle.shutdownAt, signal: lifecycle.signal },
      `route lifecycle: ${route.provider}'s ${route.providerModelId} ${when}; ${route.model} is marked deprecated since ${deprecatedAt}. Set the catalog entry's deprecation: since, retiresAt, replacement (kinds/<kind>/models.ts, docs/api/deprecations.md) before that date`,
    );
  }

  async function runOnce() {
    const found: Array<ProbedRoute & { outcome: ProbeOutcome }> = [];
    // A few at once: a pass stays short however many routes a provider serves.
    let next = 0;
    const lane = async () => {
      while (next < routes.length && !stopping.signal.aborted) {
        const route = routes[next++]!;
        const outcome = await probeOne(route);
        if (outcome) found.push({ ...route, outcome });
      }
    };
    await Promise.all(Array.from({ length: Math.min(PROBE_CONCURRENCY, routes.length) }, lane));
    return found;
  }

  let timer: NodeJS.Timeout | null = null;
  let current: Promise<unknown> | null = null;
  function schedule(delayMs: number) {
    timer = setTimeout(() => {
      const started = Date.now();
      current = runOnce()
        .catch((err: unknown) => logger.warn({ err: (err as Error).message }, 'route probe pass failed'))
        .finally(() => {
          current = null;
          if (timer) schedule(Math.max(0, intervalMs - (Date.now() - started)));
        });
    }, delayMs);
    timer.unref();
  }

  return {
    start: () => {
      // Started again after a stop: the control lease came back to this process.
      if (stopping.signal.aborted) stopping = new AbortController();
      if (intervalMs > 0 && routes.length > 0 && !timer) schedule(intervalMs);
    },
    async stop() {
      stopping.abort();
      if (timer) clearTimeout(timer);
      timer = null;
      await current;
    },
    runOnce,
  };
}
