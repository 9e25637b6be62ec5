// No import circle in the service code: a circle makes module start order decide what a module sees
// (an import still undefined while its circle loads), and ties modules that should stand apart
// (shared/config.ts and shared/routing.ts once imported each other). Walks the TypeScript sources'
// static imports, type-only ones included, of every service folder.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const serviceFolders = ['api', 'db', 'shared', 'kinds', 'providers', 'workflows', 'activities', 'worker', 'jobs', 'admin', 'codec'];

function sources(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The in-repo modules a file imports or re-exports (static specifiers only), as .ts paths. */
export function importsOf(file: string, text: string): string[] {
  const specifiers = [...text.matchAll(/^\s*(?:import|export)\s[^;]*?\sfrom\s+'([^']+)'/gm), ...text.matchAll(/^\s*import\s+'([^']+)'/gm)].map((m) => m[1]!);
  return specifiers.filter((s) => s.startsWith('.')).map((s) => resolve(dirname(file), s.replace(/\.js$/, '.ts')));
}

/** Every circle of the graph, each as the list of files it runs through (first file repeated at the end). */
export function cyclesOf(graph: Map<string, string[]>): string[][] {
  const cycles: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string) => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (state.get(next) === 'open') cycles.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node);
  return cycles;
}

describe('import circles', () => {
  it('finds a circle when there is one (the check itself works)', () => {
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['a']],
    ]);
    assert.deepEqual(cyclesOf(graph), [['a', 'b', 'c', 'a']]);
  });

  it('reads value, type-only and re-export imports', () => {
    const file = join(root, 'shared', 'x.ts');
    const text = "import { a } from './a.js';\nimport type { B } from './b.js';\nexport { c } from '../c.js';\nimport { z } from 'zod';\n";
    assert.deepEqual(
      importsOf(file, text).map((p) => relative(root, p)),
      ['shared/a.ts', 'shared/b.ts', 'c.ts'],
    );
  });

  it('the service code has none', () => {
    const files = serviceFolders.flatMap((f) => sources(join(root, f)));
    assert.ok(files.length > 100, `service sources found under ${root}`);
    const graph = new Map(files.map((f) => [f, importsOf(f, readFileSync(f, 'utf8'))]));
    const cycles = cyclesOf(graph).map((c) => c.map((f) => relative(root, f)).join(' → '));
    assert.deepEqual(cycles, []);
  });
});
