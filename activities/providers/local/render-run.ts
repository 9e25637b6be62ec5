// The run options every local render uses: the abort signal and a watchdog that grows with the
// length of what is rendered.
import type { RunOptions } from '../media-tools.js';

/** Options for a render of `mediaSeconds` of output: the abort signal and a generous watchdog. */
export function renderRun(signal: AbortSignal | undefined, mediaSeconds = 0): RunOptions {
  const timeoutMs = 120_000 + Math.ceil(mediaSeconds) * 10_000;
  return signal ? { signal, timeoutMs } : { timeoutMs };
}
