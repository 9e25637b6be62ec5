// scripts/stack.sh sources the prod and cluster profiles' files into one shell, so a function one
// of them defines again silently replaces the first definition for every profile (a second
// `wait_for_process` with other arguments once cut the trace viewer's 300 s start bound to 90 s).
// This keeps every function of that shell defined once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const scripts = ['stack.sh', 'stack-prod.sh', 'stack-cluster.sh'];

/** Function names a bash file defines at the top level (`name() {`). */
function definedFunctions(file: string): string[] {
  const text = readFileSync(fileURLToPath(new URL(`../../../scripts/${file}`, import.meta.url)), 'utf8');
  return [...text.matchAll(/^([A-Za-z_][A-Za-z0-9_]*)\(\)\s*\{/gm)].map((m) => m[1]!);
}

test('the stack scripts sourced into one shell define each function once', () => {
  const where = new Map<string, string[]>();
  for (const file of scripts) for (const name of definedFunctions(file)) where.set(name, [...(where.get(name) ?? []), file]);
  assert.ok(where.has('wait_for_process') && where.has('up_trace_viewer'), 'the parse finds the functions');
  const twice = [...where].filter(([, files]) => files.length > 1).map(([name, files]) => `${name} (${files.join(', ')})`);
  assert.deepEqual(twice, []);
});
