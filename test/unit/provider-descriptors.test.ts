// Every provider of the list (providers/index.ts) is whole: its adapter module exists and
// exports createAdapter (the registry finds it by the provider's name), its config variables are
// described and in the configuration schema, its keys are config variables, and its routes name
// catalog models it is not already the primary route of.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { providers, providerKeys, providerSecrets } from '../../providers/index.js';
import { providerConfigSchema } from '../../providers/config.js';
import { configVariables, loadConfig } from '../../shared/config.js';
import { catalog, routeFor } from '../../shared/catalog.js';
import { roleScopedSecrets } from '../../shared/routing.js';
import { providerNames } from '../../shared/job-model.js';
import { adapterModulePath, createProviderAdapter } from '../../activities/providers/registry.js';
import type { AdapterModule } from '../../activities/providers/registry.js';

describe('provider descriptors', () => {
  it('every descriptor has an adapter module exporting createAdapter', async () => {
    for (const p of providers) {
      const module = (await import(
        new URL(adapterModulePath(p.name), new URL('../../activities/providers/registry.js', import.meta.url)).href
      )) as Partial<AdapterModule>;
      assert.equal(typeof module.createAdapter, 'function', `providers/${p.name}/adapter.ts exports createAdapter`);
    }
  });

  it('the registry builds each adapter once its keys are set, and names the missing keys otherwise', () => {
    // The variables every process needs (never read here), and no provider key.
    const config = loadConfig({
      DATABASE_URL: 'postgres://u@127.0.0.1:9/db',
      TEMPORAL_ADDRESS: '127.0.0.1:9',
      S3_ENDPOINT: 'http://127.0.0.1:9',
      S3_ACCESS_KEY: 'a',
      S3_SECRET_KEY: 'b',
      PROVIDERS_MODE: 'live',
    });
    for (const p of providers) {
      assert.throws(() => createProviderAdapter(p.name, config), new RegExp(`the ${p.name} provider is not configured here: ${p.keys[0]}`));
      const keyed = { ...config, ...Object.fromEntries(p.keys.map((k) => [k, k.endsWith('ENDPOINT') ? 'https://example.openai.azure.com' : 'k-1234'])) };
      assert.equal(createProviderAdapter(p.name, keyed).name, p.name);
    }
  });

  it('names are unique and make the provider names after local', () => {
    assert.equal(new Set(providers.map((p) => p.name)).size, providers.length);
    assert.deepEqual(providerNames, ['local', ...providers.map((p) => p.name)]);
  });

  it('config variables are described, in the configuration schema, and hold every key', () => {
    for (const [name, schema] of Object.entries(providerConfigSchema)) {
      assert.ok(schema.description && schema.description.length > 10, `${name} has a description`);
      assert.ok(configVariables.includes(name), `${name} is a configuration variable`);
    }
    for (const p of providers) for (const k of p.keys) assert.ok(k in providerConfigSchema, `${p.name}: key ${k} is a config variable`);
  });

  it('keys, secrets and role secrets derive from the descriptors', () => {
    for (const p of providers) assert.deepEqual(providerKeys[p.name], p.keys);
    assert.ok(!(providerSecrets as string[]).includes('AZURE_OPENAI_ENDPOINT'), 'an endpoint is not a secret');
    assert.deepEqual([...roleScopedSecrets], [...providerSecrets, 'WEBHOOK_SECRETS_KEY']);
  });

  it('routes name catalog models the provider is not the primary of, and become their alternates unless disabled', () => {
    for (const p of providers) {
      for (const [model, route] of Object.entries((p as { routes?: Record<string, { providerModelId: string; disabled?: string }> }).routes ?? {})) {
        const entry = routeFor(model);
        assert.ok(entry, `${p.name} routes ${model}, a catalog model`);
        assert.notEqual(entry.provider, p.name);
        const alternate = entry.alternates?.find((a) => a.provider === p.name);
        const disabled = entry.disabledRoutes?.find((a) => a.provider === p.name);
        if (route.disabled === undefined) {
          assert.deepEqual(alternate?.providerModelId, route.providerModelId);
          assert.equal(disabled, undefined);
        } else {
          assert.equal(alternate, undefined, `${p.name}'s disabled route of ${model} is no alternate`);
          assert.deepEqual(disabled, { provider: p.name, providerModelId: route.providerModelId, reason: route.disabled });
        }
      }
    }
    assert.deepEqual(
      catalog['grok-video'].alternates?.map((a) => a.provider),
      ['xai'],
    );
  });
});
