// Request validation with zod: the first problems are reported naming the field and, for enums,
// the allowed values.
import { z } from 'zod';
import { ApiError } from './errors.js';

export function formatIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => {
      const field = i.path.length ? i.path.join('.') : 'body';
      return `${field}: ${i.message}`;
    })
    .join('; ');
}

export function parseOr400<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw new ApiError(400, 'invalid_request', formatIssues(result.error));
  return result.data;
}

/** Postgres text cannot hold NUL: strings carrying one are refused (400) before a query sees them. */
export const NO_NUL_PATTERN = '^[^\\u0000]*$';
/**
 * For the document: a string with a character String.prototype.trim() keeps (and no NUL), i.e. what
 * `.trim().min(1)` accepts. Spelled out rather than \S, which regex engines read differently.
 */
export const NOT_BLANK_PATTERN = '^[^\\u0000]*[^\\u0000\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff][^\\u0000]*$';

/**
 * For the document: what every URL the service fetches or posts to must look like before its host is
 * resolved — https, the default port (no `:`), no credentials (no `@`), and a host whose last label
 * starts with a letter (a name, never an IP literal such as `0` or `10.1`, which URL parsing reads as
 * IPv4). Whether the name resolves to a public address is checked when it is used: that, no pattern
 * can say.
 */
export const PUBLIC_HTTPS_URL_PATTERN = '^https://(?:[0-9A-Za-z-]+\\.)*[A-Za-z][0-9A-Za-z-]*(?:[/?#][!-~]*)?$';

/** Where in a parsed JSON value a string (or key) holds NUL, as a field path; null when none does. */
export function nulPath(value: unknown, path: string[] = []): string | null {
  if (typeof value === 'string') return value.includes('\0') ? path.join('.') || 'body' : null;
  if (!value || typeof value !== 'object') return null;
  for (const [key, v] of Object.entries(value)) {
    if (key.includes('\0')) return [...path, key].join('.');
    const found = nulPath(v, [...path, key]);
    if (found !== null) return found;
  }
  return null;
}
