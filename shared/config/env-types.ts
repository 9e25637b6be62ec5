// The value types of environment variables: each parses the raw string (unset and empty mean "use
// the default") and carries a `valueType` in its metadata (not `type`, which a JSON Schema export
// would take for its own keyword), printed by the configuration reference.
import { isIP } from 'node:net';
import { z } from 'zod';

export const bool = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no', ''])
    .optional()
    .transform((v) => (v === undefined || v === '' ? fallback : v === 'true' || v === '1' || v === 'yes'))
    .meta({ valueType: 'boolean (`true`/`1`/`yes`, `false`/`0`/`no`)' });

const range = (min: number, max: number) => (max === Number.MAX_SAFE_INTEGER ? `integer ≥ ${min}` : `integer ${min}–${max}`);

/** An integer from `min` to `max`; unset or empty is `unset` (the default, or null for a feature that is off). */
const integer = <U extends number | null>(unset: U, min: number, max: number) =>
  z
    .string()
    .optional()
    .transform((v, ctx): number | U => {
      if (v === undefined || v === '') return unset;
      const n = Number(v);
      if (!Number.isInteger(n) || n < min || n > max) {
        ctx.addIssue({ code: 'custom', message: `must be an integer from ${min} to ${max}` });
        return z.NEVER;
      }
      return n;
    })
    .meta({ valueType: range(min, max) });

export const int = (fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER) => integer<number>(fallback, min, max);

/** An optional integer: unset or empty is null (the feature is off). */
export const optionalInt = (min: number, max: number) => integer(null, min, max);

export const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v === '' ? undefined : v))
  .meta({ valueType: 'string' });

export const url = z.url().meta({ valueType: 'URL' });

/** An optional URL: unset or empty is undefined. */
export const optionalUrl = () => optionalString.pipe(z.url().optional()).meta({ valueType: 'URL' });

const proxyNames = ['loopback', 'linklocal', 'uniquelocal'];
/** TRUST_PROXY: false (none), a hop count, or a list of addresses, CIDR ranges and range names. */
export const trustProxy = z
  .string()
  .optional()
  .transform((v, ctx): false | number | string[] => {
    const s = (v ?? '').trim();
    if (s === '' || s === 'false') return false;
    if (/^\d+$/.test(s)) return Number(s);
    const items = s.split(',').map((x) => x.trim());
    const valid = (item: string) => {
      if (proxyNames.includes(item)) return true;
      const [addr = '', bits, ...rest] = item.split('/');
      const family = isIP(addr);
      return family !== 0 && rest.length === 0 && (bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128)));
    };
    if (items.every(valid)) return items;
    ctx.addIssue({
      code: 'custom',
      message: `must be empty, a hop count, or a comma-separated list of addresses, CIDR ranges and ${proxyNames.join('/')} (never "true": every peer could then forge its address)`,
    });
    return z.NEVER;
  })
  .meta({ valueType: 'empty, a hop count, or addresses, CIDR ranges and `loopback`/`linklocal`/`uniquelocal`, comma-separated' });
