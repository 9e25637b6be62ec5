// scripts/npm-deps.sh `ensure_npm_deps`, as `npm test`, `npm run dev` and the benchmarks call it first:
// it installs on a fresh clone and after the lock file's content changed, and never for a lock file
// whose time moved but not its content (a branch switched and back, a fresh worktree) — an `npm ci`
// there costs a minute and empties the node_modules every other checkout shares. Run in a scratch
// directory with an `npm` on PATH that records its arguments and installs nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const script = fileURLToPath(new URL('../../../scripts/npm-deps.sh', import.meta.url));

function scratch() {
  const dir = mkdtempSync(join(tmpdir(), 'npm-deps-'));
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  // The fake npm: records the call and, as `npm ci` does, writes node_modules/.package-lock.json.
  writeFileSync(join(bin, 'npm'), `#!/bin/sh\necho "$*" >>"${join(dir, 'npm-calls')}"\nmkdir -p node_modules && : >node_modules/.package-lock.json\n`);
  chmodSync(join(bin, 'npm'), 0o755);
  const lock = join(dir, 'package-lock.json');
  const at = (seconds: number) => new Date(Date.UTC(2026, 0, 1) + seconds * 1000);
  return {
    dir,
    lock,
    /** Runs ensure_npm_deps there; answers the npm calls made so far. */
    ensure(): string[] {
      execFileSync('bash', ['-c', `source '${script}' && ensure_npm_deps`], { cwd: dir, env: { PATH: `${bin}:${process.env.PATH}` }, stdio: 'pipe' });
      return existsSync(join(dir, 'npm-calls')) ? readFileSync(join(dir, 'npm-calls'), 'utf8').trim().split('\n') : [];
    },
    /** Sets a file's modification time, in seconds after a fixed moment. */
    touch(file: string, seconds: number) {
      utimesSync(file, at(seconds), at(seconds));
    },
    stamp: join(dir, 'node_modules', '.package-lock.json'),
    close: () => rmSync(dir, { recursive: true, force: true }),
  };
}

test('a fresh clone is installed once; a lock file touched but unchanged is not installed again; a changed one is', () => {
  const s = scratch();
  try {
    writeFileSync(s.lock, '{"lockfileVersion":3,"packages":{}}\n');
    assert.deepEqual(s.ensure(), ['ci --no-audit --no-fund'], 'no node_modules: npm ci');
    assert.deepEqual(s.ensure(), ['ci --no-audit --no-fund'], 'installed: nothing more');

    // The lock file rewritten with the same bytes, newer than the install (git checkout, a new worktree).
    s.touch(s.stamp, 100);
    s.touch(s.lock, 200);
    assert.deepEqual(s.ensure(), ['ci --no-audit --no-fund'], 'the same content, a newer time: no npm ci');

    writeFileSync(s.lock, '{"lockfileVersion":3,"packages":{"node_modules/zod":{}}}\n');
    s.touch(s.lock, 300);
    assert.deepEqual(s.ensure(), ['ci --no-audit --no-fund', 'ci --no-audit --no-fund'], 'new content: npm ci');
  } finally {
    s.close();
  }
});

test("an install made by someone else's npm ci (CI's own) is trusted by its time, and its lock's content remembered", () => {
  const s = scratch();
  try {
    writeFileSync(s.lock, '{"lockfileVersion":3,"packages":{}}\n');
    mkdirSync(join(s.dir, 'node_modules'));
    writeFileSync(s.stamp, '');
    s.touch(s.lock, 100);
    s.touch(s.stamp, 200);
    assert.deepEqual(s.ensure(), [], 'the install is newer than the lock: nothing to do');
    s.touch(s.lock, 300);
    assert.deepEqual(s.ensure(), [], 'touched later, the same content: still nothing');
  } finally {
    s.close();
  }
});
