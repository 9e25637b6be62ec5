// What every provider adapter module (providers/<name>/adapter.ts, beside its descriptor in the
// provider's folder) exports: \`createAdapter\`, building the adapter from configuration, and, for a
// provider that documents a model get/list endpoint, \`modelLookup\`, the call the route prober makes
// (its own file, providers/<name>/probe.ts, re-exported). The registry (./registry.ts) finds the module
// by the provider's name, so an adapter is registered by existing.
import type { Config } from '../../shared/config.js';
import type { ModelRoute } from '../../shared/catalog.js';
import type { providerConfigSchema } from '../../providers/config.js';
import type { MediaToolsConfig } from './media-tools.js';
import type { ProviderAdapter } from './types.js';

/** What the adapters read: the mode, every provider's variables and (optional) the media tools' caps. */
export type ProvidersConfig = Pick<Config, 'PROVIDERS_MODE' | keyof typeof providerConfigSchema> & Partial<MediaToolsConfig>;

/**
 * What a provider publishes of a served model's end: a deprecation, with the shutdown date when it
 * gives one (YYYY-MM-DD), and what was read, in words.
 */
export interface ProbeLifecycle {
  shutdownAt: string | null;
  signal: string;
}

/** One free call that asks the provider whether it still serves a model (./probes.ts makes it and reads the answer). */
export interface ModelLookup {
  url: string;
  headers: Record<string, string>;
  /** What the call is, for the reason an operator reads (the path, never a key). */
  what: string;
  /** For a list: whether a 200 answer names the model. Absent: a 200 is the model itself. */
  lists?: (body: unknown) => boolean;
  /** Reads the provider's lifecycle signal of the model from a 200 answer, if it publishes one. */
  lifecycle?: (body: unknown) => ProbeLifecycle | undefined;
}

export interface AdapterModule {
  /** Builds the adapter; called only when every key the provider's descriptor lists is set. */
  createAdapter(config: ProvidersConfig): ProviderAdapter;
  /**
   * The lookup of one model the provider serves (the route's \`providerModelId\`; \`kind\`, for a
   * provider that answers image and video models on separate endpoints); absent: the provider has no
   * documented endpoint that says whether a model exists, and its routes are not probed.
   */
  modelLookup?(config: ProvidersConfig, providerModelId: string, kind: ModelRoute['kind']): ModelLookup;
}
