// Prebuilds the workflow bundles at build time (npm run build) so production workers load code
// instead of bundling at start: the plain one, and one with the OpenTelemetry workflow interceptors
// for workers running with tracing on (workflow interceptors must be inside the bundle; tracing off
// runs without them at all).
import { bundleWorkflowCode } from '@temporalio/worker';
import { writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const workflowsPath = fileURLToPath(new URL('../workflows/index.js', import.meta.url));
const out = fileURLToPath(new URL('../workflow-bundle.js', import.meta.url));
const tracedOut = out.replace(/\.js$/, '.traced.js');
const otelWorkflowInterceptors = createRequire(import.meta.url).resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors');
const logger = { log() {}, trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error };

for (const [path, workflowInterceptorModules] of [
  [out, []],
  [tracedOut, [otelWorkflowInterceptors]],
] as const) {
  const { code } = await bundleWorkflowCode({ workflowsPath, workflowInterceptorModules: [...workflowInterceptorModules], logger });
  await writeFile(path, code);
  console.log(`workflow bundle: ${path} (${Math.round(code.length / 1024)} KiB)`);
}
