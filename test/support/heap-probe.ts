// Preloaded into a gateway process by tests that measure its memory (`node --expose-gc
// --import <this file>`): on SIGUSR2 it runs full collections and writes one line to stderr,
// `heap-probe {"heapUsed":…,"rss":…}`, so a test reads the live heap of the real process, not an
// estimate that garbage not yet collected would blur.
const collect = (globalThis as { gc?: () => void }).gc;

process.on('SIGUSR2', () => {
  if (!collect) {
    process.stderr.write('heap-probe {"error":"start the process with --expose-gc"}\n');
    return;
  }
  // Several passes: weak references and finalizers freed by one are collected by the next.
  for (let i = 0; i < 4; i++) collect();
  const { heapUsed, rss, external, arrayBuffers } = process.memoryUsage();
  process.stderr.write(`heap-probe ${JSON.stringify({ heapUsed, rss, external, arrayBuffers })}\n`);
});
