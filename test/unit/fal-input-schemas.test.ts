// The JSON Schema the fake fal server validates requests against is what the pinned @fal-ai/client's
// published input types (plus the sourced limits of fal's schemas) yield: a client upgrade that changes
// an endpoint's fields shows up here until `npm run fal:schemas` is run and the change reviewed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { falInputSchemasDocument, falInputSchemasPath, publishedLimits } from '../../scripts/fal-input-schemas.js';
import { falEndpoints } from '../../activities/providers/contracts/fal.js';

test('the checked-in fal input schemas match the pinned @fal-ai/client (npm run fal:schemas regenerates them)', () => {
  const checkedIn = JSON.parse(readFileSync(falInputSchemasPath, 'utf8')) as Record<string, unknown>;
  const fresh = falInputSchemasDocument();
  assert.equal(checkedIn.source, fresh.source);
  assert.deepEqual(checkedIn.limits, fresh.limits);
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
