// Prebuilds the workflow bundle at build time (npm run build) so production workers load code
// instead of bundling at start.
import { bundleWorkflowCode } from '@temporalio/worker';
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const workflowsPath = fileURLToPath(new URL('../workflows/index.js', import.meta.url));
const out = fileURLToPath(new URL('../workflow-bundle.js', import.meta.url));

const { code } = await bundleWorkflowCode({ workflowsPath, logger: { log() {}, trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error } });
await writeFile(out, code);
console.log(`workflow bundle: ${out} (${Math.round(code.length / 1024)} KiB)`);
