// Which adapter serves a model in this deployment: a pure function of configuration, used by the
// gateway (to refuse unavailable models and pick the provider task queue) and by the workers.
import type { JobRoute, ProviderName, RouteChoice } from './job-model.js';
import { catalog, routeFor, routeTakes, sameOutput, type LiveProviderName, type ModelRoute, type RequestShape } from './catalog.js';
import { providerCancel, providerKeys, providerSecrets, type ProviderCancel, type ProviderKey } from '../providers/index.js';

// The provider facts routing reads are declared by each provider (providers/<name>/descriptor.ts).
export { providerCancel, providerKeys, type ProviderCancel, type ProviderKey };

export type RouteMode = 'live' | 'local' | 'unavailable';

/**
 * What routing reads: the mode, the keys and (optional, so key-only callers still fit) the failover
 * settings. Declared here rather than picked from shared/config.ts's Config, which validates
 * PROVIDER_ROUTES with this module: the dependency runs one way, config → routing.
 */
type KeyConfig = { PROVIDERS_MODE: 'local' | 'live' | 'auto' } & { readonly [K in ProviderKey]?: string | undefined } & {
  PROVIDER_FAILOVER?: boolean;
  PROVIDER_ROUTES?: string | undefined;
  PROVIDER_KEYS_SET?: string | undefined;
};

/**
 * A provider's keys are set here, or (PROVIDER_KEYS_SET, names only) on the deployment's provider
 * fleets: a gateway routes jobs to a provider without holding its key.
 */
const hasKeys = (config: KeyConfig, provider: LiveProviderName) =>
  providerKeys[provider].every((k) => Boolean(config[k]) || keysSetElsewhere(config.PROVIDER_KEYS_SET).has(k));

function keysSetElsewhere(value: string | undefined): ReadonlySet<string> {
  let set = keysSetCache.get(value ?? '');
  if (!set) {
    set = new Set(
      (value ?? '')
        .split(',')
        .map((k) => k.trim())
        .filter(Boolean),
    );
    keysSetCache.set(value ?? '', set);
  }
  return set;
}
const keysSetCache = new Map<string, ReadonlySet<string>>();

/**
 * The secrets a process is given by what its roles read, and nothing else (least privilege): the
 * provider keys go to that provider's fleet only (a talking actor's speech on ElevenLabs', its lipsync on fal's),
 * the key that decrypts webhook signing secrets to the fleet that signs deliveries, to the admin CLI
 * (it stores a new workspace secret) and to the gateways (they encrypt the signing secret of a
 * webhook endpoint a customer creates or rotates, /v1/webhook-endpoints). The key is symmetric, so a
 * gateway could open every stored secret too: the trade-off and the public-key follow-up are in
 * docs/operations/security.md. Gateways route on PROVIDER_KEYS_SET and never call a provider; the
 * workflows, io, fetch and reconciler roles call none either. The database URL and the
 * storage secret are every process's and are not listed. docker-compose.yml and the prod profile
 * (scripts/stack-prod.sh) are checked against this map (test/unit/compose.test.ts).
 */
type ProcessRole = 'gateway' | 'admin' | 'workflows' | 'io' | 'fetch' | 'webhooks' | 'reconciler' | `provider:${ProviderName}`;
export const roleScopedSecrets = [...providerSecrets, 'WEBHOOK_SECRETS_KEY'] as const;
type RoleScopedSecret = (typeof roleScopedSecrets)[number];

function secretsOfRole(role: ProcessRole | string): RoleScopedSecret[] {
  if (role === 'webhooks' || role === 'admin' || role === 'gateway') return ['WEBHOOK_SECRETS_KEY'];
  if (!role.startsWith('provider:')) return [];
  const provider = role.slice('provider:'.length);
  if (!(provider in providerKeys)) return [];
  return (providerKeys[provider as LiveProviderName] as readonly string[]).filter((k): k is RoleScopedSecret =>
    (roleScopedSecrets as readonly string[]).includes(k),
  );
}

/**
 * The worker roles whose activities run media tools (ffmpeg, ffprobe, espeak-ng on tenants' files,
 * activities/providers/media-tools.ts): storing outputs (io) and the adapters that conform inputs
 * or render locally. Their processes are the ones the media sandbox must isolate
 * (docs/operations/media-sandbox.md); the Helm chart and compose grant the sandbox's privileges to
 * their fleets alone.
 */
