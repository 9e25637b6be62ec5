#!/usr/bin/env node
// The admin CLI: an OPERATOR tool, `mediagen-admin <command> [flags]`
// (`npm run admin -- …` in a checkout, `node dist/admin/main.js …` in the image). It is not an access
// control boundary: whoever can run it with a DATABASE_URL can do anything the database role can
// (`--as` only records which owner a key change is made for; it authenticates nobody). Run it only
// from an operator's shell, with a database role that the gateway and workers never get, never
// behind an API or from an untrusted process. `migrate down` asks for confirmation (`--yes` skips
// the question for scripts).
// Human text by default, `--json` for scripts. Exit codes scripts can rely on:
//   0 ok · 1 other failure · 2 usage error · 3 not found · 4 forbidden · 5 conflict / insufficient credits
// It reads DATABASE_URL (and S3_* for `seed`) from the environment and never prints a secret
// except the API key it has just created, once.
import { pathToFileURL } from 'node:url';
import { realpathSync } from 'node:fs';
import { runAdmin } from './run.js';

export { exitCodes, UsageError } from './command.js';
export { commands, helpText, runAdmin, type RunResult } from './run.js';

/** A yes/no prompt on the terminal; without one (a pipe, CI) the answer is no. */
async function terminalConfirm(question: string): Promise<boolean> {
  if (!process.stdin.isTTY) return false;
  const { createInterface } = await import('node:readline/promises');
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return (await rl.question(question)).trim().toLowerCase() === 'yes';
  } finally {
    rl.close();
  }
}

async function main(): Promise<void> {
  const r = await runAdmin(process.argv.slice(2), process.env, { confirm: terminalConfirm });
  if (r.stdout) process.stdout.write(r.stdout);
  if (r.stderr) process.stderr.write(r.stderr);
  process.exitCode = r.code;
}

const invokedDirectly = (() => {
  try {
    return process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href;
  } catch {
    return false;
  }
})();
if (invokedDirectly) await main();
