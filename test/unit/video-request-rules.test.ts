// The video kind's input rules are stated once (kinds/video/rules.ts), each with its refusal and its
// JSON Schema: over every video model and every mix of start frame, end frame, reference images and
// duration a create can send, the model's branch of the published body and the quote's refusal give
// the same verdict, so a client that validates against the document is refused for nothing else.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { requestRefusal, routeFor, type ModelRoute } from '../../shared/catalog.js';
import { kindOf } from '../../kinds/index.js';
import { videoModels } from '../../kinds/video/models.js';
import { videoInputRules } from '../../kinds/video/rules.js';

const video = kindOf('video');
const branches = new Map(
  ((z.globalRegistry.get(video.body)?.oneOf ?? []) as { title: string }[]).map((b) => [b.title, new Ajv2020({ strict: false }).compile(b)]),
);

const controlValues = { seed: 7, negative_prompt: 'rain', audio: true } as const;

/** The durations worth trying on a route: its own, and those its reference endpoint takes. */
function durations(route: ModelRoute): number[] {
  const d = route.durations;
  const own = !d ? [] : 'values' in d ? [...d.values] : [d.min, d.max, route.defaultDuration ?? d.min];
  return [...new Set([...own, ...(route.takes?.referenceDurations ?? [])])].filter((n) =>
    !d ? false : 'values' in d ? d.values.includes(n) : n >= d.min && n <= d.max,
  );
}

/** Every mix of inputs a video create can send (reference images up to the body's cap of 4), with each control the route takes. */
function* inputMixes(route: ModelRoute) {
  const controls = [{}, ...(route.controls ?? []).map((c) => ({ [c]: controlValues[c] }))];
  for (const control of controls)
    for (const refs of [0, 1, 2, 3, 4])
      for (const start of [false, true])
        for (const end of [false, true])
          for (const duration of durations(route).length ? durations(route) : [undefined])
            yield {
              ...(refs ? { reference_file_ids: Array.from({ length: refs }, (_, i) => `upl_r${i}`) } : {}),
              ...(start ? { start_frame_file_id: 'upl_s' } : {}),
              ...(end ? { end_frame_file_id: 'upl_e' } : {}),
              ...(duration !== undefined ? { duration } : {}),
              ...control,
            };
}

test('every video model has a branch in the create body', () => {
  assert.deepEqual([...branches.keys()], [...videoModels]);
  assert.ok(videoInputRules.length > 0);
});

test("over every video model and input mix, the document's branch accepts exactly what the quote does not refuse", () => {
  let compared = 0;
  const disagreements: string[] = [];
  for (const model of videoModels) {
    const route = routeFor(model)!;
    const validate = branches.get(model)!;
    for (const inputs of inputMixes(route)) {
      const body = { model, aspect_ratio: route.defaultAspectRatio, resolution: route.defaultResolution, ...inputs };
      const refusal = requestRefusal(route, { prompt: 'a kite over the sea', ...inputs }, route.provider, video.requestRules);
      const accepted = validate(body);
      compared++;
      if (accepted !== (refusal === undefined))
        disagreements.push(`${JSON.stringify(body)}: document ${accepted ? 'accepts' : 'refuses'}, quote ${refusal ?? 'accepts'}`);
    }
  }
  assert.deepEqual(disagreements, []);
  assert.ok(compared > videoModels.length * 20, `${compared} requests compared`);
});
