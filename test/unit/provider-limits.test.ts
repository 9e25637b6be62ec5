// What the catalog refuses at create time, as a pure function of route, request and serving provider.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { catalog, requestRefusal, talkingActorScriptLimit } from '../../shared/catalog.js';

test('talking actor: the script cap applies to the live pipeline, not to the local renderer', () => {
  const route = catalog['talking-actor'];
  assert.equal(talkingActorScriptLimit(route), 403);
  assert.equal(requestRefusal(route, { script: 'a'.repeat(403) }, 'elevenlabs'), undefined);
  assert.match(requestRefusal(route, { script: 'a'.repeat(404) }, 'elevenlabs')!, /^script: at most 403 characters/);
  assert.equal(requestRefusal(route, { script: 'a'.repeat(5000) }, 'local'), undefined);
  assert.match(requestRefusal(route, { script: 'a'.repeat(300), voice_options: { speed: 0.7 } }, 'elevenlabs')!, /at most 282 characters at speed 0\.7/);
  assert.equal(requestRefusal(route, { script: 'a'.repeat(480), voice_options: { speed: 1.2 } }, 'elevenlabs'), undefined);
});

test('sora-2 (Veo 3.1 Fast) refuses more reference images than it can use; sora-2-pro takes several', () => {
  assert.equal(requestRefusal(catalog['sora-2'], { reference_file_ids: ['a'] }, 'fal'), undefined);
  assert.equal(requestRefusal(catalog['sora-2'], { reference_file_ids: ['a', 'b'] }, 'fal'), 'reference_file_ids: sora-2 takes at most 1 reference image');
  assert.equal(requestRefusal(catalog['sora-2-pro'], { reference_file_ids: ['a', 'b', 'c'] }, 'fal'), undefined);
  assert.match(requestRefusal(catalog['kling-3.0'], { reference_file_ids: ['a', 'b'] }, 'local')!, /at most 1 reference image/);
});

test('reference images and a start frame together are refused (no endpoint takes both)', () => {
  assert.match(requestRefusal(catalog['veo-3.1'], { reference_file_ids: ['a'], start_frame_file_id: 'f' }, 'fal')!, /cannot combine reference images with start_frame_file_id/);
});
