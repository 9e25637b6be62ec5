// Preloaded with `node --import` (NODE_OPTIONS) to record what a process loads: every ES module
// through a loader hook, and every CommonJS module (require.cache) when the process exits. Tests
// read the file named by MODULE_LOG.
import { createRequire, register } from 'node:module';
import { appendFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

register(new URL('./module-log-hooks.js', import.meta.url));
const require = createRequire(import.meta.url);
process.on('exit', () => {
  if (!process.env.MODULE_LOG) return;
  appendFileSync(
    process.env.MODULE_LOG,
    Object.keys(require.cache)
      .map((path) => `${pathToFileURL(path).href}\n`)
      .join(''),
  );
});
