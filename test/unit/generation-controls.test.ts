// Generation controls (seed, negative_prompt, audio; shared/generation-controls.ts): the catalog says
// which each route takes, and every fal request builder sends exactly those (a control the catalog
// lists reaches the body with the asked value; one it does not list never does, so nothing is
// dropped or sent unannounced). A job asking for a control starts only on a route that takes it and
// fails over only across such routes; GET /v1/models lists them per model and route; the document
// refuses, per model, the controls no route takes.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { catalog, requestRefusal, routeControls, routeFor, type ModelRoute } from '../../shared/catalog.js';
import { resolveJobRoute } from '../../shared/routing.js';
import type { GenerationControl } from '../../shared/generation-controls.js';
import { falRequestFor } from '../../providers/fal/requests.js';
import type { InputFile, ProviderContext, ProviderRequest } from '../../activities/providers/types.js';
import { modelInfo } from '../../api/routes/models.js';
import { imageKind, kindControls, videoKind } from '../../kinds/index.js';
import { liveKeys } from '../support/provider-keys.js';

const asked = { seed: 987654, negativePrompt: 'blurry, watermark', audio: false } as const;
const field: Record<GenerationControl, string> = { seed: 'seed', negative_prompt: 'negative_prompt', audio: 'generate_audio' };
const value: Record<GenerationControl, unknown> = { seed: asked.seed, negative_prompt: asked.negativePrompt, audio: asked.audio };

const ctx = {
  inputUrl: async (key: string) => `http://127.0.0.1:9/${key}`,
  heartbeat() {},
  signal: new AbortController().signal,
  attempt: 1,
} as unknown as ProviderContext;

function requestFor(route: ModelRoute, inputs: InputFile[]): ProviderRequest {
  return {
    jobId: 'vid_controls',
    kind: route.kind,
    model: route.model,
    route,
    providerModelId: route.providerModelId,
    prompt: 'a red fox crossing a snowy field',
    aspectRatio: route.defaultAspectRatio,
    count: 1,
    ...(route.defaultDuration !== undefined ? { duration: route.takes?.referenceDurations?.[0] ?? route.defaultDuration } : {}),
    ...(route.defaultResolution !== undefined ? { resolution: route.defaultResolution } : {}),
    seed: asked.seed,
    negativePrompt: asked.negativePrompt,
    audio: asked.audio,
    inputs,
  };
}

const image = (role: InputFile['role'], key: string): InputFile => ({ role, key, contentType: 'image/png' });
const falRoutes = Object.values(catalog).filter((r) => r.provider === 'fal' && r.falRequest && (r.kind === 'image' || r.kind === 'video')) as ModelRoute[];

describe('every fal builder sends exactly the controls the catalog lists for the route', () => {
  for (const route of falRoutes) {
    test(route.model, async () => {
      const first = route.takes?.startFrame === 'required' ? [image('start_frame', 'in/first.png')] : [];
      const cases: { label: string; inputs: InputFile[]; refs: boolean }[] = [{ label: 'text', inputs: first, refs: false }];
      if (route.secondaryModelIds?.reference) cases.push({ label: 'references', inputs: [image('reference', 'in/ref.png')], refs: true });
      for (const c of cases) {
        const { endpointId, input } = await falRequestFor(requestFor(route, c.inputs), ctx);
        const takes = routeControls(route, 'fal', c.refs ? { reference_file_ids: ['upl_1'] } : {});
        for (const control of kindControls[route.kind]) {
          if (takes.includes(control)) assert.equal(input[field[control]], value[control], `${route.model} (${c.label}, ${endpointId}) sends ${control}`);
          else assert.equal(input[field[control]] === value[control], false, `${route.model} (${c.label}, ${endpointId}) lists no ${control}, so sends none`);
        }
      }
    });
  }

  test('a job that asks nothing sends no seed or negative prompt, and the audio the model made before', async () => {
    const veo = routeFor('veo-3.1')!;
    const { input } = await falRequestFor({ ...requestFor(veo, []), seed: undefined, negativePrompt: undefined, audio: undefined }, ctx);
    assert.equal('seed' in input, false);
    assert.equal('negative_prompt' in input, false);
    assert.equal(input.generate_audio, true);
  });
});

