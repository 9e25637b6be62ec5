// The provider part of the configuration schema: each descriptor's variables, built with zod here
// (shared/config.ts merges them), so the descriptors and the provider list stay free of zod at run
// time and workflow code can read provider names without loading it.
import { z } from 'zod';
import { bool, optionalString, optionalUrl, url } from '../shared/config/env-types.js';
import { providers, type Descriptor } from './index.js';
import type { ConfigKit } from './define.js';

/** What a descriptor's `config` is given to declare its variables with. */
const configKit: ConfigKit = { z, optionalString, bool, url, optionalUrl };

type UnionToIntersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;
type ProviderConfigShape = UnionToIntersection<ReturnType<Descriptor['config']>>;

/** Every provider's configuration variables, as zod entries for shared/config.ts's schema. */
export const providerConfigSchema = Object.assign({}, ...providers.map(declared)) as ProviderConfigShape;

/** A provider's variables, its keys marked secret for the configuration reference. */
function declared(p: Descriptor): Record<string, z.ZodType> {
  const vars: Record<string, z.ZodType> = p.config(configKit);
  const publicKeys: readonly string[] = (p as { publicKeys?: readonly string[] }).publicKeys ?? [];
  const secrets = (p.keys as readonly string[]).filter((k) => !publicKeys.includes(k));
  return Object.fromEntries(
    Object.entries(vars).map(([name, schema]) => [name, secrets.includes(name) ? schema.meta({ valueType: 'string (secret)' }) : schema]),
  );
}
