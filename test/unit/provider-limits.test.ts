// What the catalog refuses at create time, as a pure function of route, request and serving provider.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { catalog, requestRefusal, talkingActorScriptLimit, type ModelRoute, type RequestShape } from '../../shared/catalog.js';
import type { ProviderName } from '../../shared/job-model.js';
import { kindOf } from '../../kinds/index.js';
import { lipsyncFrames } from '../../providers/fal/contract.js';

/** The quote's refusal (jobs/quote.ts): the catalog's with the rules of the route's kind. */
const refusal = (route: ModelRoute, p: RequestShape, provider: ProviderName) => requestRefusal(route, p, provider, kindOf(route.kind).requestRules);

test('talking actor: the script cap applies to the live pipeline, not to the local renderer', () => {
  const route = catalog['talking-actor'];
  assert.equal(talkingActorScriptLimit(route), 403);
  assert.equal(refusal(route, { script: 'a'.repeat(403) }, 'elevenlabs'), undefined);
  assert.match(refusal(route, { script: 'a'.repeat(404) }, 'elevenlabs')!, /^script: at most 403 characters/);
  assert.equal(refusal(route, { script: 'a'.repeat(5000) }, 'local'), undefined);
  assert.match(refusal(route, { script: 'a'.repeat(300), voice_options: { speed: 0.7 } }, 'elevenlabs')!, /at most 282 characters at speed 0\.7/);
  assert.equal(refusal(route, { script: 'a'.repeat(480), voice_options: { speed: 1.2 } }, 'elevenlabs'), undefined);
});

