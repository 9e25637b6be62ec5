// shared/one-at-a-time.ts: calls made at once run one after the other, in order, each answered with
// its own run's result; a failed run does not stop the next. The webhook dispatcher's passes use it
// (worker/webhook-dispatcher.ts), so a notification's pass and the sweep's never read a workspace's
// in-flight count side by side and together dispatch past its cap.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { oneAtATime } from '../../shared/one-at-a-time.js';

test('calls made at once run one at a time, in call order, each with its own result; a failure does not block the next', async () => {
  let running = 0;
  let most = 0;
  let n = 0;
  const gates: Array<() => void> = [];
  const run = oneAtATime(async () => {
    const mine = ++n;
    running++;
    most = Math.max(most, running);
    await new Promise<void>((release) => gates.push(release));
    running--;
    if (mine === 2) throw new Error('run 2 failed');
    return mine;
  });
  const calls = [run(), run(), run()];
  const settled = Promise.allSettled(calls);
  // Release each run as it starts: only one is ever waiting at its gate.
  for (let released = 0; released < 3; released++) {
    while (gates.length === 0) await new Promise((r) => setImmediate(r));
    assert.equal(gates.length, 1, 'one run at its gate at a time');
    gates.shift()!();
  }
  const results = await settled;
  assert.equal(most, 1);
  assert.deepEqual(
    results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)),
    [1, 'run 2 failed', 3],
  );
});
