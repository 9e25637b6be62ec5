// The JSON Schema the fake fal server validates requests against is what the pinned @fal-ai/client's
// published input types (plus the sourced limits of fal's schemas) yield: a client upgrade that changes
// an endpoint's fields shows up here until `npm run fal:schemas` is run and the change reviewed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { falInputSchemasDocument, falInputSchemasPath, publishedLimits, transcribedInputs } from '../../scripts/generate/fal-input-schemas.js';
import { falEndpoints } from '../../providers/fal/contract.js';

test('the checked-in fal input schemas match the pinned @fal-ai/client (npm run fal:schemas regenerates them)', () => {
  const checkedIn = JSON.parse(readFileSync(falInputSchemasPath, 'utf8')) as Record<string, unknown>;
  const fresh = falInputSchemasDocument();
  assert.equal(checkedIn.source, fresh.source);
  assert.deepEqual(checkedIn.limits, fresh.limits);
  assert.deepEqual(checkedIn.transcribed, fresh.transcribed);
  assert.deepEqual(checkedIn.endpoints, fresh.endpoints);
  assert.deepEqual(Object.keys(fresh.endpoints as object).sort(), Object.keys(falEndpoints).sort(), 'one schema per endpoint the adapters call');
});

test('every published limit has a source, and lands on its field', () => {
  const endpoints = falInputSchemasDocument().endpoints as Record<string, { properties: Record<string, Record<string, unknown>> }>;
  for (const [id, fields] of Object.entries(publishedLimits)) {
    for (const [field, limit] of Object.entries(fields)) {
      assert.ok(limit.source.length > 20, `${id}.${field} names its source`);
      for (const [k, v] of Object.entries(limit.rule)) assert.deepEqual(endpoints[id]!.properties[field]![k], v, `${id}.${field}.${k}`);
    }
  }
  assert.deepEqual(endpoints['fal-ai/veo3.1/reference-to-video']!.properties.duration!.enum, ['8s']);
  assert.equal(endpoints['fal-ai/veo3.1/reference-to-video']!.properties.image_urls!.maxItems, 3);
});

test('an endpoint the pinned client does not type is transcribed with its source, refusing fields fal does not list', () => {
  const endpoints = falInputSchemasDocument().endpoints as Record<string, { properties: Record<string, unknown>; additionalProperties: boolean }>;
  for (const [id, t] of Object.entries(transcribedInputs)) {
    // fal's own page of the endpoint: its llms.txt or the model page itself (fal.ai/models/<id>).
    assert.match(t.source, new RegExp(`fal\\.ai/models/${id.replace(/[.]/g, '\\.')}(/llms\\.txt)?\\b`), `${id} names fal's own page`);
    assert.equal(endpoints[id]!.additionalProperties, false);
  }
  const turbo = endpoints['fal-ai/kling-video/v3/turbo/pro/text-to-video']!;
  assert.deepEqual(Object.keys(turbo.properties).sort(), ['aspect_ratio', 'duration', 'multi_prompt', 'prompt']);
  assert.deepEqual(
    turbo.properties.multi_prompt,
    endpoints['fal-ai/kling-video/v3/pro/text-to-video']!.properties.multi_prompt,
    "the element type is Kling 3.0 Pro's",
  );
});
