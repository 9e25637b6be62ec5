// Catalog rules that hold across entries: one upstream model and tier, one price; and gpt-image-2's
// sizes, which the adapter picks per aspect ratio, within the limits OpenAI documents.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { catalog, type ModelRoute } from '../../shared/catalog.js';
import { gptImage2SizeProblem } from '../../providers/openai/contract.js';
import { gptImage2Sizes, openaiImageSize } from '../../providers/openai/adapter.js';

describe('catalog prices', () => {
  test('two public names served by the same upstream endpoint cost the same per unit', () => {
    const byUpstream = new Map<string, ModelRoute[]>();
    for (const route of Object.values(catalog) as ModelRoute[]) {
      const key = `${route.provider} ${route.providerModelId}`;
      byUpstream.set(key, [...(byUpstream.get(key) ?? []), route]);
    }
    const shared = [...byUpstream.values()].filter((routes) => routes.length > 1);
    assert.ok(
      shared.some((routes) => routes.some((r) => r.model === 'veo-3.1') && routes.some((r) => r.model === 'sora-2-pro')),
      'veo-3.1 and sora-2-pro share fal-ai/veo3.1',
    );
    for (const routes of shared) {
      const [first, ...rest] = routes;
      for (const r of rest) assert.deepEqual(r.price, first!.price, `${r.model} and ${first!.model} call ${r.providerModelId}: one price`);
    }
  });
});

describe('gpt-image-2 sizes', () => {
  test('the size sent for each aspect ratio has that exact ratio and is within OpenAI limits', () => {
    for (const ratio of catalog['gpt-image-2'].aspectRatios) {
      const size = openaiImageSize('gpt-image-2', ratio);
      assert.equal(size, gptImage2Sizes[ratio]);
      assert.equal(gptImage2SizeProblem(size), undefined, `${ratio}: ${size}`);
      const [w, h] = size.split('x').map(Number) as [number, number];
      const [rw, rh] = ratio.split(':').map(Number) as [number, number];
      assert.equal(w * rh, h * rw, `${size} is exactly ${ratio}`);
      // Not above 2560x1440, where OpenAI calls sizes experimental.
      assert.ok(w * h <= 2560 * 1440, `${size} is not experimental`);
    }
    // gpt-image-1.5 keeps its three fixed sizes.
    assert.equal(openaiImageSize('gpt-image-1.5', '16:9'), '1536x1024');
    // gpt-image-2.5 takes gpt-image-2's arbitrary sizes (openai-node's size documentation names it); 2.6 is
    // not named there, so it gets the standard sizes, as any model the documentation does not name.
    for (const model of ['gpt-image-2.5-sunburst', 'gpt-image-2.5-flare', 'gpt-image-2.5-flare-2026-09-08', 'gpt-image-2-2026-04-21'])
      assert.equal(openaiImageSize(model, '16:9'), '2560x1440', model);
    for (const model of ['gpt-image-2.6-sunburst', 'gpt-image-2.6-flare']) assert.equal(openaiImageSize(model, '16:9'), '1536x1024', model);
    // A model the table does not name is refused at submit, never sent a guessed size.
    for (const model of ['gpt-image-2.7-flare', 'gpt-image-2.5-other']) assert.equal(openaiImageSize(model, '16:9'), undefined, model);
  });

  test('sizes outside the documented limits are refused, the limits themselves are not', () => {
    assert.equal(gptImage2SizeProblem('3840x2160'), undefined);
    assert.equal(gptImage2SizeProblem('1024x1024'), undefined);
    assert.match(gptImage2SizeProblem('1000x1000')!, /multiples of 16/);
    assert.match(gptImage2SizeProblem('3856x2160')!, /longest edge/);
    assert.match(gptImage2SizeProblem('3840x1264')!, /aspect ratio/);
    assert.match(gptImage2SizeProblem('768x768')!, /pixels/);
    assert.match(gptImage2SizeProblem('3840x2176')!, /pixels/);
    assert.match(gptImage2SizeProblem('auto-ish')!, /WIDTHxHEIGHT/);
  });
});
