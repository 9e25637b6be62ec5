// The smoke of the cluster chaos suite (test/cluster/chaos.test.ts), run by `npm test` in the side
// lane so CI keeps the cluster profile alive: under a small load on the fake fal queue, one Temporal
// history host is killed (SIGKILL), then the Postgres primary (its Patroni and its postmaster) so
// that Patroni promotes the standby behind HAProxy's endpoint. After each, every job and pipeline
// completes, credits are exact and each job reached the provider once; `up cluster` brings the killed
// processes back (the old primary as the new standby).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { clusterFaults, type ClusterFaults } from '../support/cluster-faults.js';
import { chaosOverrides, inFlight, settle, submitLoad } from '../support/cluster-chaos.js';
import { startLiveFal, type LiveFal } from '../support/fake-providers/live-fal.js';
import { openProfileSuite, processAlive, type ProfileSuite } from '../support/profile-stack.js';
import { waitFor } from '../support/stack.js';

const JOBS = Number(process.env.CLUSTER_SMOKE_JOBS ?? 20);
let suite: ProfileSuite;
let faults: ClusterFaults;
let live: LiveFal;

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
    await faults?.healAll();
    await suite?.close();
    await live?.close();
  },
  { timeout: 900_000 },
);

test(`a history host killed under ${JOBS} jobs and a pipeline: all complete, credits exact, one submit each`, { timeout: 1_500_000 }, async () => {
  const { stack, db } = suite;
  const load = await submitLoad(stack.gateways, db, { jobs: JOBS, pipelines: 1 });
  await inFlight(live.fal, load, Math.min(5, JOBS));
  const pid = await stack.pid('temporal-history-1');
  const faultAt = new Date();
  console.log(`[cluster] ${(await faults.fault('kill', 'temporal-history-1')).trim()}`);
  assert.equal(processAlive(pid), false, 'the history host is gone');
  await settle(db, live.fal, load, faultAt, 'history host killed');
  assert.match(await suite.up(), /temporal-history-1: started/);
});

test(
  `the Postgres primary killed under ${JOBS} jobs and a pipeline: the standby promoted, all complete, credits exact, one submit each`,
  { timeout: 1_500_000 },
  async () => {
    const { stack, db } = suite;
    const load = await submitLoad(stack.gateways, db, { jobs: JOBS, pipelines: 1 });
    await inFlight(live.fal, load, Math.min(5, JOBS));
    const primary = await faults.leader();
    assert.match(primary, /^pg-[12]$/);
    const faultAt = new Date();
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
    console.log(`[cluster] ${promoted} promoted in ${((Date.now() - faultAt.getTime()) / 1000).toFixed(1)} s (was ${primary})`);
    await settle(db, live.fal, load, faultAt, 'Postgres primary killed');
    assert.match(await suite.up(), new RegExp(`${primary}: started Patroni`));
  },
);
