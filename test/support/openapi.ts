// Validates live answers against the gateway's own OpenAPI document (JSON Schema 2020-12 via ajv):
// the schema listed for (method, path template, status) and the headers it declares.
import assert from 'node:assert/strict';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;
const pointerEscape = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

export interface LiveAnswer {
  status: number;
  text: string;
  body: any;
  headers: Headers;
}

/** Returns an assertion that a live answer matches `doc` (the document served at /v1/openapi.json). */
export function documentValidator(doc: any): (method: string, template: string, res: LiveAnswer) => void {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(doc, 'openapi.json');
  return (method, template, res) => {
    const op = doc.paths[template]?.[method];
    assert.ok(op, `document has ${method.toUpperCase()} ${template}`);
    let response = op.responses[String(res.status)];
    assert.ok(response, `document lists status ${res.status} for ${method.toUpperCase()} ${template}: ${res.text}`);
    let pointer = `#/paths/${pointerEscape(template)}/${method}/responses/${res.status}`;
    if (response.$ref) {
      pointer = response.$ref;
      response = doc.components.responses[pointer.split('/').pop()!];
    }
    for (const [name, header] of Object.entries<any>(response.headers ?? {})) {
      // A header documented with `required: false` is sent only sometimes (Deprecation: on deprecated models).
      const definition = header.$ref ? doc.components.headers[String(header.$ref).split('/').pop()!] : header;
      if (definition?.required === false) continue;
      assert.ok(res.headers.get(name) !== null, `header ${name} on ${res.status} ${template}`);
    }
    const contentType = (res.headers.get('content-type') ?? '').split(';')[0]!;
    assert.ok(response.content?.[contentType], `document lists ${contentType} for ${res.status} ${template}`);
    const validate = ajv.getSchema(`openapi.json${pointer}/content/${pointerEscape(contentType)}/schema`);
    assert.ok(validate, 'schema compiles');
    const ok = validate(contentType === 'application/json' ? res.body : res.text);
    assert.ok(
      ok,
      `${method.toUpperCase()} ${template} ${res.status} does not match the document: ${ajv.errorsText(validate.errors)}\n${res.text.slice(0, 500)}`,
    );
  };
}
