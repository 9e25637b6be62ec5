// Each provider page lists the models that provider serves, from the catalog: the generated "Models"
// section is current (`npm run docs:models` rewrites it), and every catalog model with a route, failover
// route, pipeline step or declared route on the provider is named on its page, and no other model is.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { catalog, type ModelRoute } from '../../shared/catalog.js';
import { liveProviderNames } from '../../providers/index.js';
import { modelsBegin, modelsEnd, providerModelsSection, providerPagePath, withModelsSection } from '../../scripts/generate/provider-model-docs.js';

describe('provider pages list their models', () => {
  for (const provider of liveProviderNames) {
    test(`${provider}: the Models section is current and names exactly the provider's catalog models`, () => {
      const page = readFileSync(providerPagePath(provider), 'utf8');
      const begin = page.indexOf(modelsBegin);
      const end = page.indexOf(modelsEnd);
      assert.ok(begin >= 0 && end > begin, `${provider}.md has a generated Models section (npm run docs:models)`);
      assert.equal(page.slice(begin, end + modelsEnd.length), providerModelsSection(provider), `${provider}.md is stale: npm run docs:models`);

      // Independently of the generator: the models the catalog gives this provider any part in.
      const expected = new Set<string>();
      for (const r of Object.values(catalog) as ModelRoute[]) {
        const parts = [
          r.provider,
          ...(r.alternates ?? []).map((a) => a.provider),
          ...(r.speech ? [r.speech.provider] : []),
          ...(r.disabledRoutes ?? []).map((d) => d.provider),
        ];
        if (parts.includes(provider)) expected.add(r.model);
      }
      const listed = new Set([...page.slice(begin, end).matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]!));
      assert.deepEqual([...listed].sort(), [...expected].sort());
    });
  }

  test('a page without the section gets it appended; a second run changes nothing', () => {
    const once = withModelsSection('# fal.ai\n\nText.\n', 'fal');
    assert.ok(once.startsWith('# fal.ai\n\nText.\n\n' + modelsBegin));
    assert.equal(withModelsSection(once, 'fal'), once);
    assert.match(providerModelsSection('fal'), /\| `veo-3\.1-lite` \| video \| `fal-ai\/veo3\.1\/lite` \| primary route \|/);
    assert.match(providerModelsSection('byteplus'), /\| `seedream-4\.5` \| image \| `seedream-4-5-251128` \| failover route/);
  });
});
