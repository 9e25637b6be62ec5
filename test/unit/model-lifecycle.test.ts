// Model deprecations: the catalog's lifecycle fields are consistent (ISO dates, a replacement that is
// a live public model of the same kind), and what a create of a model is answered with before its
// deprecation, while deprecated (RFC 9745 Deprecation, RFC 8594 Sunset, the warning in words) and
// from its retirement date (refused, naming the replacement).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { catalog, routeFor, type ModelRoute } from '../../shared/catalog.js';
import { isoDateMs, modelLifecycle } from '../../shared/model-lifecycle.js';

const base = { model: 'old-model' } satisfies Pick<ModelRoute, 'model'>;

describe('model lifecycle', () => {
  it('every deprecation in the catalog has a reason, ISO dates in order, and a replacement of the same kind that is not deprecated', () => {
    for (const route of Object.values(catalog) as ModelRoute[]) {
      const { model, deprecation } = route;
      if (deprecation === undefined) continue;
      const { since, reason, replacement, retiresAt } = deprecation;
      assert.ok(Number.isFinite(isoDateMs(since)), `${model}: deprecated since ${since}`);
      assert.ok(reason, `${model}: says why it is deprecated`);
      assert.ok(/^[\x20-\x7e]+$/.test(reason), `${model}: the reason is ASCII (it travels in a header)`);
      if (retiresAt !== undefined) assert.ok(isoDateMs(retiresAt) > isoDateMs(since), `${model}: retires after its deprecation`);
      if (replacement !== undefined) {
        const next = routeFor(replacement);
        assert.ok(next, `${model}: its replacement ${replacement} is a catalog model`);
        assert.equal(next.kind, route.kind);
        assert.equal(next.deprecation, undefined, `${model}: its replacement is not deprecated itself`);
      }
    }
  });

  it('sora-2 and sora-2-pro are deprecated since OpenAI shut them down, with veo-3.1 as the replacement and no retirement date', () => {
    for (const model of ['sora-2', 'sora-2-pro'] as const) {
      const { deprecation } = catalog[model] as ModelRoute;
      assert.equal(deprecation?.since, '2026-09-24');
      assert.equal(deprecation?.replacement, 'veo-3.1');
      assert.equal(deprecation?.retiresAt, undefined);
    }
    assert.equal((catalog['veo-3.1'] as ModelRoute).deprecation, undefined);
  });

  it('a model without a deprecation is active', () => {
    assert.deepEqual(modelLifecycle(base), { state: 'active' });
  });

  it('a deprecated model: Deprecation as a structured-field Date, the warning naming the replacement, no Sunset without a date', () => {
    const l = modelLifecycle({ ...base, deprecation: { since: '2026-09-24', reason: 'its provider shut it down', replacement: 'new-model' } });
    assert.equal(l.state, 'deprecated');
    if (l.state !== 'deprecated') return;
    assert.deepEqual(l.headers, {
      Deprecation: '@1790208000',
      'X-Mediagen-Warning': 'model old-model is deprecated since 2026-09-24 (its provider shut it down); use new-model instead',
    });
    assert.equal(l.warning, l.headers['X-Mediagen-Warning']);
  });

  it('with a retirement date: Sunset as an HTTP-date until that day, then the create is refused naming the replacement', () => {
    const route = { ...base, deprecation: { since: '2026-09-24', reason: 'shut down', replacement: 'new-model', retiresAt: '2027-01-31' } };
    const before = modelLifecycle(route, new Date('2027-01-30T23:59:59Z'));
    assert.equal(before.state, 'deprecated');
    if (before.state === 'deprecated') {
      assert.equal(before.headers.Sunset, 'Sun, 31 Jan 2027 00:00:00 GMT');
      assert.match(before.warning, /; creates are refused from 2027-01-31; use new-model instead$/);
    }
    assert.deepEqual(modelLifecycle(route, new Date('2027-01-31T00:00:00Z')), {
      state: 'retired',
      message: 'model old-model was retired on 2027-01-31 (shut down); use new-model instead',
    });
  });
});

describe('an unknown model refused as invalid_model', () => {
  it('names only the models a create can still use: a retired one is left out from its retirement date', async () => {
    const { checkModel } = await import('../../api/routes/jobs/router.js');
    const { kindSpec } = await import('../../api/routes/jobs/kinds.js');
    const image = kindSpec('image');
    const retired = (Object.values(catalog) as ModelRoute[]).find((r) => r.deprecation?.retiresAt !== undefined && image.models.includes(r.model));
    assert.ok(retired, 'the catalog retires an image model');
    const messageOn = (day: string) => {
      try {
        checkModel(image, { model: 'no-such-model' }, new Date(`${day}T12:00:00Z`));
      } catch (err) {
        assert.equal((err as { code?: string }).code, 'invalid_model');
        return (err as Error).message;
      }
      assert.fail('an unknown model was accepted');
    };
    const before = new Date(isoDateMs(retired.deprecation!.retiresAt!) - 86_400_000).toISOString().slice(0, 10);
    assert.ok(messageOn(before).split(/[ ,]+/).includes(retired.model), 'still offered the day before it retires');
    const after = messageOn(retired.deprecation!.retiresAt!);
    assert.ok(!after.split(/[ ,]+/).includes(retired.model), after);
    assert.ok(after.split(/[ ,]+/).includes(retired.deprecation!.replacement!), 'its replacement is offered');
  });
});