describe('a job asking for a control runs only on routes that take it', () => {
  const both = liveKeys({ FAL_KEY: 'f', ARK_API_KEY: 'a' });
  const seedream = routeFor('seedream-4.5')!;
  const seedance = routeFor('seedance-1.5')!;

  test('seedream-4.5 with a seed: fal only (BytePlus lists no seed); without one, both routes', () => {
    const withSeed = resolveJobRoute(both, seedream, { aspect_ratio: '1:1', seed: 3 });
    assert.equal(withSeed?.provider, 'fal');
    assert.equal(withSeed?.routes, undefined, 'no failover route takes the seed');
    assert.deepEqual(
      resolveJobRoute(both, seedream, { aspect_ratio: '1:1' })?.routes?.map((r) => r.provider),
      ['fal', 'byteplus'],
    );
    const arkFirst = { ...both, PROVIDER_ROUTES: 'seedream-4.5=byteplus,fal' };
    assert.equal(resolveJobRoute(arkFirst, seedream, { aspect_ratio: '1:1' })?.provider, 'byteplus');
    assert.equal(resolveJobRoute(arkFirst, seedream, { aspect_ratio: '1:1', seed: 3 })?.provider, 'fal', 'the first route that takes the seed');
  });

  test('seedance-1.5 with a seed and audio off: both routes take them, so failover stays', () => {
    const p = { aspect_ratio: '16:9', duration: 5, resolution: '720p', seed: 3, audio: false };
    assert.deepEqual(
      resolveJobRoute(both, seedance, p)?.routes?.map((r) => r.provider),
      ['fal', 'byteplus'],
    );
    assert.equal(
      requestRefusal(seedance, { ...p, negative_prompt: 'rain' }, 'fal'),
      "negative_prompt: seedance-1.5 on fal takes no negative prompt (GET /v1/models lists each route's controls)",
    );
  });

  test('a control only the absent route takes is refused at create, naming the control and the route', () => {
    const arkOnly = liveKeys({ ARK_API_KEY: 'a' });
    const route = resolveJobRoute(arkOnly, seedream, { seed: 3 });
    assert.equal(route?.provider, 'byteplus');
    assert.match(requestRefusal(seedream, { seed: 3 }, route!.provider) ?? '', /^seed: seedream-4\.5 on byteplus takes no seed/);
    assert.match(requestRefusal(routeFor('kling-3.0')!, { seed: 3 }, 'fal') ?? '', /^seed: kling-3\.0 on fal takes no seed/);
    assert.match(requestRefusal(routeFor('gpt-image-2')!, { seed: 3 }, 'openai') ?? '', /^seed: gpt-image-2 on openai/);
  });

  test("veo-3.1's reference endpoint takes no seed: refused with reference images, taken without", () => {
    const veo = routeFor('veo-3.1')!;
    assert.equal(requestRefusal(veo, { seed: 1, duration: 8 }, 'fal'), undefined);
    assert.match(requestRefusal(veo, { seed: 1, duration: 8, reference_file_ids: ['upl_1'] }, 'fal') ?? '', /^seed: .* with reference images/);
    assert.equal(requestRefusal(veo, { audio: false, duration: 8, reference_file_ids: ['upl_1'] }, 'fal'), undefined);
  });

  test('the local renderer takes every control', () => {
    assert.equal(requestRefusal(routeFor('kling-3.0')!, { seed: 3, negative_prompt: 'x', audio: true }, 'local'), undefined);
  });
});

describe('GET /v1/models and the document state the controls', () => {
  test('per model and per route, and the create fields a model takes', () => {
    const info = modelInfo(routeFor('seedance-1.5')!, liveKeys({ FAL_KEY: 'f', ARK_API_KEY: 'a' }));
    assert.deepEqual(info.controls, ['seed', 'audio']);
    assert.deepEqual(
      info.routes.map((r) => [r.provider, r.controls]),
      [
        ['fal', ['seed', 'audio']],
        ['byteplus', ['seed', 'audio']],
      ],
    );
    assert.ok(info.inputs.includes('seed') && !info.inputs.includes('negative_prompt'));
    const kling = modelInfo(routeFor('kling-3.0')!, liveKeys({ FAL_KEY: 'f' }));
    assert.deepEqual(kling.controls, ['negative_prompt', 'audio']);
    assert.equal(kling.inputs.includes('seed'), false);
    assert.deepEqual(modelInfo(routeFor('gpt-image-2')!, liveKeys({ OPENAI_API_KEY: 'o' })).controls, []);
    assert.deepEqual(modelInfo(routeFor('kling-3.0')!, { PROVIDERS_MODE: 'local' }).controls, ['seed', 'negative_prompt', 'audio']);
  });

  test('the create schemas refuse, per model, the controls none of its routes takes', () => {
    const branches = (body: unknown, model: string) =>
      (body as { meta(): { oneOf: { title: string; properties: Record<string, unknown> }[] } }).meta().oneOf.find((b) => b.title === model)!.properties;
    assert.equal(branches(imageKind.body, 'gpt-image-2').seed, false);
    assert.equal(branches(imageKind.body, 'nano-banana-2').seed, undefined);
    assert.equal(branches(videoKind.body, 'kling-3.0').seed, false);
    assert.equal(branches(videoKind.body, 'kling-3.0').negative_prompt, undefined);
    assert.equal(branches(videoKind.body, 'grok-video').audio, false);
  });
});
