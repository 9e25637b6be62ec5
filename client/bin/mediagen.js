#!/usr/bin/env node
// The `mediagen` command. A checked-in shim so npm can link the bin before the package is built.
let cli;
try {
  cli = await import('../dist/cli.js');
} catch (err) {
  if (err?.code !== 'ERR_MODULE_NOT_FOUND' || !String(err.message).includes('dist/cli.js')) throw err;
  process.stderr.write('mediagen: the client is not built yet: run `npm run build` in the repository (npm run dev builds it too)\n');
  process.exit(1);
}
process.exitCode = await cli.main();
