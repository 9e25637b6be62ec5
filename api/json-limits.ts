// Limits on the shape of request JSON. Every walk over a client's JSON (NUL check, idempotency
// fingerprint, validation) is bounded by MAX_JSON_DEPTH: the depth is measured on the raw bytes
// before JSON.parse runs, so a body nested 100,000 deep is refused after one linear scan and never
// reaches code that recurses.
import { ApiError } from './errors.js';

/** The deepest nesting of objects and arrays a request body may have (`{}` alone is depth 1). */
export const MAX_JSON_DEPTH = 32;

const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Whether the JSON text nests deeper than `max`. Brackets inside strings do not count; the text
 * need not be valid JSON (the parser refuses what is not). Stops at the first level past `max`.
 */
export function nestsDeeperThan(text: Uint8Array | string, max: number): boolean {
  const at = typeof text === 'string' ? (i: number) => text.charCodeAt(i) : (i: number) => text[i]!;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = at(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > max) return true;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--;
    }
  }
  return false;
}

function tooDeep(): ApiError {
  return new ApiError(400, 'invalid_request', `request body nests objects and arrays deeper than ${MAX_JSON_DEPTH} levels (the limit is ${MAX_JSON_DEPTH})`);
}

/**
 * body-parser's `verify` hook: runs on the raw body before it is parsed. UTF-8 (what clients send)
 * is scanned as bytes: a multi-byte character never contains a bracket or quote byte. Other UTF
 * charsets body-parser accepts are decoded first.
 */
export function verifyJsonDepth(_req: unknown, _res: unknown, body: Buffer, encoding: string | null): void {
  let text: Uint8Array | string = body;
  if (encoding && !/^utf-?8$/i.test(encoding)) {
    try {
      text = new TextDecoder(encoding).decode(body);
    } catch {
      throw new ApiError(415, 'unsupported_media_type', `unsupported charset "${encoding.toUpperCase()}": send UTF-8`);
    }
  }
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) throw tooDeep();
}
