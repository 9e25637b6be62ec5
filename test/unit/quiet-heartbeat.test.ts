// A provider activity's first second sends no heartbeat (activities/jobs.ts, quietHeartbeat): the
// SDK would send the first one at once, a server round trip for a step that is about to end.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MockActivityEnvironment } from '@temporalio/testing';
import { QUIET_START_MS, quietHeartbeat } from '../../activities/jobs.js';

async function sent(run: (h: ReturnType<typeof quietHeartbeat>) => void): Promise<unknown[]> {
  const mock = new MockActivityEnvironment();
  const beats: unknown[] = [];
  mock.on('heartbeat', (d: unknown) => beats.push(d));
  const h = quietHeartbeat(QUIET_START_MS);
  await mock.run(async () => run(h));
  return beats;
}

test('heartbeats within the first second of an attempt are not sent; later ones are', async () => {
  const t0 = 1_000_000;
  const beats = await sent((h) => {
    h.begin(t0);
    h.beat('start', t0);
    h.beat('render', t0 + QUIET_START_MS - 1);
    h.beat('upload', t0 + QUIET_START_MS);
    h.beat('store', t0 + 5 * QUIET_START_MS);
  });
  assert.deepEqual(beats, ['upload', 'store']);
});

test('the quiet second counts from the first beat when begin() was not called', async () => {
  const t0 = 2_000_000;
  assert.deepEqual(await sent((h) => [h.beat('a', t0), h.beat('b', t0 + 10), h.beat('c', t0 + QUIET_START_MS + 10)]), ['c']);
});

test('each attempt has its own quiet second', async () => {
  const h = quietHeartbeat(QUIET_START_MS);
  const first = new MockActivityEnvironment();
  const second = new MockActivityEnvironment();
  const beats: string[] = [];
  first.on('heartbeat', (d: string) => beats.push(`first ${d}`));
  second.on('heartbeat', (d: string) => beats.push(`second ${d}`));
  await first.run(async () => h.begin(0));
  await second.run(async () => h.begin(QUIET_START_MS));
  await first.run(async () => h.beat('x', QUIET_START_MS));
  await second.run(async () => h.beat('y', QUIET_START_MS + 1));
  assert.deepEqual(beats, ['first x']);
});
