// The provider registry: which adapter serves each model in this deployment. PROVIDERS_MODE=local
// serves every model with the local renderer; "live" serves a model through its provider when that
// provider's key(s) are configured and refuses it otherwise; "auto" falls back to the local renderer.
// A route may list alternates (grok-video: fal, then xAI) and extra providers a pipeline needs
// (talking actor: ElevenLabs and fal). Which provider serves a model is decided by routing.ts (pure,
// shared with the gateway); this module builds and caches the adapters.
import type { Config } from '../../shared/config.js';
import type { ProviderName } from '../../workflows/definitions.js';
import { catalog, type LiveProviderName } from '../../shared/catalog.js';
import { providerFor as providerForModel, routeMode as routeModeOf, type RouteMode } from '../../shared/routing.js';
import type { ProviderAdapter } from './types.js';
import { createFalAdapter } from './fal.js';
import { createOpenAIAdapter } from './openai.js';
import { createElevenLabsAdapter } from './elevenlabs.js';
import { createXaiAdapter } from './xai.js';

export type ProvidersConfig = Pick<
  Config,
  'PROVIDERS_MODE' | 'FAL_KEY' | 'FAL_QUEUE_URL' | 'OPENAI_API_KEY' | 'OPENAI_BASE_URL' | 'ELEVENLABS_API_KEY' | 'ELEVENLABS_BASE_URL' | 'XAI_API_KEY' | 'XAI_BASE_URL'
> &
  Partial<Pick<Config, 'FAL_CDN_REQUIRES_KEY' | 'FFMPEG_PATH'>>;

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
  const falConfig = () => ({ key: config.FAL_KEY!, queueUrl: config.FAL_QUEUE_URL, cdnRequiresKey: config.FAL_CDN_REQUIRES_KEY ?? false, ffmpegPath: config.FFMPEG_PATH });

  function build(name: LiveProviderName): ProviderAdapter {
    const missing = (v: string) => new Error(`the ${name} provider is not configured here: ${v} is not set`);
    switch (name) {
      case 'fal':
        if (!config.FAL_KEY) throw missing('FAL_KEY');
        return createFalAdapter(falConfig());
      case 'openai':
        if (!config.OPENAI_API_KEY) throw missing('OPENAI_API_KEY');
        return createOpenAIAdapter({ key: config.OPENAI_API_KEY, baseUrl: config.OPENAI_BASE_URL });
      case 'xai':
        if (!config.XAI_API_KEY) throw missing('XAI_API_KEY');
        return createXaiAdapter({ key: config.XAI_API_KEY, baseUrl: config.XAI_BASE_URL });
      case 'elevenlabs':
        if (!config.ELEVENLABS_API_KEY) throw missing('ELEVENLABS_API_KEY');
        if (!config.FAL_KEY) throw missing('FAL_KEY (the talking-actor lipsync runs on fal)');
        return createElevenLabsAdapter({ key: config.ELEVENLABS_API_KEY, baseUrl: config.ELEVENLABS_BASE_URL, fal: falConfig() });
    }
  }

  const routeMode = (model: string): RouteMode => routeModeOf(config, model);

  return {
    adapterFor(name) {
      let a = adapters.get(name);
      if (!a) {
        a = build(name as LiveProviderName);
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
