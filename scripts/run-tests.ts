// Runs test files in exactly the order given, two (or --test-concurrency) at a time, and prints
// TAP like `node --test` does. `node --test` sorts its files by name; npm test starts the longest
// files first instead (test/run-order.txt), so scripts/test.sh runs them through this instead.
//   node --enable-source-maps dist/scripts/run-tests.js [--test-concurrency N] [--test-timeout MS]
//     [--test-name-pattern RE]... [--test-reporter tap|spec|dot] FILE...
// The node flags this process runs with (--enable-source-maps) reach every test file's process.
import { run } from 'node:test';
import { dot, spec, tap } from 'node:test/reporters';

const reporters = { tap, spec: new spec(), dot } as const;

function parse(argv: string[]) {
  const out = { files: [] as string[], concurrency: 2, timeout: Infinity, namePatterns: [] as string[], reporter: 'tap' as keyof typeof reporters };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${arg} needs a value`);
      return v;
    };
    if (arg === '--test-concurrency') out.concurrency = Number(value());
    else if (arg === '--test-timeout') out.timeout = Number(value());
    else if (arg === '--test-name-pattern') out.namePatterns.push(value());
    else if (arg === '--test-reporter') {
      const r = value();
      if (!(r in reporters)) throw new Error(`--test-reporter ${r}: this runner knows ${Object.keys(reporters).join(', ')}`);
      out.reporter = r as keyof typeof reporters;
    } else if (arg.startsWith('-')) throw new Error(`${arg} is not supported by this runner`);
    else out.files.push(arg);
  }
  return out;
}

const opts = parse(process.argv.slice(2));
const stream = run({
  files: opts.files,
  concurrency: opts.concurrency,
  timeout: opts.timeout,
  ...(opts.namePatterns.length ? { testNamePatterns: opts.namePatterns } : {}),
});
stream.on('test:fail', (event) => {
  if (!event.todo) process.exitCode = 1; // a failing todo test does not fail the run, as with node --test
});
stream.compose(reporters[opts.reporter]).pipe(process.stdout);
