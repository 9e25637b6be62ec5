// The cluster chaos suite (`npm run test:cluster`; its smoke, test/e2e/cluster-smoke.test.ts, runs in
// `npm test`) on the cluster profile (scripts/stack-cluster.sh): Temporal as separate services
// behind HAProxy, Postgres primary and synchronous standby under Patroni, two gateways and two
// processes of every worker fleet. Under CLUSTER_CHAOS_JOBS image jobs (default 200) and
// CLUSTER_CHAOS_PIPELINES two-step pipelines (default 5) on the fake fal queue, each fault in turn:
// a history host, a matching host and a frontend killed (SIGKILL), the Postgres primary killed
// (Patroni promotes the standby), one worker process partitioned for 30 s (iptables drops every
// packet of its sockets), 200 ms each way between the workers and the frontends. Each fault is shown
// to have happened; after each, every job and pipeline completes, credits are exact (SQL over the
// ledger), no job reached the provider twice, and the recovery time (fault → next completed job) is
// printed, with p50 and max over the faults at the end.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { clusterFaults, type ClusterFaults } from '../support/cluster-faults.js';
import { chaosOverrides, inFlight, settle, submitLoad, type Load } from '../support/cluster-chaos.js';
import { startLiveFal, type LiveFal } from '../support/fake-providers/live-fal.js';
import { openProfileSuite, processAlive, type ProfileSuite } from '../support/profile-stack.js';
import { waitFor } from '../support/stack.js';

const JOBS = Number(process.env.CLUSTER_CHAOS_JOBS ?? 200);
const PIPELINES = Number(process.env.CLUSTER_CHAOS_PIPELINES ?? 5);
let suite: ProfileSuite;
let faults: ClusterFaults;
let live: LiveFal;
const recoveries: [string, number][] = [];

before(
  async () => {
    live = await startLiveFal();
    live.fal.flow = ['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED'];
    suite = await openProfileSuite('cluster', { overrides: chaosOverrides(live.env) });
    faults = clusterFaults(suite.stack);
  },
  { timeout: 1_800_000 },
);

after(
  async () => {
    if (recoveries.length) {
      const sorted = recoveries.map(([, ms]) => ms).sort((a, b) => a - b);
      const p50 = sorted[Math.floor((sorted.length - 1) / 2)]!;
      console.log(`[cluster] recovery over ${sorted.length} faults: p50 ${(p50 / 1000).toFixed(1)} s, max ${(sorted.at(-1)! / 1000).toFixed(1)} s`);
      for (const [fault, ms] of recoveries) console.log(`[cluster]   ${fault}: ${(ms / 1000).toFixed(1)} s`);
    }
    await faults?.healAll();
    await suite?.close();
    await live?.close();
  },
  { timeout: 900_000 },
);

/** The load submitted and partly at the provider, the fault, then the checks; `up cluster` restores the topology. */
async function underLoad(label: string, fault: (load: Load) => Promise<Date>, heal?: () => Promise<unknown>) {
  const { stack, db } = suite;
  const load = await submitLoad(stack.gateways, db, { jobs: JOBS, pipelines: PIPELINES });
  await inFlight(live.fal, load, Math.min(10, JOBS));
  const faultAt = await fault(load);
  await heal?.();
  const { recoveryMs } = await settle(db, live.fal, load, faultAt, label);
  recoveries.push([label, recoveryMs]);
  await suite.up();
}

const timeout = 3_600_000;

for (const name of ['temporal-history-1', 'temporal-matching-1', 'temporal-frontend-1']) {
  test(`${name} killed with SIGKILL under ${JOBS} jobs and ${PIPELINES} pipelines: nothing lost, credits exact`, { timeout }, async () => {
    await underLoad(`${name} killed`, async () => {
      const pid = await suite.stack.pid(name);
      const at = new Date();
      console.log(`[cluster] ${(await faults.fault('kill', name)).trim()}`);
      assert.equal(processAlive(pid), false, `${name} (pid ${pid}) is gone`);
      return at;
    });
  });
}

