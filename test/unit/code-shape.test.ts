// The codebase keeps the shape issue 39 gave it: no hand-written file of service code over 400 lines
// (generated ones are named below), so a reader can hold any one file in mind, and the formatter's
// output is what is checked in (`npm run lint` runs prettier --check; this test names the limit).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// dist/test/unit/ → the repository root.
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/** The folders of service code: the processes, their layers and the client library. */
const serviceFolders = ['api', 'workflows', 'activities', 'worker', 'db', 'shared', 'jobs', 'admin', 'codec', 'client/src'];
/** Written by generators, checked by their own tests (client types from the OpenAPI document). */
const generated = new Set(['client/src/openapi.ts']);
const maxLines = 400;

function sources(dir: string): string[] {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return [];
  }
  return entries.flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

test(`no hand-written service file is over ${maxLines} lines`, () => {
  const files = serviceFolders.flatMap((f) => sources(join(root, f)));
  assert.ok(files.length > 100, `found the service sources (${files.length})`);
  const long = files
    .map((path) => ({ file: relative(root, path), lines: readFileSync(path, 'utf8').split('\n').length - 1 }))
    .filter((f) => !generated.has(f.file) && f.lines > maxLines)
    .map((f) => `${f.file}: ${f.lines} lines`);
  assert.deepEqual(long, [], `split these by concern (docs/contributing.md):\n${long.join('\n')}`);
});
