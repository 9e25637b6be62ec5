// The published schema of a pipeline's steps (shared/pipelines.ts): each step's body is its kind's
// create body, derived from it (every field but project_id and the webhook fields), where exactly
// the kind's upload inputs (referenceableFields) also take a reference {from, output}; the gateway
// parses with that schema and words its refusals naming the step and the field
// (api/routes/pipelines/checks.ts); the document publishes it, one branch per kind, with the
// deployment's PIPELINE_MAX_STEPS.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { kindDescriptors, type JobKind } from '../../kinds/index.js';
import { pipelineCreateBody, pipelineResumeBody, referenceableFields, stepBodySchemas, stepExcludedFields } from '../../shared/pipelines.js';
import { parsePipelineCreate, parseResumeBody, parseStepBody } from '../../api/routes/pipelines/checks.js';
import { allOperations, buildOpenApiDocument } from '../../api/openapi.js';
import { ApiError } from '../../api/errors.js';

type Json = Record<string, any>;

/** A body each kind's step accepts (no upload field set, so each test sets the one it is about). */
const validBodies: Record<JobKind, Record<string, unknown>> = {
  image: { prompt: 'a lighthouse', model: 'nano-banana-2', aspect_ratio: '16:9', count: 1 },
  video: { prompt: 'a pan', model: 'seedance-1.5' },
  replace_actor: { image_file_id: 'upl_a', video_file_id: 'upl_b' },
  talking_actor: { actor_id: 'act_1', script: 'Hello.' },
};
const ref = { from: 'still', output: 0 };

/** The refusal a parse throws: status, code and message. */
function refusedBy(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ApiError, String(err));
    return err;
  }
  assert.fail('the body was accepted');
}

test("each kind's step body has every field of its create body but project_id and the webhook fields", () => {
  for (const d of kindDescriptors) {
    const own = Object.keys((d.body as unknown as z.ZodObject).shape);
    const step = Object.keys(stepBodySchemas[d.kind].shape);
    assert.deepEqual(
      step,
      own.filter((f) => !(f in stepExcludedFields)),
      d.kind,
    );
    assert.ok(stepBodySchemas[d.kind].safeParse(validBodies[d.kind]).success, `${d.kind}: a valid body parses`);
    for (const field of Object.keys(stepExcludedFields)) {
      assert.equal(stepBodySchemas[d.kind].safeParse({ ...validBodies[d.kind], [field]: 'x' }).success, false, `${d.kind}.${field} is refused`);
    }
  }
});

test('a reference is taken exactly where referenceableFields says, as the value or a list element', () => {
  let referenceable = 0;
  for (const d of kindDescriptors) {
    const schema = stepBodySchemas[d.kind];
    const takes = new Set(referenceableFields(d.kind).map((r) => r.field));
    for (const field of Object.keys(schema.shape)) {
      // A list field takes references as elements; every other field as its value.
      const isList = schema.shape[field] instanceof z.ZodOptional && schema.shape[field].unwrap() instanceof z.ZodArray;
      const body = { ...validBodies[d.kind], [field]: isList ? [ref] : ref };
      // replace_actor takes its two files together: a reference stands for one of them.
      const parsed = schema.safeParse(body);
      assert.equal(parsed.success, takes.has(field), `${d.kind}.${field}: ${takes.has(field) ? 'takes' : 'refuses'} a reference`);
      if (takes.has(field)) referenceable++;
    }
  }
  assert.equal(
    referenceable,
    kindDescriptors.reduce((n, d) => n + referenceableFields(d.kind).length, 0),
    'every referenceable field was met',
  );
  // The kind's own rules still hold beside a reference: a list keeps its length, replace_actor its files-or-URLs rule.
  assert.equal(stepBodySchemas.video.safeParse({ ...validBodies.video, reference_file_ids: Array(5).fill(ref) }).success, false);
  assert.equal(stepBodySchemas.replace_actor.safeParse({ image_file_id: ref, video_url: 'https://example.com/v.mp4' }).success, false);
  assert.equal(stepBodySchemas.video.safeParse({ ...validBodies.video, start_frame_file_id: { from: 'still', output: 0, extra: 1 } }).success, false);
});

