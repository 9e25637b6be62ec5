// What a `priority: low` job pays: the catalog's discount where a model sets one, never below what
// the provider charges for the request, and the full price at every other priority.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { catalog, priceAt, priceFor, providerCostFor, type ModelRoute } from '../../shared/catalog.js';

const routes = Object.values(catalog) as ModelRoute[];

describe('low-priority prices', () => {
  test('every discount is a fraction, and some models set one (a fal model served locally in tests, and a live OpenAI one)', () => {
    for (const r of routes) {
      if (r.lowPriorityDiscount === undefined) continue;
      assert.ok(r.lowPriorityDiscount > 0 && r.lowPriorityDiscount < 1, `${r.model}: ${r.lowPriorityDiscount}`);
    }
    assert.ok(catalog['nano-banana-2'].lowPriorityDiscount! > 0);
    assert.ok(catalog['gpt-image-1.5'].lowPriorityDiscount! > 0);
  });

  test('a low job pays the discounted price, rounded in its favour only by whole credits, never below the provider cost', () => {
    assert.equal(priceAt(catalog['nano-banana-2'], { count: 1 }, 'low'), 3);
    assert.equal(priceAt(catalog['nano-banana-2'], { count: 4 }, 'low'), 12);
    // 6 credits, a quarter off is 1.5: one whole credit off.
    assert.equal(priceAt(catalog['gpt-image-1.5'], { count: 1 }, 'low'), 5);
    for (const r of routes) {
      for (const p of [{ count: 1 }, { count: 3 }, { duration: r.defaultDuration }, { script: 'x'.repeat(250) }]) {
        const low = priceAt(r, p, 'low');
        assert.ok(low >= providerCostFor(r, p), `${r.model} ${JSON.stringify(p)}: ${low} below the provider cost`);
        assert.ok(low <= priceFor(r, p));
        assert.equal(Number.isInteger(low), true);
      }
    }
  });

  test('normal and high pay the full price; a model without a discount charges low jobs in full', () => {
    const r = catalog['nano-banana-2'];
    assert.equal(priceAt(r, { count: 2 }, 'normal'), priceFor(r, { count: 2 }));
    assert.equal(priceAt(r, { count: 2 }, 'high'), priceFor(r, { count: 2 }));
    assert.equal(priceAt(r, { count: 2 }), priceFor(r, { count: 2 }));
    const plain = routes.find((x) => x.lowPriorityDiscount === undefined)!;
    assert.equal(priceAt(plain, { count: 1, duration: plain.defaultDuration }, 'low'), priceFor(plain, { count: 1, duration: plain.defaultDuration }));
  });
});
