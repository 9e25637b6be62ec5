// GET /v1/models over HTTP on the real gateway: the listing is the routing catalog the create
// validation uses, model by model, and says how this deployment serves each (local renderer, live
// provider, unavailable).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, createTenant, type TestDatabase, type Tenant } from '../support/stack.js';
import { api } from '../support/services.js';
import { startInProcessGateway, type Gateway } from '../integration/gateway-harness.js';
import { catalog, routeFor, type ModelRoute } from '../../shared/catalog.js';
import { kinds as jobKinds } from '../../api/routes/jobs/kinds.js';
import { kindControls } from '../../kinds/index.js';

let tdb: TestDatabase;
let local: Gateway;
let live: Gateway;
let t: Tenant;

before(async () => {
  tdb = await createTestDatabase();
  local = await startInProcessGateway(tdb.db, tdb.url, { PROVIDERS_MODE: 'local' });
  // Only fal configured: fal's models are live, the others unavailable (no request leaves the machine).
  live = await startInProcessGateway(tdb.db, tdb.url, {
    PROVIDERS_MODE: 'live',
    FAL_KEY: 'test-key',
    OPENAI_API_KEY: '',
    ELEVENLABS_API_KEY: '',
    XAI_API_KEY: '',
  });
  t = await createTenant(tdb.db, 0);
});

after(async () => {
  await live?.close();
  await local?.close();
  await tdb?.drop();
});

function expected(route: ModelRoute) {
  const d = route.durations;
  return {
    name: route.model,
    kind: route.kind,
    aspect_ratios: [...route.aspectRatios],
    default_aspect_ratio: route.defaultAspectRatio,
    durations: !d ? null : 'values' in d ? { values: [...d.values] } : { min: d.min, max: d.max },
    default_duration: route.defaultDuration ?? null,
    resolutions: [...(route.resolutions ?? [])],
    default_resolution: route.defaultResolution ?? null,
    max_reference_images: route.takes?.maxReferenceImages ?? null,
    durations_with_references: route.takes?.referenceDurations ? { values: [...route.takes.referenceDurations] } : null,
    // The local renderer takes any prompt the create schema does.
    prompt_length: route.kind === 'talking_actor' ? null : { min: 1, max: 4000 },
    deprecated_at: route.deprecation?.since ?? null,
    replacement: route.deprecation?.replacement ?? null,
    retires_at: route.deprecation?.retiresAt ?? null,
    disabled_routes: (route.disabledRoutes ?? []).map((r) => ({ provider: r.provider, reason: r.reason })),
    // The local renderer takes every generation control of the kind.
    controls: [...kindControls[route.kind]],
    // Images in any of the three formats (re-encoded once stored), the rest as MP4.
    output_formats: route.kind === 'image' ? ['png', 'jpeg', 'webp'] : ['mp4'],
    price_credits: route.price.credits,
    price_per: route.price.per,
    price_low_priority_discount: route.lowPriorityDiscount ?? 0,
    // The local renderer serves every model: no provider routes, nothing degraded, nothing kept by a cancel.
    routes: [],
    availability: 'available',
    cancel_policy: { provider_cost: 0, provider_cancel: 'free', rule: 'a cancel refunds the whole price' },
    placeholder: true,
  };
}

