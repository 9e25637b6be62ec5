// The cluster profile's shape, without starting it (test/e2e/cluster-smoke.test.ts and
// test/cluster/chaos.test.ts run it): every worker fleet and the gateway run as at least two
// processes, and those processes take exactly the roles of the prod profile's fleets; Temporal runs
// its services apart with enough history shards that a host loss hands shards over, on the prod
// profile's dynamic config (fairness); the failover tool and its pinned packages.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = (p: string) => fileURLToPath(new URL(`../../../${p}`, import.meta.url));
const processes = (file: string) =>
  readFileSync(root(file), 'utf8')
    .split('\n')
    .filter((l) => l.trim() && !l.startsWith('#'))
    .map((l) => l.trim().split(/\s+/) as [string, string, string?]);

test('two gateways and at least two processes of every fleet, covering every role of the prod profile', () => {
  const cluster = processes('scripts/cluster/processes');
  assert.ok(cluster.filter(([, cmd]) => cmd === 'gateway').length >= 2);
  const fleets = new Map<string, number>();
  for (const [, cmd, roles] of cluster) if (cmd === 'worker') fleets.set(roles!, (fleets.get(roles!) ?? 0) + 1);
  for (const [roles, n] of fleets) assert.ok(n >= 2, `fleet ${roles} runs ${n} process(es)`);
  const clusterRoles = new Set([...fleets.keys()].flatMap((r) => r.split(',')));
  const prodRoles = new Set(processes('scripts/prod/processes').flatMap(([, cmd, roles]) => (cmd === 'worker' ? roles!.split(',') : [])));
  assert.deepEqual([...clusterRoles].sort(), [...prodRoles].sort());
});

test('Temporal as separate services (two of each but the worker service), 64 history shards, the prod dynamic config', () => {
  const script = readFileSync(root('scripts/stack-cluster.sh'), 'utf8');
  assert.match(script, /CLUSTER_TEMPORAL_SERVICES=\(frontend-1 frontend-2 history-1 history-2 matching-1 matching-2 worker\)/);
  assert.match(script, /start --service "\$service"/);
  assert.match(script, /TEMPORAL_DYNAMIC_CONFIG="\$ROOT\/scripts\/prod\/temporal-dynamicconfig\.yaml"/);
  assert.match(readFileSync(root('scripts/cluster/temporal-server.yaml'), 'utf8'), /^\s*numHistoryShards: 64$/m);
});

test('Postgres fails over by Patroni in synchronous mode behind an HAProxy that follows the leader; packages pinned', () => {
  const script = readFileSync(root('scripts/stack-cluster.sh'), 'utf8');
  assert.match(script, /synchronous_mode: true/);
  assert.match(script, /http-check send meth GET uri \/primary/);
  assert.match(script, /on-marked-down shutdown-sessions/);
  const apt = /CLUSTER_APT=\(([^)]*)\)/.exec(script)![1]!.split(/\s+/).filter(Boolean);
  for (const pkg of ['patroni', 'etcd-server', 'etcd-client', 'haproxy'])
    assert.ok(
      apt.some((p) => p.startsWith(`${pkg}=`)),
      `${pkg} is pinned`,
    );
  for (const spec of apt) assert.match(spec, /^[a-z0-9.+-]+=[0-9][\w.+~:-]*$/, `${spec} names a version`);
});
