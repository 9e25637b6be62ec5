// Pure parts of the gateway: the OpenAPI builder and discovery cursors.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { buildOpenApiDocument, allOperations } from '../../api/openapi.js';
import type { Operation } from '../../api/operations.js';
import { decodeCatalogCursor, decodeProjectCursor, encodeCursor } from '../../api/routes/discovery.js';
import { ApiError } from '../../api/errors.js';

describe('OpenAPI builder', () => {
  const shared = z.object({ code: z.string() }).meta({ id: 'Shared' });
  const ops: Operation[] = [
    {
      method: 'post',
      path: '/v1/things/:thingId/parts',
      summary: 'Create a part',
      tags: ['Things'],
      rateClass: 'generate',
      body: z.object({ name: z.string().max(10), shared }),
      response: z.object({ id: z.string(), shared }),
      errors: [402, 404],
    },
    {
      method: 'post',
      path: '/v1/files',
      summary: 'Upload',
      tags: ['Things'],
      rateClass: 'generate',
      multipart: z.object({ project_id: z.string() }),
      response: z.object({ id: z.string() }),
      errors: [400],
    },
  ];
  const doc = buildOpenApiDocument(ops) as any;

  test('express paths become templated paths with path parameters', () => {
    const op = doc.paths['/v1/things/{thingId}/parts'].post;
    assert.deepEqual(op.parameters, [{ name: 'thingId', in: 'path', required: true, schema: { type: 'string' } }]);
    assert.equal(op.operationId, 'post_things_by_thingId_parts');
  });

  test('authenticated operations list 401, 429, 500 and 503 besides their own errors, and wrap data', () => {
    const op = doc.paths['/v1/things/{thingId}/parts'].post;
    assert.deepEqual(Object.keys(op.responses).sort(), ['200', '400', '401', '402', '404', '429', '500', '503']);
    assert.ok(op.responses['503'].headers['Retry-After'], 'an outage tells when to retry');
    assert.equal(op.responses['503'].headers['RateLimit-Remaining'], undefined, 'an outage is answered before the limiter counts');
    assert.deepEqual(op.responses['200'].content['application/json'].schema.required, ['data']);
    assert.ok(op.responses['429'].headers['Retry-After']);
    assert.ok(op.responses['404'].headers['RateLimit-Remaining']);
  });

  test('schemas with an id move to components.schemas and refs point there', () => {
    assert.ok(doc.components.schemas.Shared);
    const text = JSON.stringify(doc.paths);
    assert.ok(!text.includes('#/$defs/'));
    assert.ok(!text.includes('"$schema"'));
  });

  test('multipart bodies get a binary file part', () => {
    const schema = doc.paths['/v1/files'].post.requestBody.content['multipart/form-data'].schema;
    assert.equal(schema.properties.file.type, 'string');
    assert.deepEqual(schema.required.sort(), ['file', 'project_id']);
  });

  test('the real operation list builds without error and is OpenAPI 3.1', () => {
    const real = buildOpenApiDocument(allOperations()) as any;
    assert.equal(real.openapi, '3.1.0');
    assert.ok(real.paths['/v1/actors'].get);
  });
});

describe('discovery cursors', () => {
  test('round-trip', () => {
    assert.deepEqual(decodeCatalogCursor('actors', encodeCursor('actors', { sortKey: 7, id: 'act_x' })), { sortKey: 7, id: 'act_x' });
    assert.deepEqual(decodeProjectCursor(encodeCursor('projects', { createdAtMicros: '1700000000123456', id: 'prj_y' })), {
      createdAtMicros: '1700000000123456',
      id: 'prj_y',
    });
  });

  test('foreign, tampered or garbage cursors are a 400 invalid_request', () => {
    const bad = [
      encodeCursor('voices', { sortKey: 1, id: 'v' }),
      Buffer.from(JSON.stringify(['actors', 'one', 'a'])).toString('base64url'),
      Buffer.from(JSON.stringify(['actors', 1.5, 'a'])).toString('base64url'),
      Buffer.from('{').toString('base64url'),
      'a b',
      '',
    ];
    for (const c of bad) {
      assert.throws(
        () => decodeCatalogCursor('actors', c),
        (e: unknown) => e instanceof ApiError && e.status === 400 && e.code === 'invalid_request',
        c,
      );
    }
    assert.throws(() => decodeProjectCursor(Buffer.from(JSON.stringify(['projects', "1; drop table", 'p'])).toString('base64url')), ApiError);
  });
});
