// The capacity model v2's arithmetic (scripts/bench/capacity-model.ts): per-job costs and capacities
// turn into the rate at which each resource saturates, the first bottleneck at a multiple of the
// measured rate, and the replica counts an overlay needs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { atMultiple, fig, replicasFor, saturations, type Resource } from '../../scripts/bench/capacity-model.js';

const r = (name: string, perJob: number, capacity: number, scalesOut = true): Resource => ({ name, unit: 'CPU ms', perJob, capacity, basis: '', scalesOut });

test('each resource saturates at capacity ÷ per-job cost; the lowest first, a resource no job uses never', () => {
  const s = saturations([r('gateway', 20, 2000), r('postgres', 50, 2000, false), r('unused', 0, 1000)]);
  assert.deepEqual(
    s.map((x) => [x.resource.name, x.saturatesAt]),
    [
      ['postgres', 40],
      ['gateway', 100],
      ['unused', Infinity],
    ],
  );
});

test('at a multiple of the measured rate the first bottleneck is the resource used most, with its use and demand', () => {
  const rs = [r('gateway', 20, 2000), r('history', 10, 4000), r('postgres', 50, 2000, false)];
  const at10 = atMultiple(rs, 2, 10);
  assert.equal(at10.rate, 20);
  assert.equal(at10.first.resource.name, 'postgres');
  assert.equal(at10.first.demand, 1000);
  assert.equal(at10.first.use, 0.5);
  assert.deepEqual(
    at10.uses.map((u) => [u.resource.name, u.use]),
    [
      ['postgres', 0.5],
      ['gateway', 0.2],
      ['history', 0.05],
    ],
  );
  // Which resource leads depends on the costs, not on the list's order.
  const cheapDb = atMultiple([r('postgres', 5, 2000, false), r('gateway', 20, 2000)], 2, 100);
  assert.equal(cheapDb.first.resource.name, 'gateway');
  assert.equal(cheapDb.first.use, 2);
  assert.throws(() => atMultiple([], 1, 10), /no resources/);
});

test('replicas: cores at the target use, N+1 (5 % spare above 20), floor a quarter of the ceiling and at least 2', () => {
  // 10 jobs/s × 90 ms = 0.9 cores → 0.9 / 0.6 = 1.5 → 2 busy + 1 spare.
  assert.deepEqual(replicasFor(10, 90), { cores: 0.9, busy: 2, max: 3, min: 2 });
  // 1,000 jobs/s × 58 ms = 58 cores → 96.7 → 97 busy + 5 spare = 102, floor 26.
  assert.deepEqual(replicasFor(1000, 58), { cores: 58, busy: 97, max: 102, min: 26 });
  // Exactly at the target: no extra replica for rounding.
  assert.equal(replicasFor(6, 100).busy, 1);
  // Nothing to carry still keeps two for a rollout or a lost node.
  assert.deepEqual(replicasFor(0, 10), { cores: 0, busy: 0, max: 2, min: 2 });
  assert.equal(replicasFor(10, 90, { coresPerReplica: 2, targetUse: 0.9 }).busy, 1);
  assert.throws(() => replicasFor(1, 1, { targetUse: 0 }));
});

test('figures print at three significant digits, thousands grouped, infinity as ∞', () => {
  assert.equal(fig(0.012345), '0.0123');
  assert.equal(fig(12.345), '12.3');
  assert.equal(fig(12345.6), '12,346');
  assert.equal(fig(Infinity), '∞');
  assert.equal(fig(0), '0');
});