test(`the Postgres primary killed under ${JOBS} jobs and ${PIPELINES} pipelines: the standby promoted, nothing lost, credits exact`, { timeout }, async () => {
  await underLoad('Postgres primary killed (failover)', async () => {
    const primary = await faults.leader();
    const at = new Date();
    console.log(`[cluster] ${(await faults.fault('kill', 'pg-primary')).trim().replace(/\n/g, '; ')}`);
    const promoted = await waitFor(
      'Patroni to promote the standby',
      async () => {
        const leader = await faults.leader();
        return /^pg-[12]$/.test(leader) && leader !== primary ? leader : undefined;
      },
      120_000,
      250,
    );
    console.log(`[cluster] ${promoted} promoted ${((Date.now() - at.getTime()) / 1000).toFixed(1)} s after ${primary} was killed`);
    return at;
  });
});

test(`worker-core-1 partitioned for 30 s under ${JOBS} jobs and ${PIPELINES} pipelines: nothing lost, credits exact`, { timeout }, async () => {
  await underLoad(
    'worker-core-1 partitioned 30 s',
    async () => {
      const at = new Date();
      console.log(`[cluster] ${(await faults.fault('partition', 'worker-core-1')).trim()}`);
      const rules = await faults.fault('show');
      assert.match(rules, /-j DROP/, 'the partition rules are present');
      assert.match(rules, /mg-fault:worker-core-1/);
      return at;
    },
    async () => {
      await new Promise((resolve) => setTimeout(resolve, 30_000));
      console.log(`[cluster] ${(await faults.fault('heal', 'worker-core-1')).trim()}`);
      assert.doesNotMatch(await faults.fault('show'), /mg-fault:worker-core-1/);
    },
  );
});

/**
 * Milliseconds of one HTTP/2 PING through an address to a frontend and its answer: one round trip
 * over the path, without a client's own start-up in it. (The server speaks first, its SETTINGS;
 * the clock starts when the client's preface, SETTINGS and PING leave.)
 */
function roundTripMs(address: string): Promise<number> {
  const i = address.lastIndexOf(':');
  const payload = Buffer.from('mgping!!');
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: address.slice(0, i), port: Number(address.slice(i + 1)) });
    let t0 = 0;
    let seen = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      if (!t0) {
        t0 = performance.now();
        const ping = Buffer.concat([Buffer.from([0, 0, 8, 6, 0, 0, 0, 0, 0]), payload]);
        socket.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]), ping]));
        return;
      }
      seen = Buffer.concat([seen, chunk]);
      if (seen.includes(payload)) {
        resolve(performance.now() - t0);
        socket.destroy();
      }
    });
    socket.setTimeout(30_000, () => socket.destroy(new Error(`no answer through ${address}`)));
    socket.once('error', reject);
  });
}

test(
  `200 ms each way between the workers and the frontends under ${JOBS} jobs and ${PIPELINES} pipelines: nothing lost, credits exact`,
  { timeout },
  async () => {
    const proxied = suite.stack.vars.CLUSTER_WORKER_TEMPORAL_ADDRESS!;
    try {
      await underLoad('200 ms workers ↔ frontends', async () => {
        const before = await roundTripMs(proxied);
        const at = new Date();
        console.log(`[cluster] ${(await faults.fault('delay', '200')).trim()}`);
        const during = await waitFor(
          'the delay to apply',
          async () => {
            const ms = await roundTripMs(proxied);
            return ms >= 400 ? ms : undefined;
          },
          30_000,
          500,
        );
        console.log(`[cluster] one round trip through the workers' path to a frontend: ${before.toFixed(1)} ms before, ${during.toFixed(1)} ms with the delay`);
        return at;
      });
    } finally {
      await faults.fault('delay', '0');
    }
  },
);