export const mediaToolRoles = ['io', 'provider:fal', 'provider:alibaba', 'provider:local'] as const;

/** Whether a process with these roles runs media tools. */
export function runsMediaTools(roles: readonly string[]): boolean {
  return roles.some((r) => (mediaToolRoles as readonly string[]).includes(r));
}

/** The role-scoped secrets a process running these roles reads. */
export function secretsOfRoles(roles: readonly (ProcessRole | string)[]): RoleScopedSecret[] {
  return roleScopedSecrets.filter((s) => roles.some((r) => secretsOfRole(r).includes(s)));
}

/** Why a production process with these roles must not start (a secret its roles read is missing), if it must not. */
export function missingRoleSecrets(
  config: { NODE_ENV?: string | undefined; WEBHOOK_SECRETS_KEY?: string | undefined },
  roles: readonly (ProcessRole | string)[],
): string[] {
  if (config.NODE_ENV !== 'production' || !secretsOfRoles(roles).includes('WEBHOOK_SECRETS_KEY') || config.WEBHOOK_SECRETS_KEY) return [];
  const readers = roles.filter((r) => secretsOfRole(r).includes('WEBHOOK_SECRETS_KEY'));
  return [`WEBHOOK_SECRETS_KEY: required when NODE_ENV=production for the ${readers.join(', ')} role (its own key, not the storage secret)`];
}

export function routeMode(config: KeyConfig, model: string): RouteMode {
  const route = routeFor(model);
  if (!route) return 'unavailable';
  if (config.PROVIDERS_MODE === 'local') return 'local';
  if (liveProviderFor(config, route)) return 'live';
  return config.PROVIDERS_MODE === 'auto' ? 'local' : 'unavailable';
}

/** The adapter serving `model` now, or undefined when the route is unavailable here. */
export function providerFor(config: KeyConfig, model: string): ProviderName | undefined {
  const mode = routeMode(config, model);
  if (mode === 'unavailable') return undefined;
  return mode === 'local' ? 'local' : liveProviderFor(config, routeFor(model)!);
}

/**
 * PROVIDER_ROUTES as model → provider order ("grok-video=xai,fal;veo-3.1=fal"). Throws naming the
 * entry that is not a model of the catalog with those providers among its routes.
 */
export function parseRouteOrder(value: string | undefined): Map<string, LiveProviderName[]> {
  const cached = parsedOrders.get(value ?? '');
  if (cached) return cached;
  const order = new Map<string, LiveProviderName[]>();
  for (const entry of (value ?? '')
    .split(';')
    .map((e) => e.trim())
    .filter(Boolean)) {
    const [model, list] = entry.split('=').map((p) => p.trim());
    const route = model ? routeFor(model) : undefined;
    const providers = (list ?? '')
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean);
    const known = route ? catalogRoutes(route).map((r) => r.provider) : [];
    const disabled = route?.disabledRoutes?.find((r) => providers.includes(r.provider));
    if (disabled) throw new Error(`PROVIDER_ROUTES: "${entry}": ${disabled.provider}'s route of ${model} is not offered: ${disabled.reason}`);
    if (!route || providers.length === 0 || providers.some((p) => !known.includes(p as LiveProviderName))) {
      throw new Error(`PROVIDER_ROUTES: "${entry}" is not model=provider[,provider] with providers among the model's routes`);
    }
    order.set(model!, providers as LiveProviderName[]);
  }
  parsedOrders.set(value ?? '', order);
  return order;
}
const parsedOrders = new Map<string, Map<string, LiveProviderName[]>>();

/** Every route the catalog knows for a model, primary first, whatever keys are set. */
export function catalogRoutes(route: ModelRoute): RouteChoice[] {
  return [
    { provider: route.provider, provider_model_id: route.providerModelId },
    ...(route.alternates ?? []).map((a) => ({ provider: a.provider, provider_model_id: a.providerModelId })),
  ];
}

/**
 * The live routes of a model here, in the order jobs try them: the catalog's (primary, then
 * alternates) or PROVIDER_ROUTES', keeping those whose keys are set. Without failover only the
 * first is used, but the order still decides which one that is (grok-video with only XAI_API_KEY: xAI).
 */
