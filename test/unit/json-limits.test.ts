// The walks over request JSON: the depth scan that runs before parsing, and the NUL check and
// idempotency fingerprint, which must not recurse (and whose output must not change: stored
// fingerprints are compared for 24 h).
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_JSON_DEPTH, nestsDeeperThan, verifyJsonDepth } from '../../api/json-limits.js';
import { canonicalJson } from '../../api/idempotency.js';
import { nulPath } from '../../api/validate.js';
import { ApiError } from '../../api/errors.js';

const nested = (depth: number, inner = '1') => '['.repeat(depth) + inner + ']'.repeat(depth);

/** A parsed value nested `depth` deep, built without recursion. */
function deepValue(depth: number, leaf: unknown): unknown {
  let v: unknown = leaf;
  for (let i = 0; i < depth; i++) v = i % 2 ? [v] : { k: v };
  return v;
}

describe('nestsDeeperThan', () => {
  test(`depth ${MAX_JSON_DEPTH} passes, ${MAX_JSON_DEPTH + 1} does not; objects and arrays both count`, () => {
    assert.equal(nestsDeeperThan(nested(MAX_JSON_DEPTH), MAX_JSON_DEPTH), false);
    assert.equal(nestsDeeperThan(nested(MAX_JSON_DEPTH + 1), MAX_JSON_DEPTH), true);
    const objects = (d: number) => '{"a":'.repeat(d) + '1' + '}'.repeat(d);
    assert.equal(nestsDeeperThan(objects(MAX_JSON_DEPTH), MAX_JSON_DEPTH), false);
    assert.equal(nestsDeeperThan(objects(MAX_JSON_DEPTH + 1), MAX_JSON_DEPTH), true);
  });

  test('siblings do not add up: depth is nesting, not count', () => {
    const wide = `{"a":[${Array.from({ length: 1000 }, () => nested(20)).join(',')}]}`;
    assert.equal(nestsDeeperThan(wide, MAX_JSON_DEPTH), false);
  });

  test('brackets inside strings, escaped quotes included, do not count', () => {
    const text = JSON.stringify({ a: '['.repeat(100), b: 'say \\"[[[[" and {{{{', c: ['\\', '"[[['] });
    assert.equal(nestsDeeperThan(text, 3), false);
    assert.equal(nestsDeeperThan(Buffer.from(text), 3), false);
  });

  test('100,000 deep is refused as bytes, at once', () => {
    const body = Buffer.from(`{"a":${nested(100_000)}}`);
    assert.equal(nestsDeeperThan(body, MAX_JSON_DEPTH), true);
  });

  test('the verify hook throws a 400 naming the limit; other UTF charsets are decoded first', () => {
    const deep = `{"a":${nested(40)}}`;
    assert.throws(
      () => verifyJsonDepth(null, null, Buffer.from(deep), 'utf-8'),
      (err: unknown) => err instanceof ApiError && err.status === 400 && err.code === 'invalid_request' && err.message.includes(String(MAX_JSON_DEPTH)),
    );
    assert.doesNotThrow(() => verifyJsonDepth(null, null, Buffer.from('{"a":[[1]]}'), 'utf-8'));
    assert.throws(() => verifyJsonDepth(null, null, Buffer.from(deep, 'utf16le'), 'utf-16le'), ApiError);
    assert.doesNotThrow(() => verifyJsonDepth(null, null, Buffer.from('{"a":"[[[["}', 'utf16le'), 'utf-16le'));
  });
});

describe('canonicalJson', () => {
  test('keys sorted at every level, arrays in order, scalars as JSON.stringify writes them (unchanged output)', () => {
    const value = { b: [3, { z: null, a: 'x"y' }, true], a: { d: 1.5, c: [] }, é: {}, '10': 1, '2': 2 };
    assert.equal(canonicalJson(value), '{"10":1,"2":2,"a":{"c":[],"d":1.5},"b":[3,{"a":"x\\"y","z":null},true],"é":{}}');
    assert.equal(canonicalJson([]), '[]');
    assert.equal(canonicalJson('s'), '"s"');
    assert.equal(canonicalJson(undefined), 'null');
    assert.equal(canonicalJson({ a: undefined }), '{"a":null}');
    assert.equal(canonicalJson({ project_id: 'p', fileName: 'f.png', fileSha256: 'abc' }), '{"fileName":"f.png","fileSha256":"abc","project_id":"p"}');
  });

  test('a value nested 100,000 deep is serialised without exhausting the stack', () => {
    const out = canonicalJson(deepValue(100_000, 1));
    assert.equal(out.length, 50_000 * '{"k":'.length + 50_000 * 2 + 1 + 50_000 * 1);
  });
});

describe('nulPath', () => {
  test('names the first field holding NUL, in a key or a string at any depth', () => {
    assert.equal(nulPath({ a: 'ok', b: { c: ['x', 'y\0'] } }), 'b.c.1');
    assert.equal(nulPath({ a: { 'k\0': 1 } }), 'a.k\0');
    assert.equal(nulPath('\0'), 'body');
    assert.equal(nulPath({ a: [1, null, true, { b: 'clean' }] }), null);
  });

  test('a value nested 100,000 deep is walked without exhausting the stack', () => {
    assert.equal(nulPath(deepValue(100_000, 'clean')), null);
    assert.equal(nulPath(deepValue(100_000, 'bad\0')), Array.from({ length: 50_000 }, () => '0.k').join('.'));
  });
});
