// Hostile JSON bodies (deep nesting, huge flat arrays) and the operations of a served OpenAPI
// document that take a JSON body, so that a new JSON endpoint is covered without touching a test.
import assert from 'node:assert/strict';

type Json = any;

export interface JsonOperation {
  operationId: string;
  method: string;
  /** The path with its parameters filled with an id nothing has. */
  path: string;
  /** A top-level field of the body's schema: an object-valued one when there is one. */
  field: string;
}

function resolve(doc: Json, schema: Json): Json {
  let s = schema;
  for (let i = 0; s?.$ref && i < 10; i++)
    s = s.$ref
      .split('/')
      .slice(1)
      .reduce((node: Json, part: string) => node?.[part], doc);
  return s ?? {};
}

/** A schema's properties, looking through $ref and the first branch of allOf / oneOf / anyOf. */
function propertiesOf(doc: Json, schema: Json): Record<string, Json> {
  const s = resolve(doc, schema);
  if (s.properties) return s.properties;
  for (const k of ['allOf', 'oneOf', 'anyOf']) if (Array.isArray(s[k]) && s[k].length) return propertiesOf(doc, s[k][0]);
  return {};
}

export function jsonOperations(doc: Json): JsonOperation[] {
  const out: JsonOperation[] = [];
  for (const [path, item] of Object.entries<Json>(doc.paths)) {
    for (const [method, op] of Object.entries<Json>(item)) {
      const schema = op?.requestBody?.content?.['application/json']?.schema;
      if (!schema) continue;
      const props = propertiesOf(doc, schema);
      const names = Object.keys(props);
      const field = names.find((n) => resolve(doc, props[n]).type === 'object') ?? names[0] ?? 'a';
      out.push({ operationId: op.operationId, method: method.toUpperCase(), path: path.replace(/\{[^}]+\}/g, 'id_that_does_not_exist'), field });
    }
  }
  assert.ok(out.length > 0, 'the document lists operations with a JSON body');
  return out;
}

/** `[[[…]]]` nested `depth` deep. */
export function nestedArrays(depth: number): string {
  return '['.repeat(depth) + ']'.repeat(depth);
}

/** Bodies no endpoint may answer with anything but a clean 4xx, for one operation's field. */
export function hostileBodies(field: string): Array<{ name: string; body: string }> {
  return [
    { name: 'nested 100,000 deep', body: `{"a":${nestedArrays(100_000)}}` },
    { name: `nested 5,000 deep inside "${field}"`, body: `{${JSON.stringify(field)}:${nestedArrays(5_000)}}` },
    // About 0.9 MB: under the 1 MB body cap, so it is parsed and validated.
    { name: `a flat array of 450,000 numbers in "${field}"`, body: `{${JSON.stringify(field)}:[${'0,'.repeat(449_999)}0]}` },
  ];
}
