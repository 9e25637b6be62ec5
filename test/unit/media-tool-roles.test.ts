// The roles the media sandbox is granted to (shared/routing.ts mediaToolRoles: the Helm chart's and
// compose's privileged fleets) are exactly the roles whose code runs media tools: a provider adapter
// that starts conforming inputs or probing with ffmpeg must bring its fleet into the sandbox, or its
// tools would run where the isolation was never granted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { mediaToolRoles } from '../../shared/routing.js';
import { providerNames } from '../../workflows/definitions.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
// The modules that start a media tool, directly or through the helpers that do.
const toolModules = /from '(?:\.{1,2}\/)+(?:activities\/)?(?:providers\/)?(?:media-tools|conform|output-conform|background)\.js'/;

/** A provider's sources: its folder (providers/<name>/), or the local renderer's. */
function sources(provider: string): string[] {
  const dir = [`${root}providers/${provider}`, `${root}activities/providers/${provider}`].find((d) => existsSync(d));
  assert.ok(dir, `${provider} has a folder`);
  return readdirSync(dir)
    .filter((f) => f.endsWith('.ts'))
    .map((f) => readFileSync(`${dir}/${f}`, 'utf8'));
}

test('a provider role is in mediaToolRoles exactly when its adapter runs media tools', () => {
  const running = providerNames.filter((p) => sources(p).some((s) => toolModules.test(s))).map((p) => `provider:${p}`);
  assert.deepEqual(mediaToolRoles.filter((r) => r.startsWith('provider:')).sort(), running.sort());
});

test('the io role, which stores and probes outputs, is in mediaToolRoles', () => {
  assert.match(readFileSync(`${root}activities/jobs/outputs.ts`, 'utf8'), toolModules);
  assert.ok((mediaToolRoles as readonly string[]).includes('io'));
});
