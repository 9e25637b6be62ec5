// The documentation stands alone: a clone holds everything it links to. Every relative link in the
// README files and under docs/ names a file of the repository, and nothing points outside it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// dist/test/unit/ → the repository root.
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

function markdownFiles(): string[] {
  const files = ['README.md', 'client/README.md', 'python/README.md'].map((f) => join(root, f)).filter((f) => existsSync(f));
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.md')) files.push(path);
    }
  };
  if (existsSync(join(root, 'docs'))) walk(join(root, 'docs'));
  return files;
}

/** Link targets of a Markdown text: `[text](target)` and `![alt](target)`, outside code spans and blocks. */
function linkTargets(text: string): string[] {
  const prose = text.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!);
}

test('every relative link in the README files and docs/ names a file in the repository', () => {
  const files = markdownFiles();
  assert.ok(files.length >= 3, `found the documentation files (${files.length})`);
  const broken: string[] = [];
  let checked = 0;
  for (const file of files) {
    for (const target of linkTargets(readFileSync(file, 'utf8'))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('#')) continue;
      const path = resolve(dirname(file), decodeURI(target.split('#')[0]!));
      checked++;
      const where = `${relative(root, file)} → ${target}`;
      if (relative(root, path).startsWith('..')) broken.push(`${where} (outside the repository)`);
      else if (!existsSync(path)) broken.push(`${where} (no such file)`);
    }
  }
  assert.ok(checked > 0, 'some relative links were checked');
  assert.deepEqual(broken, []);
});

/** The anchors GitHub gives a Markdown file's headings (outside code blocks), duplicates numbered. */
function headingAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const [, title] of text.replace(/```[\s\S]*?```/g, '').matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = title!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

test('every link to a section of a Markdown file names a heading it has', () => {
  const broken: string[] = [];
  let checked = 0;
  for (const file of markdownFiles()) {
    for (const target of linkTargets(readFileSync(file, 'utf8'))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target) || !target.includes('#')) continue;
      const [path, anchor] = target.split('#') as [string, string];
      const doc = path === '' ? file : resolve(dirname(file), decodeURI(path));
      if (!doc.endsWith('.md') || !existsSync(doc)) continue;
      checked++;
      if (!headingAnchors(readFileSync(doc, 'utf8')).has(decodeURIComponent(anchor))) broken.push(`${relative(root, file)} → ${target}`);
    }
  }
  assert.ok(checked > 0, 'some section links were checked');
  assert.deepEqual(broken, []);
});

test('no documentation names a path outside the repository', () => {
  const outside = markdownFiles().filter((f) => /\.\.\/shared\//.test(readFileSync(f, 'utf8')));
  assert.deepEqual(
    outside.map((f) => relative(root, f)),
    [],
  );
});
