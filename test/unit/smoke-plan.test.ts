// The live smoke's plan (scripts/smoke/smoke-plan.ts) follows the catalog: every step names a model that is
// live on its provider today, every live provider and kind is covered, each provider that honors a
// queued cancel gets one, and one job takes its input by URL. No provider is called.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { catalog, routeFor, type ModelRoute } from '../../shared/catalog.js';
import { jobKindNames } from '../../shared/job-model.js';
import { liveProviderNames, providerCancel } from '../../providers/index.js';
import { liveOn, smokeExcludedKinds, smokePlan } from '../../scripts/smoke/smoke-plan.js';

const today = new Date().toISOString().slice(0, 10);

describe('the smoke:live plan', () => {
  const plan = smokePlan(today);

  test("every step's model is in the catalog, live today, and served by the step's provider under that id", () => {
    assert.ok(plan.length > 0);
    for (const step of plan) {
      const route = routeFor(step.model);
      assert.ok(route, `${step.model} is a catalog model`);
      assert.ok(liveOn(route, today), `${step.model} is neither deprecated nor retired on ${today}`);
      assert.equal(route.kind, step.kind);
      const ids =
        step.action === 'speech'
          ? [route.speech!.modelId]
          : step.provider === route.provider
            ? [route.providerModelId]
            : (route.alternates ?? []).filter((a) => a.provider === step.provider).map((a) => a.providerModelId);
      assert.ok(ids.includes(step.providerModelId), `${step.provider} serves ${step.model} as ${step.providerModelId}`);
      if (step.duration !== undefined) assert.ok(route.durations, `${step.model} takes a duration`);
    }
  });

  test('one job per live provider and kind: every pair the catalog routes live is covered, with its cheapest model', () => {
    const pairs = new Set<string>();
    for (const route of Object.values(catalog) as ModelRoute[]) {
      if (!liveOn(route, today) || smokeExcludedKinds[route.kind]) continue;
      // A route with a speech step is smoked by that step.
      if (route.speech) {
        pairs.add(`${route.speech.provider}/${route.kind}`);
        continue;
      }
      pairs.add(`${route.provider}/${route.kind}`);
      for (const a of route.alternates ?? []) pairs.add(`${a.provider}/${route.kind}`);
    }
    const runs = plan.filter((s) => s.action === 'run' || s.action === 'speech').map((s) => `${s.provider}/${s.kind}`);
    assert.deepEqual([...runs].sort(), [...pairs].sort());
    assert.equal(new Set(runs).size, runs.length, 'one job per pair');
    assert.ok(runs.includes('fal/image') && runs.includes('fal/video') && runs.includes('openai/image'), runs.join(' '));
    for (const kind of Object.keys(smokeExcludedKinds)) assert.ok(jobKindNames.includes(kind as never), kind);
  });

  test('a deprecated or retired model is never chosen, however cheap', () => {
    const sora = routeFor('sora-2')!;
    assert.ok(!liveOn(sora, today), 'sora-2 is deprecated (served as Veo 3.1 Fast)');
    assert.ok(!plan.some((s) => s.model === 'sora-2' || s.model === 'sora-2-pro'));
    // A retirement date comes after the deprecation (model-lifecycle), so a retired model is deprecated too.
    assert.ok(!liveOn({ ...sora, deprecation: { since: today, reason: 'shut down', retiresAt: '2999-01-01' } }, today), 'deprecated from its date');
    assert.ok(liveOn({ ...sora, deprecation: { since: '2999-01-01', reason: 'shut down', retiresAt: '2999-06-01' } }, today), 'live before its date');
    assert.ok(liveOn({ ...sora, deprecation: undefined }, today), 'live without a deprecation');
  });

  test('a cancel while queued on each provider that honors one, and one job whose input is a URL', () => {
    const withRuns = new Set(plan.filter((s) => s.action === 'run' && (s.kind === 'image' || s.kind === 'video')).map((s) => s.provider));
    const cancels = plan.filter((s) => s.action === 'cancel-queued');
    assert.ok(cancels.some((s) => s.provider === 'fal'));
    for (const p of liveProviderNames) {
      const expected = withRuns.has(p) && providerCancel[p] === 'queued';
      assert.equal(cancels.filter((s) => s.provider === p).length, expected ? 1 : 0, `${p}: one cancel step: ${expected}`);
    }
    const url = plan.filter((s) => s.action === 'url-input');
    assert.equal(url.length, 1);
    const route = routeFor(url[0]!.model)!;
    assert.equal(route.kind, 'video');
    assert.ok((route.takes?.maxReferenceImages ?? 0) >= 1, 'the model takes a first frame');
    assert.ok(
      plan.findIndex((s) => s.action === 'run' && s.provider === 'fal' && s.kind === 'image') < plan.indexOf(url[0]!),
      'the image the URL points at is made first',
    );
  });
});
