// Each router describes its endpoints once; the same zod schemas validate requests and feed the
// OpenAPI document (api/openapi.ts collects every router's operations).
import type { z } from 'zod';
import type { ApiKeyScope } from '../shared/api-key-rules.js';

/** The rate-limit class an operation spends (api/rate-limit.ts): its own token bucket per key. */
export type RateClass = 'poll' | 'generate' | 'redeliver';

export interface Operation {
  method: 'get' | 'post' | 'put' | 'delete';
  /** Express-style path under the app root, e.g. /v1/images/:id */
  path: string;
  /** One line: Swagger UI shows it in the collapsed row. */
  summary: string;
  /** The detail (rules, error codes, limits), shown when the operation is opened. */
  description?: string;
  tags: string[];
  /** Rate-limit class, or null for unauthenticated routes. */
  rateClass: RateClass | null;
  /**
   * The scope an API key needs to call it (docs/api/api-keys.md): a key whose `scopes` lack it is
   * refused with 403 key_scope_denied before anything else runs (api/endpoint.ts). null only for the
   * unauthenticated operations (rateClass null). Required, so no endpoint can be declared without
   * one; test/unit/endpoint-scopes.test.ts checks every served operation.
   */
  scope: ApiKeyScope | null;
  body?: z.ZodType;
  /** multipart/form-data body: described by this schema of its text fields plus a `file` part. */
  multipart?: z.ZodType;
  query?: z.ZodType;
  /** Request headers the operation reads (documented as header parameters). */
  headers?: z.ZodType;
  /** The `data` payload of the 200 answer (wrapped as `{ data }` unless `raw`). */
  response?: z.ZodType;
  /** Extra top-level properties next to `data` (e.g. next_cursor). */
  responseExtra?: Record<string, z.ZodType>;
  /**
   * Answer is not JSON-wrapped (health, metrics, the document itself), or is a text/event-stream
   * whose events carry `response` as their data.
   */
  raw?: 'json' | 'text' | 'event-stream';
  /** An event stream's SSE event names (default: `status`, a record's stream). */
  streamEvents?: { description: string; pattern?: string };
  /**
   * Path of the resource a 200 answer creates (its `data.id` fills the path's one parameter), e.g.
   * /v1/images/:id: the document links this operation to every operation on that path and below.
   */
  creates?: string;
  /** The 200 answer is also offered as text/csv (`Accept: text/csv`): what its lines hold. */
  csv?: string;
  /** HTTP error statuses this endpoint can answer. */
  errors: number[];
  /** Headers its 200 answer may carry besides the rate-limit ones (names in the document's components.headers). */
  responseHeaders?: string[];
}
