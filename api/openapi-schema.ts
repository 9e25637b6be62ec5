// From zod to the OpenAPI document: a schema converted to JSON Schema with its $defs moved into
// components.schemas (names kept apart when two differ), request strings stated NUL-free, and
// Express paths in OpenAPI's form.
import { z } from 'zod';
import { NO_NUL_PATTERN } from './validate.js';

type JsonObject = Record<string, unknown>;

/** Converts a zod schema and moves its $defs into components.schemas (refs rewritten). */
export function converter(schemas: JsonObject) {
  const rewrite = (node: unknown, renames: Map<string, string>): unknown => {
    if (Array.isArray(node)) return node.map((n) => rewrite(n, renames));
    if (!node || typeof node !== 'object') return node;
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string' && v.startsWith('#/$defs/')) {
        const name = v.slice('#/$defs/'.length);
        out[k] = `#/components/schemas/${renames.get(name) ?? name}`;
      } else {
        out[k] = rewrite(v, renames);
      }
    }
    return out;
  };
  return (schema: z.ZodType, io: 'input' | 'output'): JsonObject => {
    const raw = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as JsonObject;
    delete raw.$schema;
    const defs = (raw.$defs ?? {}) as JsonObject;
    delete raw.$defs;
    const renames = new Map<string, string>();
    for (const name of Object.keys(defs)) {
      let target = name;
      for (let i = 2; schemas[target] !== undefined && JSON.stringify(schemas[target]) !== JSON.stringify(defs[name]); i++) target = `${name}_${i}`;
      renames.set(name, target);
    }
    for (const [name, def] of Object.entries(defs)) schemas[renames.get(name)!] = rewrite(def, renames);
    const out = rewrite(raw, renames) as JsonObject;
    if (io === 'input') forbidNul(out);
    return out;
  };
}

/**
 * Request strings never carry NUL (the gateway refuses it: Postgres text cannot store one): every
 * free string of a request schema says so. A string with its own pattern, enum or const states
 * its exact form already.
 */
function forbidNul(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(forbidNul);
  if (!node || typeof node !== 'object') return;
  const s = node as JsonObject;
  if (s.type === 'string' && s.pattern === undefined && s.enum === undefined && s.const === undefined && s.contentMediaType === undefined)
    s.pattern = NO_NUL_PATTERN;
  Object.values(s).forEach(forbidNul);
}

/** `/v1/images/:id` → `/v1/images/{id}` and its path parameter names. */
export function openApiPath(path: string): { path: string; params: string[] } {
  const params: string[] = [];
  const converted = path.replace(/:([A-Za-z0-9_]+)/g, (_m, name: string) => {
    params.push(name);
    return `{${name}}`;
  });
  return { path: converted, params };
}

const DEFAULT_UPLOAD_MAX_RETENTION_SECONDS = 90 * 86_400;

/**
 * The deployment's bounds, stated where the requests they bound are: every JSON `expires_in_seconds`
 * an upload request takes gets UPLOAD_MAX_RETENTION_SECONDS, a pipeline's `steps` PIPELINE_MAX_STEPS.
 */
export function statesDeploymentBounds(paths: Record<string, JsonObject>, opts: { uploadMaxRetentionSeconds?: number; pipelineMaxSteps?: number }): void {
  const maxRetention = opts.uploadMaxRetentionSeconds ?? DEFAULT_UPLOAD_MAX_RETENTION_SECONDS;
  for (const [path, item] of Object.entries(paths)) {
    for (const op of Object.values(item) as JsonObject[]) {
      const schema = (op.requestBody as { content?: Record<string, { schema?: JsonObject }> } | undefined)?.content?.['application/json']?.schema;
      const properties = schema?.properties as Record<string, JsonObject> | undefined;
      if (properties?.expires_in_seconds?.type === 'integer') properties.expires_in_seconds.maximum = maxRetention;
      if (path === '/v1/pipelines' && properties?.steps && opts.pipelineMaxSteps !== undefined) properties.steps.maxItems = opts.pipelineMaxSteps;
    }
  }
}
