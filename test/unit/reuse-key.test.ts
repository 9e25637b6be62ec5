// The reuse key (jobs/reuse.ts): equal for requests that ask the same thing however their JSON is
// ordered, different for any parameter or input content that differs; uploads count by content.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalJson, reuseKeyOf, sourceUsable } from '../../jobs/reuse.js';

const video = (params: Record<string, unknown>) => ({ kind: 'video', model: 'veo-3.1', params: { prompt: 'a lighthouse', duration: 4, ...params } });
const none = new Map<string, string>();

test('canonical JSON sorts every object’s keys and drops undefined', () => {
  assert.equal(canonicalJson({ b: 1, a: { d: [2, { f: 1, e: 0 }], c: undefined } }), '{"a":{"d":[2,{"e":0,"f":1}]},"b":1}');
});

test('the key ignores key order and absent fields, and follows every parameter', () => {
  const base = reuseKeyOf(video({ seed: 7 }), none);
  assert.equal(reuseKeyOf({ model: 'veo-3.1', params: { seed: 7, duration: 4, prompt: 'a lighthouse', audio: undefined }, kind: 'video' }, none), base);
  assert.notEqual(reuseKeyOf(video({ seed: 8 }), none), base, 'another seed');
  assert.notEqual(reuseKeyOf(video({ seed: 7, duration: 6 }), none), base, 'another output spec');
  assert.notEqual(reuseKeyOf({ ...video({ seed: 7 }), model: 'veo-3.1-lite' }, none), base, 'another model');
  assert.notEqual(reuseKeyOf({ ...video({ seed: 7 }), kind: 'image' }, none), base, 'another kind');
});

test('uploads count by their content: two uploads of one file are one input, one upload id with new content is not', () => {
  const a = reuseKeyOf(
    video({ start_frame_file_id: 'up_1', reference_file_ids: ['up_2'] }),
    new Map([
      ['up_1', 'etag-x'],
      ['up_2', 'etag-y'],
    ]),
  );
  const sameFiles = reuseKeyOf(
    video({ start_frame_file_id: 'up_9', reference_file_ids: ['up_8'] }),
    new Map([
      ['up_9', 'etag-x'],
      ['up_8', 'etag-y'],
    ]),
  );
  assert.equal(sameFiles, a);
  const otherContent = reuseKeyOf(
    video({ start_frame_file_id: 'up_1', reference_file_ids: ['up_2'] }),
    new Map([
      ['up_1', 'etag-z'],
      ['up_2', 'etag-y'],
    ]),
  );
  assert.notEqual(otherContent, a);
  const swappedRoles = reuseKeyOf(
    video({ start_frame_file_id: 'up_2', reference_file_ids: ['up_1'] }),
    new Map([
      ['up_1', 'etag-x'],
      ['up_2', 'etag-y'],
    ]),
  );
  assert.notEqual(swappedRoles, a, 'the same files in other roles');
});

test('a source answers only while completed with its outputs kept: deleted, expired, failed or empty is a miss', () => {
  const now = Date.parse('2026-12-03T12:00:00Z');
  const day = 86_400_000;
  const source = {
    id: 'img_1',
    status: 'completed' as const,
    outputs: [{ key: 'jobs/img_1/output-1.png', content_type: 'image/png', size: 10 }],
    outputs_removed_at: null,
    finished_at: new Date(now - 2 * day),
    updated_at: new Date(now - 2 * day),
  };
  assert.equal(sourceUsable(source, null, now), true, 'no retention: kept');
  assert.equal(sourceUsable(source, 3, now), true, 'within its retention');
  assert.equal(sourceUsable(source, 1, now), false, 'expired after 1 day');
  assert.equal(sourceUsable({ ...source, outputs_removed_at: new Date(now - day) }, null, now), false, 'deleted');
  assert.equal(sourceUsable({ ...source, status: 'failed' }, null, now), false, 'failed');
  assert.equal(sourceUsable({ ...source, outputs: [] }, null, now), false, 'no outputs');
});
