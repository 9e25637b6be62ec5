// The provider part of the configuration schema: each descriptor's variables, built with zod here
// (shared/config.ts merges them), so the descriptors and the provider list stay free of zod at run
// time and workflow code can read provider names without loading it.
import { z } from 'zod';
import { providers, type Descriptor } from './index.js';
import type { ConfigKit } from './define.js';

/** An optional string variable: unset or empty is undefined. */
const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v === '' ? undefined : v));

/** A boolean variable: true | 1 | yes, false | 0 | no, or unset/empty for the fallback. */
const bool = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no', ''])
    .optional()
    .transform((v) => (v === undefined || v === '' ? fallback : v === 'true' || v === '1' || v === 'yes'));

/** What a descriptor's `config` is given to declare its variables with. */
export const configKit: ConfigKit = { z, optionalString, bool };

type UnionToIntersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;
type ProviderConfigShape = UnionToIntersection<ReturnType<Descriptor['config']>>;

/** Every provider's configuration variables, as zod entries for shared/config.ts's schema. */
export const providerConfigSchema = Object.assign({}, ...providers.map((p) => p.config(configKit))) as ProviderConfigShape;
