// Prebuilds the workflow bundles at build time (npm run build) so production workers load code
// instead of bundling at start: the plain one, and one with the OpenTelemetry workflow interceptors
// for workers running with tracing on (workflow interceptors must be inside the bundle; tracing off
// runs without them at all).
//
// Bundling takes most of a warm test build, so it is skipped when its inputs have not changed: the
// compiled modules workflows/index.js reaches through relative imports, this script, and
// package-lock.json (the packages bundled in). Their hash is kept next to the bundles.
import { bundleWorkflowCode } from '@temporalio/worker';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const workflowsPath = fileURLToPath(new URL('../../workflows/index.js', import.meta.url));
const out = fileURLToPath(new URL('../../workflow-bundle.js', import.meta.url));
const tracedOut = out.replace(/\.js$/, '.traced.js');
const inputsOut = out.replace(/\.js$/, '.inputs');
const otelWorkflowInterceptors = createRequire(import.meta.url).resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors');
const logger = { log() {}, trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error };

/** A hash of everything the bundles are made of (see above). */
async function inputsHash(): Promise<string> {
  const hash = createHash('sha256');
  const seen = new Set<string>();
  const queue = [workflowsPath];
  for (let path = queue.shift(); path; path = queue.shift()) {
    if (seen.has(path)) continue;
    seen.add(path);
    const code = await readFile(path, 'utf8');
    hash.update(`${path}\0${code}\0`);
    // Relative imports only: packages are pinned by package-lock.json, hashed below.
    for (const m of code.matchAll(/(?:\bfrom|\bimport)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)) queue.push(resolve(dirname(path), m[1]!));
  }
  hash.update(await readFile(fileURLToPath(import.meta.url)));
  hash.update(await readFile(fileURLToPath(new URL('../../../package-lock.json', import.meta.url))));
  return hash.digest('hex');
}

const inputs = await inputsHash();
const previous = existsSync(inputsOut) ? (await readFile(inputsOut, 'utf8')).trim() : '';
if (previous === inputs && existsSync(out) && existsSync(tracedOut)) {
  console.log('workflow bundle: unchanged inputs, kept');
} else {
  for (const [path, workflowInterceptorModules] of [
    [out, []],
    [tracedOut, [otelWorkflowInterceptors]],
  ] as const) {
    const { code } = await bundleWorkflowCode({ workflowsPath, workflowInterceptorModules: [...workflowInterceptorModules], logger });
    await writeFile(path, code);
    console.log(`workflow bundle: ${path} (${Math.round(code.length / 1024)} KiB)`);
  }
  await writeFile(inputsOut, `${inputs}\n`);
}