test('talking-actor-v3 (Eleven v3, 5,000 characters a request) is held to the same lipsync cap, the tighter of the two', () => {
  const route = catalog['talking-actor-v3'];
  assert.deepEqual(route.speech, { provider: 'elevenlabs', modelId: 'eleven_v3' });
  assert.equal(route.providerModelId, 'fal-ai/infinitalk', 'the same lipsync as talking-actor');
  assert.equal(talkingActorScriptLimit(route), 403);
  assert.equal(refusal(route, { script: 'a'.repeat(403) }, 'elevenlabs'), undefined);
  assert.match(
    refusal(route, { script: 'a'.repeat(404) }, 'elevenlabs')!,
    /^script: at most 403 characters at speed 1 here \(talking-actor-v3 lipsyncs at most 28\.8 seconds/,
  );
});

test('sora-2 (Veo 3.1 Fast) refuses more reference images than it can use; sora-2-pro takes several', () => {
  assert.equal(refusal(catalog['sora-2'], { reference_file_ids: ['a'] }, 'fal'), undefined);
  assert.equal(refusal(catalog['sora-2'], { reference_file_ids: ['a', 'b'] }, 'fal'), 'reference_file_ids: sora-2 takes at most 1 reference image');
  assert.equal(refusal(catalog['sora-2-pro'], { reference_file_ids: ['a', 'b', 'c'], duration: 8 }, 'fal'), undefined);
  assert.match(refusal(catalog['kling-3.0'], { reference_file_ids: ['a', 'b'] }, 'local')!, /at most 1 reference image/);
});

test('reference images and a start frame together are refused (no endpoint takes both)', () => {
  assert.match(
    refusal(catalog['veo-3.1'], { reference_file_ids: ['a'], start_frame_file_id: 'f' }, 'fal')!,
    /cannot combine reference images with start_frame_file_id/,
  );
});

test('Veo 3.1 takes at most 3 reference images (sora-2-pro routes to it), whatever serves the model', () => {
  for (const model of ['veo-3.1', 'sora-2-pro'] as const) {
    assert.equal(refusal(catalog[model], { reference_file_ids: ['a', 'b', 'c'], duration: 8 }, 'fal'), undefined);
    assert.equal(
      refusal(catalog[model], { reference_file_ids: ['a', 'b', 'c', 'd'], duration: 8 }, 'fal'),
      `reference_file_ids: ${model} takes at most 3 reference images`,
    );
    assert.match(refusal(catalog[model], { reference_file_ids: ['a', 'b', 'c', 'd'], duration: 8 }, 'local')!, /at most 3 reference images/);
  }
});

test("Veo 3.1 with reference images is 8 s only (fal's reference-to-video schema); without them 4, 6 and 8 stay", () => {
  for (const model of ['veo-3.1', 'sora-2-pro'] as const) {
    for (const duration of [4, 6]) {
      assert.equal(refusal(catalog[model], { reference_file_ids: ['a'], duration }, 'fal'), `duration: ${model} with reference images supports 8 seconds`);
      assert.equal(refusal(catalog[model], { duration }, 'fal'), undefined);
      assert.equal(refusal(catalog[model], { start_frame_file_id: 's', duration }, 'fal'), undefined);
    }
    assert.equal(refusal(catalog[model], { reference_file_ids: ['a', 'b'], duration: 8 }, 'fal'), undefined);
  }
  // sora-2 (Veo 3.1 Fast) has no reference endpoint: its one reference is the first frame, any duration.
  assert.equal(refusal(catalog['sora-2'], { reference_file_ids: ['a'], duration: 4 }, 'fal'), undefined);
});

test('Kling prompts are capped at 2,500 characters (fal v2.6 and v3 schemas), counted as code points', () => {
  for (const model of ['kling-3.0', 'kling-2.6'] as const) {
    assert.equal(refusal(catalog[model], { prompt: 'a'.repeat(2500) }, 'fal'), undefined);
    assert.equal(refusal(catalog[model], { prompt: 'a'.repeat(2501) }, 'fal'), `prompt: ${model} takes at most 2500 characters; this prompt has 2501`);
    // 2,500 emoji are 5,000 UTF-16 units but 2,500 characters to fal.
    assert.equal(refusal(catalog[model], { prompt: '🎬'.repeat(2500) }, 'fal'), undefined);
  }
  assert.equal(refusal(catalog['veo-3.1'], { prompt: 'a'.repeat(4000), duration: 8 }, 'fal'), undefined);
});

test('Nano Banana 2 needs at least 3 prompt characters', () => {
  const route = catalog['nano-banana-2'];
  assert.equal(refusal(route, { prompt: 'ab' }, 'fal'), 'prompt: nano-banana-2 needs at least 3 characters; this prompt has 2');
  assert.equal(refusal(route, { prompt: 'abc' }, 'fal'), undefined);
  assert.equal(refusal(catalog['seedream-4.5'], { prompt: 'ab' }, 'fal'), undefined);
  // A provider's prompt bounds do not bind the local renderer.
  assert.equal(refusal(route, { prompt: 'x' }, 'local'), undefined);
  assert.equal(refusal(catalog['kling-3.0'], { prompt: 'a'.repeat(4000) }, 'local'), undefined);
});

test('an end frame needs a first frame, and a model without end-frame input refuses one (it would be dropped but priced)', () => {
  assert.match(refusal(catalog['kling-3.0'], { end_frame_file_id: 'e' }, 'fal')!, /^end_frame_file_id: kling-3\.0 needs start_frame_file_id/);
  assert.match(refusal(catalog['veo-3.1'], { end_frame_file_id: 'e', reference_file_ids: ['a'], duration: 8 }, 'fal')!, /needs start_frame_file_id/);
  assert.equal(refusal(catalog['kling-3.0'], { start_frame_file_id: 's', end_frame_file_id: 'e' }, 'fal'), undefined);
  // Where a lone reference is the first frame (no reference endpoint), it opens the video.
  assert.equal(refusal(catalog['sora-2'], { reference_file_ids: ['a'], end_frame_file_id: 'e', duration: 8 }, 'fal'), undefined);
  assert.equal(refusal(catalog['grok-video'], { start_frame_file_id: 's', end_frame_file_id: 'e' }, 'fal'), 'end_frame_file_id: grok-video takes no end frame');
});

test('InfiniteTalk frame counts are 4n+1 like the ones fal documents (41, 145, 721), enough for the whole speech', () => {
  assert.equal(lipsyncFrames(0.5), 41);
  assert.equal(lipsyncFrames(2), 53); // 51 needed
  assert.equal(lipsyncFrames(5.76), 145); // fal's default count
  assert.equal(lipsyncFrames(28.8), 721);
  assert.equal(lipsyncFrames(28.81), undefined);
  for (let s = 0.1; s <= 28.8; s += 0.37) {
    const f = lipsyncFrames(s)!;
    assert.equal((f - 1) % 4, 0, `${s} s → ${f}`);
    assert.ok(f >= Math.ceil(s * 25) + 1 && f <= 721, `${s} s → ${f}`);
  }
});

test('Seedance 2.0 takes a start frame (fal image to video) and an end frame; more than one reference image is refused', () => {
  for (const model of ['seedance-2.0', 'seedance-2.0-fast'] as const) {
    const route = catalog[model];
    assert.equal(refusal(route, { prompt: 'a kite', duration: 15 }, 'fal'), undefined);
    assert.equal(refusal(route, { start_frame_file_id: 's' }, 'fal'), undefined);
    assert.equal(refusal(route, { start_frame_file_id: 's', end_frame_file_id: 'e' }, 'fal'), undefined);
    assert.equal(refusal(route, { reference_file_ids: ['a'] }, 'fal'), undefined);
    assert.match(refusal(route, { reference_file_ids: ['a', 'b'] }, 'fal')!, /^reference_file_ids: /);
    assert.equal(route.secondaryModelIds.imageToVideo, route.providerModelId.replace('text-to-video', 'image-to-video'));
  }
});

test('Grok Imagine Video 1.5 is image to video only: a job needs its first frame (a start frame or one reference image), on every provider', () => {
  const route = catalog['grok-video-1.5'];
  for (const provider of ['fal', 'local'] as const) {
    assert.match(refusal(route, { prompt: 'a kite', duration: 6 }, provider)!, /^start_frame_file_id: grok-video-1\.5 is image to video only/);
    assert.equal(refusal(route, { start_frame_file_id: 's', duration: 6 }, provider), undefined);
    assert.equal(refusal(route, { reference_file_ids: ['a'], duration: 6 }, provider), undefined);
  }
  assert.match(refusal(route, { reference_file_ids: ['a', 'b'] }, 'fal')!, /^start_frame_file_id: /);
  assert.match(refusal(route, { start_frame_file_id: 's', end_frame_file_id: 'e' }, 'fal')!, /^end_frame_file_id: grok-video-1\.5 takes no end frame/);
  // Models with a text-to-video endpoint take a job without any image.
  assert.equal(refusal(catalog['grok-video'], { prompt: 'a kite', duration: 6 }, 'fal'), undefined);
});
