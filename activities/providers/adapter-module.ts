// What every provider adapter module (activities/providers/<name>.ts, named after its descriptor in
// shared/providers/) exports: `createAdapter`, building the adapter from configuration. The registry
// (./registry.ts) finds the module by the provider's name, so an adapter is registered by existing.
import type { Config } from '../../shared/config.js';
import type { providerConfigSchema } from '../../shared/providers/config.js';
import type { MediaToolsConfig } from './media-tools.js';
import type { ProviderAdapter } from './types.js';

/** What the adapters read: the mode, every provider's variables and (optional) the media tools' caps. */
export type ProvidersConfig = Pick<Config, 'PROVIDERS_MODE' | keyof typeof providerConfigSchema> & Partial<MediaToolsConfig>;

export interface AdapterModule {
  /** Builds the adapter; called only when every key the provider's descriptor lists is set. */
  createAdapter(config: ProvidersConfig): ProviderAdapter;
}
