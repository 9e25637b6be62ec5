// Which adapter serves a model in this deployment: a pure function of configuration, used by the
// gateway (to refuse unavailable models and pick the provider task queue) and by the workers.
import type { Config } from './config.js';
import type { JobRoute, ProviderName } from './job-model.js';
import { catalog, routeFor, type LiveProviderName, type ModelRoute } from './catalog.js';

export type RouteMode = 'live' | 'local' | 'unavailable';

/** The configuration variables that hold provider keys. */
export type ProviderKey = 'FAL_KEY' | 'OPENAI_API_KEY' | 'ELEVENLABS_API_KEY' | 'XAI_API_KEY';
type KeyConfig = Pick<Config, 'PROVIDERS_MODE' | ProviderKey>;

/**
 * The keys each live provider needs, written once: routing here (gateway and workers) and the
 * provider registry (activities/providers/registry.ts) read them. The talking-actor pipeline is
 * ElevenLabs speech, then a lipsync on fal.
 */
export const providerKeys = {
  fal: ['FAL_KEY'],
  openai: ['OPENAI_API_KEY'],
  xai: ['XAI_API_KEY'],
  elevenlabs: ['ELEVENLABS_API_KEY', 'FAL_KEY'],
} as const satisfies Record<LiveProviderName, readonly ProviderKey[]>;

const hasKeys = (config: KeyConfig, provider: LiveProviderName) => providerKeys[provider].every((k) => Boolean(config[k]));

/** The keys a route needs to be live. */
export function requiredKeys(route: ModelRoute): readonly ProviderKey[] {
  return providerKeys[route.provider];
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
 * The live provider serving a route with the keys present: the primary when all its keys are set,
 * else the first alternate whose key is set (grok-video: fal, then xAI's own API).
 */
export function liveProviderFor(config: KeyConfig, route: ModelRoute): LiveProviderName | undefined {
  if (hasKeys(config, route.provider)) return route.provider;
  return route.alternates?.find((a) => hasKeys(config, a.provider))?.provider;
}

/** The provider's own model id for the live provider of a route. */
export function providerModelIdFor(route: ModelRoute, provider: LiveProviderName): string {
  return provider === route.provider ? route.providerModelId : (route.alternates?.find((a) => a.provider === provider)?.providerModelId ?? route.providerModelId);
}

/** One log line per model saying how it is routed here (never any key). */
export function describeRoutes(config: KeyConfig): string[] {
  return Object.keys(catalog).map((model) => {
    const mode = routeMode(config, model);
    const route = routeFor(model)!;
    const live = mode === 'live' ? liveProviderFor(config, route)! : undefined;
    return live ? `route ${model}: live via ${live} (${providerModelIdFor(route, live)})` : `route ${model}: ${mode === 'local' ? 'local renderer' : 'unavailable (provider key missing)'}`;
  });
}

/** The models the local renderer serves in this deployment (placeholders instead of a provider). */
export function localRenderedModels(config: KeyConfig): string[] {
  return Object.keys(catalog).filter((model) => routeMode(config, model) === 'local');
}

/**
 * The route a new job of `route`'s model is stored with (adapter, provider model id, deadline), or
 * undefined when the model is unavailable in this deployment. Decided once, at create time.
 */
export function resolveJobRoute(config: KeyConfig, route: ModelRoute): JobRoute | undefined {
  const provider = providerFor(config, route.model);
  if (!provider) return undefined;
  return {
    provider,
    ...(provider === 'local' ? {} : { provider_model_id: providerModelIdFor(route, provider) }),
    deadline_seconds: route.deadlineSeconds,
  };
}
