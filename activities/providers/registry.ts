// The provider registry: every live provider of the list (providers/index.ts) with its
// descriptor (keys, output hosts, cancel) and its adapter module, providers/<name>/adapter.js,
// found by the provider's name. Adding a provider is its descriptor, its line in the list, its
// adapter module (exporting `createAdapter`) and its contract: nothing here changes.
import type { LiveProviderName } from '../../shared/job-model.js';
import { providers } from '../../providers/index.js';
import type { AdapterModule, ProvidersConfig } from './adapter-module.js';
import type { ProviderAdapter } from './types.js';

export type { AdapterModule, ProvidersConfig };

type Descriptor = (typeof providers)[number];

/** The module path of a provider's adapter, in its folder, relative to this file. */
export const adapterModulePath = (name: LiveProviderName) => `../../providers/${name}/adapter.js`;

// Loaded once, when the worker (or a test) first imports the registry: adapters are then built
// synchronously, on the first job that needs one.
const adapterModules = new Map<LiveProviderName, AdapterModule>(
  await Promise.all(providers.map(async (p) => [p.name, (await import(adapterModulePath(p.name))) as AdapterModule] as const)),
);

/** A live provider's adapter module (its createAdapter and, when it has one, its model lookup). */
export const adapterModuleOf = (name: LiveProviderName): AdapterModule | undefined => adapterModules.get(name);

/** Each live provider's descriptor, by name. */
export const providerRegistry = Object.fromEntries(providers.map((p) => [p.name, p])) as { readonly [P in Descriptor as P['name']]: P };

/** The adapter of a live provider; throws naming the missing variables (never a value) when its keys are not set. */
export function createProviderAdapter(name: LiveProviderName, config: ProvidersConfig): ProviderAdapter {
  const entry = providerRegistry[name] as Descriptor;
  const missing = entry.keys.filter((k) => !config[k]);
  if (missing.length) throw new Error(`the ${name} provider is not configured here: ${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} not set`);
  const module = adapterModules.get(name);
  if (typeof module?.createAdapter !== 'function')
    throw new Error(`the ${name} provider has no adapter module (providers/${name}/adapter.ts exporting createAdapter)`);
  return module.createAdapter(config);
}