test("a step's body is its kind's: an image step with a video's upload field is refused, naming the step and the field", () => {
  const create = (steps: unknown[]) => () => parsePipelineCreate({ project_id: 'prj_1', steps });
  const image = { id: 'still', kind: 'image', body: validBodies.image };
  assert.deepEqual(parsePipelineCreate({ project_id: 'prj_1', steps: [image] }).steps[0]!.body, validBodies.image);
  let e = refusedBy(create([image, { id: 'again', kind: 'image', body: { ...validBodies.image, start_frame_file_id: ref } }]));
  assert.equal(e.status, 400);
  assert.equal(e.message, 'steps[1].body: Unrecognized key: "start_frame_file_id"');
  // The same body under kind video is a video step's.
  assert.ok(
    pipelineCreateBody.safeParse({
      project_id: 'prj_1',
      steps: [image, { id: 'clip', kind: 'video', body: { ...validBodies.video, start_frame_file_id: ref } }],
    }).success,
  );

  e = refusedBy(create([{ ...image, body: { ...validBodies.image, project_id: 'prj_1' } }]));
  assert.equal(e.message, "steps[0].body.project_id: a step's project is the pipeline's");
  e = refusedBy(create([{ ...image, body: { ...validBodies.image, webhook_url: 'https://example.com/h' } }]));
  assert.match(e.message, /^steps\[0\]\.body\.webhook_url: a step has no webhook of its own/);
  e = refusedBy(create([{ ...image, body: { ...validBodies.image, aspect_ratio: '5:4' } }]));
  assert.match(e.message, /^steps\[0\]\.body\.aspect_ratio: /);
  e = refusedBy(create([{ ...image, kind: 'audio' }]));
  assert.match(e.message, /^steps\[0\]\.kind: .*'image' \| 'video' \| 'replace_actor' \| 'talking_actor'/);
  e = refusedBy(create([{ ...image, body: { ...validBodies.image, model: 'no-such-model' } }]));
  assert.equal(e.code, 'invalid_model');
  assert.match(e.message, /^steps\[0\]\.body: model no-such-model is not supported/);
});

test("a malformed reference is worded by the reference's fields, a value of neither type by both", () => {
  const clip = (body: Record<string, unknown>) => () =>
    parsePipelineCreate({ project_id: 'prj_1', steps: [{ id: 'clip', kind: 'video', body: { ...validBodies.video, ...body } }] });
  assert.equal(
    refusedBy(clip({ start_frame_file_id: { from: 'still' } })).message,
    'steps[0].body.start_frame_file_id.output: Invalid input: expected number, received undefined',
  );
  assert.match(refusedBy(clip({ reference_file_ids: ['upl_1', { from: 'Still', output: 0 }] })).message, /^steps\[0\]\.body\.reference_file_ids\.1\.from: /);
  assert.equal(refusedBy(clip({ end_frame_file_id: 3 })).message, 'steps[0].body.end_frame_file_id: Invalid input: expected string or object');
});

test("a resume's new body is parsed with the failed step's kind, its refusals naming `body` and the field", () => {
  assert.deepEqual(parseResumeBody({}), { body: undefined });
  assert.ok(pipelineResumeBody.safeParse({ body: validBodies.talking_actor }).success, 'the published union takes any kind');
  // The union refuses it; the kind's own parse words why.
  const raw = parseResumeBody({ body: { ...validBodies.image, aspect_ratio: '5:4' } });
  assert.match(refusedBy(() => parseStepBody('image', raw.body, ['body'])).message, /^body\.aspect_ratio: /);
  // A body of another kind: valid in the union, refused for the failed step's kind.
  const other = parseResumeBody({ body: validBodies.talking_actor });
  assert.match(refusedBy(() => parseStepBody('image', other.body, ['body'])).message, /(^|; )body: Unrecognized key: "actor_id"/);
  assert.deepEqual(parseStepBody('video', { ...validBodies.video, start_frame_file_id: ref }, ['body']).start_frame_file_id, ref);
  assert.match(refusedBy(() => parseResumeBody({ body: validBodies.image, extra: 1 })).message, /Unrecognized key: "extra"/);
});

test('the document publishes one step branch per kind, its body the kind step body, with the deployment PIPELINE_MAX_STEPS', () => {
  const doc = buildOpenApiDocument(allOperations(), { pipelineMaxSteps: 5 }) as Json;
  const schema = doc.paths['/v1/pipelines'].post.requestBody.content['application/json'].schema;
  assert.equal(schema.properties.steps.maxItems, 5);
  assert.equal(
    (buildOpenApiDocument(allOperations()) as Json).paths['/v1/pipelines'].post.requestBody.content['application/json'].schema.properties.steps.maxItems,
    32,
  );
  const branches: Json[] = schema.properties.steps.items.oneOf;
  assert.deepEqual(
    branches.map((b) => b.properties.kind.const),
    kindDescriptors.map((d) => d.kind),
  );
  for (const d of kindDescriptors) {
    const body = branches.find((b) => b.properties.kind.const === d.kind)!.properties.body;
    assert.equal(body.additionalProperties, false);
    assert.deepEqual(Object.keys(body.properties), Object.keys(stepBodySchemas[d.kind].shape), d.kind);
    for (const field of Object.keys(stepExcludedFields)) assert.equal(body.properties[field], undefined, `${d.kind}: no ${field}`);
    assert.equal(JSON.stringify(body).includes('webhook_events'), false, `${d.kind}: no rule about webhook fields left`);
    for (const { field } of referenceableFields(d.kind)) {
      const f = body.properties[field];
      const options: Json[] = (f.items ?? f).anyOf;
      assert.ok(
        options.some((o) => o.required?.join() === 'from,output'),
        `${d.kind}.${field} takes a reference`,
      );
    }
  }
  // The kinds' own document rules are kept (video's per-model rules, replace-actor's files or URLs).
  assert.ok(branches.find((b) => b.properties.kind.const === 'video')!.properties.body.oneOf.length > 1);
  const resume = doc.paths['/v1/pipelines/{id}/resume'].post.requestBody.content['application/json'].schema;
  assert.equal(resume.properties.body.anyOf.length, kindDescriptors.length);
});
