// The codebase keeps the shape issues 39 and 54 gave it: no hand-written file of service code over 400
// lines (generated ones are named below) and no function over 80 lines without a reason, so a reader
// can hold any one file or function in mind; the formatter's output is what is checked in (`npm run
// lint` runs prettier --check; this test names the limits).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

// dist/test/unit/ → the repository root.
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/** The folders of service code: the processes, their layers and the client library. */
const serviceFolders = ['api', 'workflows', 'activities', 'providers', 'kinds', 'worker', 'db', 'shared', 'jobs', 'admin', 'codec', 'client/src'];
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

// Functions: none over 80 lines of its own unless a comment above it says why ("Over 80 lines: …").
// A function's own lines are its body's, less the bodies of the functions written inside it, each of
// which is measured as a function in its own right: a factory made of small named steps passes, as a
// class of small methods would; a long inline callback, or a long run of statements, does not.
const maxFunctionLines = 80;
const longReason = /over 80 lines:\s*\S/i;

interface MeasuredFunction {
  where: string;
  own: number;
  explained: boolean;
}

/** Every function-like node with a body in one source, with its own line count and whether a comment above it gives the reason. */
function measureFunctions(path: string): MeasuredFunction[] {
  const text = readFileSync(path, 'utf8');
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const line = (pos: number) => source.getLineAndCharacterOfPosition(pos).line;
  const span = (fn: ts.FunctionLikeDeclaration) => line(fn.body!.end) - line(fn.body!.getStart(source)) + 1;
  /** The comments before the function and before the statement, property or declaration that holds it. */
  const explained = (fn: ts.Node) => {
    for (let n: ts.Node | undefined = fn; n && !ts.isBlock(n) && !ts.isSourceFile(n); n = n.parent) {
      const comments = ts.getLeadingCommentRanges(text, n.getFullStart()) ?? [];
      if (comments.some((c) => longReason.test(text.slice(c.pos, c.end)))) return true;
    }
    return false;
  };
  const measured: MeasuredFunction[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const fn = node as ts.FunctionLikeDeclaration;
      let nested = 0;
      const inner = (n: ts.Node): void => {
        if (ts.isFunctionLike(n) && 'body' in n && n.body) nested += span(n as ts.FunctionLikeDeclaration);
        else ts.forEachChild(n, inner);
      };
      ts.forEachChild(fn.body!, inner);
      const name =
        fn.name?.getText(source) ??
        (ts.isVariableDeclaration(fn.parent) || ts.isPropertyAssignment(fn.parent) ? fn.parent.name.getText(source) : '(anonymous)');
      measured.push({ where: `${relative(root, path)}:${line(fn.getStart(source)) + 1} ${name}`, own: span(fn) - nested, explained: explained(fn) });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return measured;
}

test(`no service function is over ${maxFunctionLines} lines of its own without a comment saying why`, () => {
  const files = serviceFolders.flatMap((f) => sources(join(root, f))).filter((p) => !generated.has(relative(root, p)));
  const measured = files.flatMap(measureFunctions);
  assert.ok(measured.length > 1000, `found the service functions (${measured.length})`);
  const long = measured.filter((m) => m.own > maxFunctionLines && !m.explained).map((m) => `${m.where}: ${m.own} lines`);
  assert.deepEqual(long, [], `split these into named steps, or say why above them ("Over ${maxFunctionLines} lines: …"):\n${long.join('\n')}`);
});
