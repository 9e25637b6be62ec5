// Which adapter serves each model in this deployment (the adapters themselves come from registry.ts). PROVIDERS_MODE=local
// serves every model with the local renderer; "live" serves a model through its provider when that
// provider's key(s) are configured and refuses it otherwise; "auto" falls back to the local renderer.
// A route may list alternates (grok-video: fal, then xAI) and a speech step on another provider
// (talking actor: ElevenLabs speaks, fal lipsyncs). Which provider serves a model is decided by routing.ts (pure,
// shared with the gateway); this module builds and caches the adapters.
import type { ProviderName } from '../../workflows/definitions.js';
import { catalog, type LiveProviderName } from '../../shared/catalog.js';
import { providerFor as providerForModel, routeMode as routeModeOf, type RouteMode } from '../../shared/routing.js';
import type { ProviderAdapter } from './types.js';
import { createProviderAdapter, type ProvidersConfig } from './registry.js';

export type { ProvidersConfig };
export type { RouteMode };

export interface Providers {
  adapterFor(name: ProviderName): ProviderAdapter;
  routeMode(model: string): RouteMode;
  /** The adapter that serves the model now: 'local', a live provider, or undefined when unavailable/unknown. */
  providerFor(model: string): ProviderName | undefined;
  /** Models served by a real provider in this deployment. */
  liveRoutes(): string[];
}

export function createProviders(config: ProvidersConfig, localAdapter: ProviderAdapter): Providers {
  const adapters = new Map<ProviderName, ProviderAdapter>([['local', localAdapter]]);
  const routeMode = (model: string): RouteMode => routeModeOf(config, model);

  return {
    adapterFor(name) {
      let a = adapters.get(name);
      if (!a) {
        a = createProviderAdapter(name as LiveProviderName, config);
        adapters.set(name, a);
      }
      return a;
    },
    routeMode,
    providerFor: (model) => providerForModel(config, model),
    liveRoutes() {
      return Object.keys(catalog).filter((m) => routeMode(m) === 'live');
    },
  };
}

/** Lines for the worker start log: how each model is served. Names key variables, never their values. */
export { describeRoutes, liveProviderFor } from '../../shared/routing.js';
