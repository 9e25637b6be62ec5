// The route pools' pure rules (shared/route-slots.ts): ROUTE_SLOTS parsing and lookup (a model's
// own pool before its provider's, none for the local renderer), the share by weight, and who gets a
// free slot — never a workspace at its share while another waits, free slots in fair order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decideSlot, grantOrder, parseRouteSlots, routePoolFor, shareOf, type WorkspaceDemand } from '../../shared/route-slots.js';
import { loadConfig } from '../../shared/config.js';

test('ROUTE_SLOTS parses provider and provider:model pools, and refuses a bad entry', () => {
  const pools = parseRouteSlots('fal=16, alibaba:replace-actor=1,xai=8,fal:fal-ai/veo3.1=3');
  assert.deepEqual(
    [...pools],
    [
      ['fal', 16],
      ['alibaba:replace-actor', 1],
      ['xai', 8],
      ['fal:fal-ai/veo3.1', 3],
    ],
  );
  assert.equal(parseRouteSlots(undefined).size, 0);
  for (const bad of ['fal', 'fal=0', 'fal=-1', 'fal=1.5', '=3', 'fal=x']) assert.throws(() => parseRouteSlots(bad), /ROUTE_SLOTS/, bad);
});

test("a request draws from its model's pool, else its provider's; the local renderer from none", () => {
  const pools = parseRouteSlots('fal=16,alibaba:replace-actor=1,fal:fal-ai/veo3.1=3,local=2');
  assert.deepEqual(routePoolFor(pools, 'alibaba', 'replace-actor'), { route: 'alibaba:replace-actor', slots: 1 });
  assert.equal(routePoolFor(pools, 'alibaba', 'talking-actor'), null);
  assert.deepEqual(routePoolFor(pools, 'fal', 'veo-3.1', 'fal-ai/veo3.1'), { route: 'fal:fal-ai/veo3.1', slots: 3 });
  assert.deepEqual(routePoolFor(pools, 'fal', 'nano-banana-2', 'fal-ai/nano-banana'), { route: 'fal', slots: 16 });
  assert.equal(routePoolFor(pools, 'local', 'nano-banana-2'), null);
  assert.equal(routePoolFor(pools, 'xai', 'grok-video'), null);
});

test('the config check names ROUTE_SLOTS when it is malformed', () => {
  const base = {
    DATABASE_URL: 'postgres://media@127.0.0.1:5432/media',
    TEMPORAL_ADDRESS: '127.0.0.1:7233',
    S3_ENDPOINT: 'http://127.0.0.1:9000',
    S3_ACCESS_KEY: 'media',
    S3_SECRET_KEY: 'not-a-real-secret',
  };
  assert.throws(() => loadConfig({ ...base, ROUTE_SLOTS: 'fal=0' }), /ROUTE_SLOTS/);
  assert.equal(loadConfig({ ...base, ROUTE_SLOTS: 'fal=2' }).ROUTE_SLOTS, 'fal=2');
});

const ws = (workspaceId: string, held: number, waiting: number, more: Partial<WorkspaceDemand> = {}): WorkspaceDemand => ({
  workspaceId,
  held,
  waiting,
  weight: 1,
  bestPriority: 3,
  oldestSince: 0,
  ...more,
});

test('a share is slots × weight / the weights of the workspaces holding or waiting', () => {
  assert.equal(shareOf(4, [ws('a', 3, 5, { weight: 3 }), ws('b', 0, 1)], 'a'), 3);
  assert.equal(shareOf(4, [ws('a', 3, 5, { weight: 3 }), ws('b', 0, 1)], 'b'), 1);
  assert.equal(shareOf(16, [ws('a', 1, 0), ws('b', 1, 0), ws('c', 0, 1), ws('d', 0, 2)], 'c'), 4);
});

test('free slots go in fair order; a workspace at its share waits while another waits', () => {
  // Full.
  assert.deepEqual(decideSlot(2, [ws('a', 2, 8)], 'a', 0), { granted: false, reason: 'full' });
  // A at its share (1 of 2) while B waits: refused even though a slot is free.
  assert.deepEqual(decideSlot(2, [ws('a', 1, 8), ws('b', 0, 1)], 'a', 0), { granted: false, reason: 'share' });
  assert.deepEqual(decideSlot(2, [ws('a', 1, 8), ws('b', 0, 1)], 'b', 0), { granted: true });
  // Alone, A uses every free slot, its waiters in order.
  assert.deepEqual(decideSlot(4, [ws('a', 1, 8)], 'a', 2), { granted: true });
  assert.deepEqual(decideSlot(4, [ws('a', 1, 8)], 'a', 3), { granted: false, reason: 'behind' });
  // Two free slots, A holding none and B one: A's first, then the tie goes to the better priority.
  const demand = [ws('a', 0, 3, { oldestSince: 5 }), ws('b', 1, 3, { bestPriority: 1, oldestSince: 9 }), ws('c', 1, 0)];
  assert.deepEqual(decideSlot(4, demand, 'a', 0), { granted: true });
  assert.deepEqual(decideSlot(4, demand, 'a', 1), { granted: false, reason: 'behind' });
  assert.deepEqual(decideSlot(4, demand, 'b', 0), { granted: true });
  // Weights: A (3) holding 2 comes before B (1) holding 1: 2/3 < 1/1.
  const weighted = [ws('a', 2, 5, { weight: 3 }), ws('b', 1, 5)];
  assert.deepEqual(decideSlot(4, weighted, 'a', 0), { granted: true });
  assert.deepEqual(decideSlot(4, weighted, 'b', 0), { granted: false, reason: 'share' });
});

test('a release grants its free slots in fair order, each grant counted before the next: turns go round between equals', () => {
  // A holds two, B none: B first; then A and B hold 2 and 1 and B waits for nothing more: A.
  assert.deepEqual(grantOrder(2, [ws('a', 2, 10), ws('b', 0, 1)]), ['b', 'a']);
  // Equal held and priority: the workspace served longest ago first, then the other, in turn.
  assert.deepEqual(grantOrder(3, [ws('a', 1, 10, { lastTakenAt: 200, oldestSince: 0 }), ws('b', 1, 10, { lastTakenAt: 100, oldestSince: 50 })]), [
    'b',
    'a',
    'b',
  ]);
  // Weights 3:1: three of every four grants to the first while both wait.
  const order = grantOrder(8, [ws('a', 0, 20, { weight: 3 }), ws('b', 0, 20)]);
  assert.equal(order.filter((w) => w === 'a').length, 6);
  // No waiter, no grant.
  assert.deepEqual(grantOrder(2, [ws('a', 1, 0)]), []);
});
