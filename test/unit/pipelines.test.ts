// The pure rules of pipelines (shared/pipelines.ts): which fields take a reference (every upload
// input of a kind's descriptor, so a new one is covered once declared), what a step outputs, how a
// reference resolves into a step's params, the ids a pipeline derives, and the create body's shape.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newId } from '../../shared/ids.js';
import { kindDescriptors } from '../../kinds/index.js';
import {
  outputCountOf,
  outputTypeOf,
  pipelineCreateBody,
  referenceableFields,
  referencePlaceholder,
  resolveReferences,
  pipelineIdOfStepJob,
  stepOfJob,
  stepJobId,
  stepOutputUploadId,
} from '../../shared/pipelines.js';

test("a kind's referenceable fields are its descriptor's upload inputs, with their media type", () => {
  assert.deepEqual(referenceableFields('video'), [
    { field: 'start_frame_file_id', type: 'image' },
    { field: 'end_frame_file_id', type: 'image' },
    { field: 'reference_file_ids', type: 'image' },
  ]);
  assert.deepEqual(referenceableFields('replace_actor'), [
    { field: 'image_file_id', type: 'image' },
    { field: 'video_file_id', type: 'video' },
  ]);
  assert.deepEqual(referenceableFields('image'), []);
  for (const d of kindDescriptors) {
    const uploads = Object.entries(d.inputs ?? {}).filter(([, i]) => i.from === 'upload');
    assert.equal(referenceableFields(d.kind).length, uploads.length, `${d.kind}: every upload input takes a reference, URL inputs none`);
  }
});

test('what a step outputs: an image step its count of images, every other kind one video', () => {
  assert.equal(outputTypeOf('image'), 'image');
  for (const k of ['video', 'replace_actor', 'talking_actor'] as const) assert.equal(outputTypeOf(k), 'video');
  assert.equal(outputCountOf('image', { count: 3 }), 3);
  assert.equal(outputCountOf('video', { count: 3 }), 1);
});

test('references resolve into the params, in a field or a list element, leaving the rest', () => {
  const params = {
    prompt: 'p',
    start_frame_file_id: referencePlaceholder({ from: 'a', output: 0 }),
    reference_file_ids: ['upl_x', referencePlaceholder({ from: 'b', output: 1 })],
  };
  const resolved = resolveReferences(
    params,
    [
      { from: 'a', output: 0, field: 'start_frame_file_id', index: null },
      { from: 'b', output: 1, field: 'reference_file_ids', index: 1 },
    ],
    (ref) => `upl_${ref.from}${ref.output}`,
  );
  assert.deepEqual(resolved, { prompt: 'p', start_frame_file_id: 'upl_a0', reference_file_ids: ['upl_x', 'upl_b1'] });
  assert.equal(params.start_frame_file_id, '@step:a:0', 'the stored params are not changed');
});

test("a step's job id is fixed per pipeline, step and attempt; its outputs' upload ids per job and index", () => {
  assert.equal(stepJobId('video', 'pl_abc', 1, 0), 'vid_abc-s1-a0');
  assert.notEqual(stepJobId('video', 'pl_abc', 1, 1), stepJobId('video', 'pl_abc', 1, 0));
  assert.equal(stepOutputUploadId('img_abc-s0-a0', 2), 'upl_img_abc-s0-a0-o2');
  // Read back by the event hub: a step job's notification names its pipeline; other jobs name none.
  const id = newId('pl');
  assert.equal(pipelineIdOfStepJob(stepJobId('talking_actor', id, 3, 12)), id);
  assert.equal(pipelineIdOfStepJob(newId('vid')), null);
  assert.equal(pipelineIdOfStepJob('upl_img_abc-s0-a0-o2'), null);
  // Read back by a revival's check (jobs/rules.ts stepRevivalRefusal): the step and attempt too.
  assert.deepEqual(stepOfJob(stepJobId('talking_actor', id, 3, 12)), { pipelineId: id, position: 3, attempt: 12 });
  assert.equal(stepOfJob(newId('vid')), null);
});

test('the create body: step ids by pattern, kinds by name, webhook_events only of pipeline events', () => {
  const ok = { project_id: 'prj_1', steps: [{ id: 'still', kind: 'image', body: { prompt: 'x', model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 } }] };
  assert.equal(pipelineCreateBody.safeParse(ok).success, true);
  assert.equal(pipelineCreateBody.safeParse({ ...ok, steps: [] }).success, false);
  assert.equal(pipelineCreateBody.safeParse({ ...ok, steps: [{ ...ok.steps[0], id: 'Still' }] }).success, false);
  assert.equal(pipelineCreateBody.safeParse({ ...ok, steps: [{ ...ok.steps[0], kind: 'audio' }] }).success, false);
  assert.equal(pipelineCreateBody.safeParse({ ...ok, webhook_url: 'https://example.com/h', webhook_events: ['completed'] }).success, false);
  assert.equal(pipelineCreateBody.safeParse({ ...ok, webhook_url: 'https://example.com/h', webhook_events: ['pipeline.step.failed'] }).success, true);
});
