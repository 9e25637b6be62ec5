// A provider is one folder and its line in the list: providers/<name>/ holds the same
// files for every provider, the list (providers/index.ts) imports each folder's descriptor, and no
// service file outside a provider's folder declares anything of that provider by name. The one
// exception is the model catalog (each kind's models.ts), whose entries name the provider of each
// model's first route: a model's data, added with the model, not with the provider.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { liveProviderNames, providers } from '../../providers/index.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
/** The files every provider folder has; probe.ts (a model lookup) and a few helpers are optional. */
const required = ['descriptor.ts', 'adapter.ts', 'contract.ts', 'errors.ts'];
/** Service code (what ships, and its layers), outside the provider folders. */
const serviceFolders = ['api', 'workflows', 'activities', 'kinds', 'worker', 'db', 'shared', 'jobs', 'admin', 'codec', 'console'];
/** Where a provider may be named outside its folder, and why. */
const allowed: { path: RegExp; why: string }[] = [
  { path: /^kinds\/[^/]+\/models[^/]*\.ts$/, why: "a model's catalog entry names the provider of its first route" },
];

function sources(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.tsx?$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The code of a file without its comments (a comment may name any provider). */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');

/** Where a text names one of `names` as code: a string literal, or an object key. */
export function namings(text: string, names: readonly string[]): string[] {
  const alternatives = names.join('|');
  const literal = new RegExp(`['"\`](${alternatives})['"\`]`, 'g');
  const key = new RegExp(`(?:^|[{,])\\s*(${alternatives})\\??\\s*:`, 'gm');
  const body = code(text);
  // Keys are looked for outside strings (a description may say `fal=16,alibaba:replace-actor=1`).
  const unquoted = body.replace(/'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|`(?:[^`\\]|\\.)*`/g, "''");
  return [...[...body.matchAll(literal)].map((m) => m[0]), ...[...unquoted.matchAll(key)].map((m) => `${m[1]}:`)];
}

test('each provider of the list is a folder with the same files, and each folder is in the list', () => {
  const folders = readdirSync(join(root, 'providers')).filter((f) => statSync(join(root, 'providers', f)).isDirectory());
  assert.deepEqual([...folders].sort(), [...liveProviderNames].sort(), 'the provider folders are the list');
  for (const name of liveProviderNames) {
    for (const file of required) assert.ok(existsSync(join(root, 'providers', name, file)), `providers/${name}/${file}`);
  }
});

test("each descriptor is its folder's, and the list imports it from there", () => {
  const list = readFileSync(join(root, 'providers/index.ts'), 'utf8');
  for (const p of providers) {
    assert.match(readFileSync(join(root, 'providers', p.name, 'descriptor.ts'), 'utf8'), new RegExp(`name: '${p.name}'`));
    assert.match(list, new RegExp(`from './${p.name}/descriptor.js'`));
  }
});

test('no service file outside a provider folder names a provider', () => {
  const found: string[] = [];
  for (const file of serviceFolders.flatMap((f) => sources(join(root, f)))) {
    const path = relative(root, file);
    if (allowed.some((a) => a.path.test(path))) continue;
    for (const hit of namings(readFileSync(file, 'utf8'), liveProviderNames)) found.push(`${path}: ${hit}`);
  }
  assert.deepEqual(found, [], 'declare it in the provider folder (its descriptor, adapter or contract) and derive from the list');
});

test('the check finds a provider named as a literal or a key, and not in a comment', () => {
  assert.deepEqual(namings("const cost = { fal: 1 };\nif (p === 'openai') x();", ['fal', 'openai']), ["'openai'", 'fal:']);
  assert.deepEqual(namings('const t = {\n  xai: 5,\n};', ['xai']), ['xai:']);
  assert.deepEqual(namings("// fal: the queue API\n/** 'openai' */\nconst url = 'https://x';", ['fal', 'openai']), []);
  assert.deepEqual(namings("const falKey = c.FAL_KEY; const openaiish = 'openai-compatible';", ['fal', 'openai']), []);
  assert.deepEqual(namings('const d = "e.g. `fal=16,alibaba:replace-actor=1`";', ['fal', 'alibaba']), []);
});