describe('GET /v1/models', () => {
  test('lists every catalog model exactly as the catalog states it, with the create fields of its kind', async () => {
    const r = await api(local.baseUrl, t.apiKey).get('/v1/models');
    assert.equal(r.status, 200, r.text);
    const listed = r.body.data as any[];
    assert.deepEqual(listed.map((m) => m.name).sort(), Object.keys(catalog).sort(), 'every catalog model, once');
    for (const name of Object.keys(catalog)) {
      const route = routeFor(name)!;
      const m = listed.find((x) => x.name === name);
      assert.deepEqual(
        {
          ...m,
          price_credits: m.price.credits,
          price_per: m.price.per,
          price_low_priority_discount: m.price.low_priority_discount,
          price: undefined,
          inputs: undefined,
          served_by: undefined,
          provider: undefined,
          create_path: undefined,
        },
        { ...expected(route), price: undefined, inputs: undefined, served_by: undefined, provider: undefined, create_path: undefined },
        name,
      );
      const kind = jobKinds.find((k) => k.kind === route.kind)!;
      assert.ok(kind.models.includes(name), `${name} is accepted by ${kind.createPath}`);
      assert.equal(m.create_path, kind.createPath);
      const fields = Object.keys((kind.body as any).shape).filter((f) => f !== 'project_id' && f !== 'model');
      assert.deepEqual([...m.inputs].sort(), fields.filter((f) => route.takes?.maxReferenceImages !== undefined || f !== 'reference_file_ids').sort(), name);
      assert.equal(m.served_by, 'local');
      assert.equal(m.provider, null);
    }
    const talking = listed.find((x) => x.name === 'talking-actor');
    assert.deepEqual(talking.price, { credits: 20, per: 'job', per_hundred_chars: 2, low_priority_discount: 0 });
  });

  /** What the catalog says fal's route delivers, as GET /v1/models shows it. */
  const documentedOutput = (route: ModelRoute) => {
    const o = route.provider === 'fal' ? route.produces : route.alternates?.find((a) => a.provider === 'fal')?.produces;
    if (!o) return null;
    return { formats: o.formats, aspect_ratios: o.aspectRatios, resolutions: o.resolutions ?? null, image_sizes: o.imageSizes ?? null };
  };

  /** The generation controls the catalog lists for fal's route of a model. */
  const falControls = (route: ModelRoute) => [
    ...((route.provider === 'fal' ? route.controls : route.alternates?.find((a) => a.provider === 'fal')?.controls) ?? []),
  ];

  test('served_by follows the deployment: live for models whose provider key is set, unavailable otherwise', async () => {
    const r = await api(live.baseUrl, t.apiKey).get('/v1/models');
    assert.equal(r.status, 200, r.text);
    for (const m of r.body.data as any[]) {
      const route = routeFor(m.name)!;
      // A route with a speech step (a talking actor on fal) needs its speech provider's key too: unavailable here.
      const falServes = !route.speech && (route.provider === 'fal' || route.alternates?.some((a) => a.provider === 'fal'));
      if (falServes)
        assert.deepEqual(
          [m.served_by, m.provider, m.routes, m.availability],
          [
            'live',
            'fal',
            [
              {
                provider: 'fal',
                circuit: 'closed',
                status: 'available',
                unavailable_reason: null,
                controls: falControls(route),
                output: documentedOutput(route),
              },
            ],
            'available',
          ],
          m.name,
        );
      // Only fal is live: the model takes what fal's route takes, and lists no other control among its inputs.
      if (falServes) {
        assert.deepEqual(m.controls, falControls(route), m.name);
        for (const c of kindControls[route.kind]) assert.equal(m.inputs.includes(c), falControls(route).includes(c), `${m.name} ${c}`);
      } else assert.deepEqual([m.served_by, m.provider, m.routes, m.availability], ['unavailable', null, [], 'unavailable'], m.name);
      assert.equal(m.placeholder, false, m.name);
      // fal stops a queued request: a cancel after the submit keeps the provider cost unless fal confirms it.
      if (falServes) assert.deepEqual([m.cancel_policy.provider_cost, m.cancel_policy.provider_cancel], [route.price.providerCost, 'queued'], m.name);
    }
    // What the listing calls unavailable, the create endpoint refuses.
    const create = await api(live.baseUrl, t.apiKey).post('/v1/images/generate', {
      project_id: t.projectId,
      prompt: 'x',
      model: 'gpt-image-2',
      aspect_ratio: '1:1',
      count: 1,
    });
    assert.equal(create.status, 400);
    assert.equal(create.body.error.code, 'invalid_model');
  });

  test("reports the providers' published limits: Veo's 3 reference images at 8 s, Kling's 2,500-character and Nano Banana 2's 3-character prompts", async () => {
    const r = await api(live.baseUrl, t.apiKey).get('/v1/models');
    assert.equal(r.status, 200, r.text);
    const by = (name: string) => (r.body.data as any[]).find((m) => m.name === name);
    for (const name of ['veo-3.1', 'sora-2-pro']) {
      assert.equal(by(name).max_reference_images, 3, name);
      assert.deepEqual(by(name).durations_with_references, { values: [8] }, name);
      assert.deepEqual(by(name).durations, { values: [4, 6, 8] }, name);
    }
    assert.deepEqual(by('kling-3.0').prompt_length, { min: 1, max: 2500 });
    assert.deepEqual(by('kling-2.6').prompt_length, { min: 1, max: 2500 });
    assert.deepEqual(by('nano-banana-2').prompt_length, { min: 3, max: 4000 });
    assert.equal(by('talking-actor').prompt_length, null);
    assert.match(by('sora-2').served_as.model, /^Veo 3\.1 Fast on fal/);
    assert.match(by('sora-2-pro').served_as.model, /^Veo 3\.1 on fal/);
  });

  test('401 without a key, in the error shape', async () => {
    const r = await api(local.baseUrl).get('/v1/models');
    assert.equal(r.status, 401);
    assert.equal(r.body.error.code, 'unauthorized');
  });
});
