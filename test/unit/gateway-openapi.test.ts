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
      scope: 'generate',
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
      scope: 'uploads',
      rateClass: 'generate',
      multipart: z.object({ project_id: z.string() }),
      response: z.object({ id: z.string() }),
      errors: [400],
    },
  ];
  const doc = buildOpenApiDocument(ops) as any;

  test('express paths become templated paths with path parameters', () => {
    const op = doc.paths['/v1/things/{thingId}/parts'].post;
    assert.deepEqual(op.parameters, [{ name: 'thingId', in: 'path', required: true, schema: { type: 'string', pattern: '^[^\\u0000]*$' } }]);
    assert.equal(op.operationId, 'post_things_by_thingId_parts');
  });

  test('authenticated operations list 401, 403 (key_scope_denied), 429, 500 and 503 besides their own errors, and wrap data', () => {
    const op = doc.paths['/v1/things/{thingId}/parts'].post;
    assert.deepEqual(Object.keys(op.responses).sort(), ['200', '400', '401', '402', '403', '404', '429', '500', '503']);
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

  test('request strings are documented without NUL; response strings are left alone', () => {
    const op = doc.paths['/v1/things/{thingId}/parts'].post;
    assert.equal(op.requestBody.content['application/json'].schema.properties.name.pattern, '^[^\\u0000]*$');
    assert.equal(op.responses['200'].content['application/json'].schema.properties.data.properties.id.pattern, undefined);
  });

  test('each create links its answer to every operation on the created resource', () => {
    const real = buildOpenApiDocument(allOperations()) as any;
    const links = real.paths['/v1/images/generate'].post.responses['200'].links;
    assert.deepEqual(Object.keys(links).sort(), [
      'delete_images_by_id',
      'get_images_by_id',
      'get_images_by_id_events',
      'get_images_by_id_timeline',
      'get_images_by_id_url',
      'post_images_by_id_cancel',
    ]);
    assert.deepEqual(links.get_images_by_id_url.parameters, { 'path.id': '$response.body#/data/id' });
    const uploadLinks = real.paths['/v1/uploads'].post.responses['200'].links;
    assert.deepEqual(Object.keys(uploadLinks).sort(), ['delete_uploads_by_id', 'get_uploads_by_id', 'post_uploads_by_id_complete']);
    // Every link names an operation of the document.
    const ids = new Set(Object.values<any>(real.paths).flatMap((item) => Object.values<any>(item).map((o) => o.operationId)));
    for (const item of Object.values<any>(real.paths)) {
      for (const o of Object.values<any>(item))
        for (const l of Object.values<any>(o.responses['200']?.links ?? {})) assert.ok(ids.has(l.operationId), l.operationId);
    }
  });

  test('video creates document one rule set per model, from the catalog', () => {
    const real = buildOpenApiDocument(allOperations()) as any;
    const schema = real.paths['/v1/videos/generate'].post.requestBody.content['application/json'].schema;
    const kling = schema.oneOf.find((b: any) => b.properties.model.const === 'kling-2.6');
    assert.deepEqual(kling.properties.duration, { enum: [5, 10] });
    assert.ok(Array.isArray(kling.properties.resolution.enum));
    assert.equal(schema.oneOf.length, new Set(schema.oneOf.map((b: any) => b.properties.model.const)).size);
  });

  test('replace-actor inputs, direct-upload sizes and the multipart file state the rules the routes enforce', () => {
    const real = buildOpenApiDocument(allOperations()) as any;
    const replace = real.paths['/v1/replace-actors/generations'].post.requestBody.content['application/json'].schema;
    assert.deepEqual(
      replace.oneOf.map((b: any) => b.required),
      [
        ['image_file_id', 'video_file_id'],
        ['image_url', 'video_url'],
      ],
    );
    assert.equal(replace.oneOf[0].properties.image_url, false, 'files and URLs do not mix');
    const direct = real.paths['/v1/uploads'].post.requestBody.content['application/json'].schema;
    const imageBranch = direct.oneOf.find((b: any) => b.properties.mime_type.enum.includes('image/png'));
    assert.equal(imageBranch.properties.size.maximum, 10 * 1024 * 1024);
    const multipart = real.paths['/v1/upload'].post.requestBody.content['multipart/form-data'].schema;
    assert.equal(multipart.properties.file.minLength, 1);
  });

  test('the real operation list builds without error and is OpenAPI 3.1', () => {
    const real = buildOpenApiDocument(allOperations()) as any;
    assert.equal(real.openapi, '3.1.0');
    assert.ok(real.paths['/v1/actors'].get);
  });

  test('every operation summary is one short line; the detail is in its description', () => {
    const real = buildOpenApiDocument(allOperations()) as any;
    const long: string[] = [];
    for (const [path, item] of Object.entries<any>({ ...real.paths, ...real.webhooks })) {
      for (const [method, op] of Object.entries<any>(item)) {
        // Swagger UI's collapsed row: one line, one phrase (a sentence break means detail).
        if (typeof op.summary !== 'string' || op.summary.length > 80 || /\n|\. /.test(op.summary)) long.push(`${method.toUpperCase()} ${path}: ${op.summary}`);
      }
    }
    assert.deepEqual(long, []);
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

  test('cursors are <list>.<sort key>.<id>, the form the document states', () => {
    assert.equal(encodeCursor('voices', { sortKey: -3, id: 'voice_a' }), 'voices.-3.voice_a');
    assert.equal(encodeCursor('projects', { createdAtMicros: '1700000000123456', id: 'prj_y' }), 'projects.1700000000123456.prj_y');
    const pattern = (buildOpenApiDocument(allOperations()) as any).paths['/v1/actors'].get.parameters.find((p: any) => p.name === 'cursor').schema.pattern;
    assert.match(encodeCursor('actors', { sortKey: 12, id: 'act_1' }), new RegExp(pattern));
  });

  test('sort keys that would overflow the SQL casts are refused', () => {
    assert.throws(() => decodeProjectCursor('projects.99999999999999999.p'), ApiError);
    assert.throws(() => decodeCatalogCursor('voices', 'voices.2147483648.v'), ApiError);
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
    assert.throws(() => decodeProjectCursor(Buffer.from(JSON.stringify(['projects', '1; drop table', 'p'])).toString('base64url')), ApiError);
  });
});
