// Writes dist/build-id, the build id of Worker Versioning (WORKER_BUILD_ID when unset): a content
// hash of the code the gateway and workers run (every .js of dist/ but the tests, the benchmarks and
// the history recorder, which the Docker image drops, and the workflow bundle). The same code gives
// the same id, so restarting a build never looks like a new version; any change to it is a new one.
import { createHash } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const dist = fileURLToPath(new URL('../..', import.meta.url));
const out = join(dist, 'build-id');
const skipped = (rel: string) => rel.startsWith('test/') || /^scripts\/(bench-|save-histories)/.test(rel) || rel.startsWith('scripts/bench/');

async function files(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...(await files(path)));
    else if (entry.name.endsWith('.js')) found.push(path);
  }
  return found;
}

const hash = createHash('sha256');
const paths = (await files(dist))
  .map((p) => relative(dist, p).split('\\').join('/'))
  .filter((p) => !skipped(p))
  .sort();
for (const rel of paths) {
  hash.update(`${rel}\0`);
  hash.update(await readFile(join(dist, rel)));
  hash.update('\0');
}
const id = hash.digest('hex').slice(0, 16);
await writeFile(out, `${id}\n`);
console.log(`build id: ${id} (${paths.length} files)`);
