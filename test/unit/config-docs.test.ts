// The configuration reference (docs/operations/configuration.md) is generated from the config schema:
// a variable added to the schema without a description, or a page not regenerated after a change,
// fails here. Regenerate with `npm run docs:config`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { z } from 'zod';
import { configVariables, envSchema } from '../../shared/config.js';
import { configDocsPath, configReference, descriptionOf } from '../../scripts/generate/config-docs.js';

test('every variable of the config schema carries a description', () => {
  const shape = envSchema.shape as Record<string, z.ZodType>;
  assert.ok(configVariables.length > 100, `the schema holds the service's variables (${configVariables.length})`);
  const undescribed = configVariables.filter((name) => descriptionOf(shape[name]!) === undefined);
  assert.deepEqual(undescribed, [], 'describe each in the schema (shared/config/*.ts: `.describe(…)`), then run `npm run docs:config`');
});

test('the checked-in configuration reference is what the schema generates now', () => {
  const page = readFileSync(configDocsPath, 'utf8');
  for (const name of configVariables) assert.ok(page.includes(`| \`${name}\` |`), `${name} has a row`);
  assert.equal(page, configReference(), 'docs/operations/configuration.md is stale: run `npm run docs:config`');
});