export function liveRoutesFor(config: KeyConfig, route: ModelRoute): RouteChoice[] {
  // A route with a speech step is live only where the speech provider is too.
  if (route.speech && !hasKeys(config, route.speech.provider)) return [];
  const all = catalogRoutes(route);
  const order = parseRouteOrder(config.PROVIDER_ROUTES).get(route.model);
  const ordered = order ? order.map((p) => all.find((r) => r.provider === p)!) : all;
  return ordered.filter((r) => hasKeys(config, r.provider));
}

/**
 * Whether a cancel of a job of `route` at `provider` is honored: the provider's policy, except that a
 * route with a speech step paid for the speech before its request was queued (never).
 */
export function routeCancel(route: ModelRoute | undefined, provider: LiveProviderName): ProviderCancel {
  return route?.speech ? 'never' : providerCancel[provider];
}

/** The live provider a new job of a route starts on (the first live route), or undefined when none is. */
export function liveProviderFor(config: KeyConfig, route: ModelRoute): LiveProviderName | undefined {
  return liveRoutesFor(config, route)[0]?.provider;
}

/** The routes a job may fail over across: all live ones when failover is on and there are two or more. */
export function failoverRoutesFor(config: KeyConfig, route: ModelRoute): RouteChoice[] | undefined {
  if (config.PROVIDERS_MODE === 'local' || config.PROVIDER_FAILOVER === false) return undefined;
  const routes = liveRoutesFor(config, route);
  return routes.length > 1 ? routes : undefined;
}

/** The provider's own model id for the live provider of a route. */
function providerModelIdFor(route: ModelRoute, provider: LiveProviderName): string {
  return provider === route.provider
    ? route.providerModelId
    : (route.alternates?.find((a) => a.provider === provider)?.providerModelId ?? route.providerModelId);
}

/** One log line per model saying how it is routed here (never any key). */
export function describeRoutes(config: KeyConfig): string[] {
  return Object.keys(catalog).map((model) => {
    const mode = routeMode(config, model);
    const route = routeFor(model)!;
    const live = mode === 'live' ? liveProviderFor(config, route)! : undefined;
    const failover = failoverRoutesFor(config, route);
    if (failover) return `route ${model}: live via ${failover.map((r) => `${r.provider} (${r.provider_model_id})`).join(', then ')}`;
    return live
      ? `route ${model}: live via ${live} (${providerModelIdFor(route, live)})`
      : `route ${model}: ${mode === 'local' ? 'local renderer' : 'unavailable (provider key missing)'}`;
  });
}

/** The models the local renderer serves in this deployment (placeholders instead of a provider). */
export function localRenderedModels(config: KeyConfig): string[] {
  return Object.keys(catalog).filter((model) => routeMode(config, model) === 'local');
}

/**
 * The route a new job of `route`'s model is stored with (adapter, provider model id, deadline), or
 * undefined when the model is unavailable in this deployment. Decided once, at create time. With the
 * job's request, only routes that can take its inputs count (veo-3.1 on Google: text-to-video, 8 s):
 * the job starts on the first of them and fails over across them only, so a job only one route can
 * take does not fail over. When none can, the first live route is kept and requestRefusal says why.
 * An alternate also needs to store the same output as the first route (shared/catalog.ts sameOutput).
 */
export function resolveJobRoute(config: KeyConfig, route: ModelRoute, request?: RequestShape): JobRoute | undefined {
  let provider = providerFor(config, route.model);
  if (!provider) return undefined;
  let all = provider === 'local' ? undefined : failoverRoutesFor(config, route);
  if (request && provider !== 'local') {
    const first = liveRoutesFor(config, route).find((r) => routeTakes(route, r.provider, request));
    if (first) provider = first.provider;
    // An alternate must also store what the first route stores for this request (format, aspect
    // ratio, resolution or size, as both document it): a route that would deliver another shape
    // is never offered.
    const start = provider;
    all = all?.filter((r) => routeTakes(route, r.provider, request) && sameOutput(route, start, r.provider, request));
  }
  const routes = all && all.length > 1 ? all : undefined;
  return {
    provider,
    ...(provider === 'local' ? {} : { provider_model_id: providerModelIdFor(route, provider) }),
    deadline_seconds: route.deadlineSeconds,
    ...(routes ? { routes } : {}),
  };
}
