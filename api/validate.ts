// Request validation with zod: the first problems are reported naming the field and, for enums,
// the allowed values.
import { z } from 'zod';
import { ApiError } from './errors.js';

function formatIssues(error: z.ZodError): string {
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
// The document's string patterns the kinds' create bodies use too (kinds/define.ts).
export { PUBLIC_HTTPS_URL_PATTERN } from '../kinds/define.js';
export { NOT_BLANK_PATTERN } from '../shared/text-patterns.js';

/**
 * Where in a parsed JSON value a string (or key) holds NUL, as a field path; null when none does.
 * Iterative: the walk's cost is the body's size, never the call stack's depth.
 */
export function nulPath(value: unknown): string | null {
  interface Node {
    value: unknown;
    key: string | null;
    parent: Node | null;
  }
  const pathOf = (n: Node, last?: string): string => {
    const keys: string[] = last === undefined ? [] : [last];
    for (let p: Node | null = n; p && p.key !== null; p = p.parent) keys.push(p.key);
    return keys.reverse().join('.') || 'body';
  };
  const todo: Node[] = [{ value, key: null, parent: null }];
  while (todo.length > 0) {
    const node = todo.pop()!;
    const v = node.value;
    if (typeof v === 'string') {
      if (v.includes('\0')) return pathOf(node);
    } else if (v && typeof v === 'object') {
      const entries = Object.entries(v);
      // Pushed in reverse so the first field is looked at first, as a reader would.
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i]!;
        if (key.includes('\0')) return pathOf(node, key);
        todo.push({ value: child, key, parent: node });
      }
    }
  }
  return null;
}

/**
 * An integer query parameter checked by `schema`: only a decimal numeral ("12", "-3") is read as a
 * number. z.coerce took "", " 7", "0x10" and "1e3" (Number() reads them), so a malformed value
 * passed as 0 or another number instead of being refused (400).
 */
export function queryInteger<S extends z.ZodNumber>(schema: S) {
  return z.preprocess((v) => (typeof v === 'string' && /^-?[0-9]{1,16}$/.test(v) ? Number(v) : v), schema);
}

export const DEFAULT_PAGE_LIMIT = 50;
const MAX_PAGE_LIMIT = 100;

/** A list's `limit` query parameter: 1 to MAX_PAGE_LIMIT, DEFAULT_PAGE_LIMIT when absent. */
export const pageLimitQuery = (what = 'page size') =>
  queryInteger(z.number().int().min(1).max(MAX_PAGE_LIMIT)).optional().describe(`${what}, 1 to ${MAX_PAGE_LIMIT} (default ${DEFAULT_PAGE_LIMIT})`);
