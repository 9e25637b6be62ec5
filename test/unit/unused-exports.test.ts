// No dead exports: every name a service module exports is named by some other module (an import, a
// re-export, a test), so `export` says "used elsewhere" and a reader can trust it. A name only its
// own file uses is not exported; a name nobody uses is deleted. The check reads names, not types: a
// name that also occurs elsewhere for another reason passes (it errs towards passing), never the
// other way, so a failure is always a real dead export. Issue 54; docs/contributing.md.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// dist/test/unit/ → the repository root.
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/** Folders whose exports are checked: the processes and their layers (the client library is a public API, its exports are its surface). */
const checked = ['api', 'workflows', 'activities', 'providers', 'kinds', 'worker', 'db', 'shared', 'jobs', 'admin', 'codec', 'console', 'scripts'];
/** Folders whose files count as users of a name. */
const users = [...checked, 'test', 'client/src'];
/** Generated, and no user of anything. */
const skipped = new Set(['client/src/openapi.ts']);

function sources(dir: string): string[] {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return [];
  }
  return entries.flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : sources(path);
    return /\.tsx?$/.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

const declaration = /^export (?:async )?(?:const|function|class|type|interface|enum|let) ([A-Za-z_$][\w$]*)/gm;

test('every export of a service module is named by another module', () => {
  const files = [...new Set(users.flatMap((f) => sources(join(root, f))))].map((p) => relative(root, p)).filter((f) => !skipped.has(f));
  assert.ok(files.length > 300, `found the sources (${files.length})`);
  const text = new Map(files.map((f) => [f, readFileSync(join(root, f), 'utf8')]));
  // Every identifier-like word, by the files it occurs in.
  const filesOf = new Map<string, Set<string>>();
  for (const [f, s] of text) {
    for (const word of new Set(s.match(/[A-Za-z_$][\w$]*/g) ?? [])) {
      let set = filesOf.get(word);
      if (!set) filesOf.set(word, (set = new Set()));
      set.add(f);
    }
  }
  const dead: string[] = [];
  for (const [f, s] of text) {
    if (!checked.some((dir) => f.startsWith(`${dir}/`))) continue;
    for (const [, name] of s.matchAll(declaration)) {
      const elsewhere = [...(filesOf.get(name!) ?? [])].some((g) => g !== f);
      if (!elsewhere) dead.push(`${f}: ${name}`);
    }
  }
  assert.deepEqual(dead, [], `drop \`export\` where only the file uses the name, delete it where nothing does:\n${dead.join('\n')}`);
});
