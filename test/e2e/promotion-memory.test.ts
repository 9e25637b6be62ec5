// Promotion that remembers, on the test stack's Temporal server (Worker Versioning) and Postgres:
// build A becomes current, B takes over, A's version is deleted from the server; a worker of A then
// polls again, and the server registers A anew, inactive, with a create time after B's — the state
// in which the server alone reads A as the newest build. A's promoter still leaves B current,
// because deployment_builds recorded A as current once. Three processes of one build run one
// promoter between them (its lease), and another takes over when that one stops.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { Client, type Connection } from '@temporalio/client';
import { connectClient } from '../../shared/temporal-connection.js';
import { createTestDatabase, testConfig, waitFor, type TestDatabase } from '../support/stack.js';
import { startWorkers, type Workers } from '../support/services.js';
import { describeDeployment, newerDecision } from '../../worker/deployment.js';
import { leaseHolders, leaseDeployment } from '../../worker/control-lease.js';
import { randomToken } from '../../shared/ids.js';
import type { Config } from '../../shared/config.js';

let tdb: TestDatabase;
let connection: Connection;
let temporal: Client;
const prefix = `pm-${randomToken(8).toLowerCase()}`;
const name = `pm-${randomToken(8).toLowerCase()}`;
const running: Workers[] = [];

before(async () => {
  tdb = await createTestDatabase();
  const config = testConfig(tdb.url);
  connection = await connectClient(config);
  temporal = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
});

after(async () => {
  for (const w of running) await w.stop().catch(() => undefined);
  await connection?.close();
  await tdb?.drop();
});

function buildConfig(buildId: string): Config {
  return testConfig(tdb.url, {
    LOG_LEVEL: 'info',
    TASK_QUEUE_PREFIX: prefix,
    WORKER_DEPLOYMENT_NAME: name,
    WORKER_BUILD_ID: buildId,
    WORKER_DEPLOYMENT_PROMOTE: 'newer',
    WORKER_DRAIN_CHECK_MS: '0',
  });
}

/** A provider fleet of `buildId` (one task queue: the quickest complete build), with its log lines. */
async function startBuild(buildId: string): Promise<{ workers: Workers; lines: string[] }> {
  const lines: string[] = [];
  const logDestination = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  const workers = await startWorkers(buildConfig(buildId), tdb.db, 'provider:local', { logDestination });
  running.push(workers);
  return { workers, lines };
}

const deployment = () => describeDeployment(temporal.workflowService, 'default', name);
const promotions = (lines: string[]) => lines.filter((l) => l.includes('"msg":"this build is now the current version"')).length;

describe('a deleted old build whose worker polls again', () => {
  test('never becomes current again by itself', { timeout: 900_000 }, async () => {
    const a = await startBuild('a');
    await waitFor('A to make itself current', async () => (await deployment())?.current === 'a', 60_000, 250);
    const b = await startBuild('b');
    await waitFor('B to make itself current', async () => (await deployment())?.current === 'b', 60_000, 250);
    // B's promoter records B after the server made it current: on a loaded machine the server shows
    // B current before the row is written.
    const builds = async () =>
      (await tdb.db.selectFrom('deployment_builds').select('build_id').where('deployment_name', '=', name).orderBy('build_id').execute()).map(
        (r) => r.build_id,
      );
    await waitFor('B to be recorded as once current', async () => ((await builds()).includes('b') ? true : undefined), 30_000, 100);
    assert.deepEqual(await builds(), ['a', 'b'], 'both builds are recorded as once current');

    // A's workers go; its version is deleted once the server no longer sees them poll.
    await a.workers.stop();
    await waitFor(
      "A's version to be deleted",
      async () => {
        try {
          await temporal.workflowService.deleteWorkerDeploymentVersion({
            namespace: 'default',
            deploymentVersion: { deploymentName: name, buildId: 'a' },
            skipDrainage: true,
            identity: 'promotion-memory-test',
          });
          return true;
        } catch {
          return false;
        }
      },
      600_000,
      5_000,
    );
    assert.ok(!(await deployment())?.versions.some((v) => v.buildId === 'a'), 'the server forgot A');

    // A worker of A polls again: the server registers A anew.
    const again = await startBuild('a');
    const state = await waitFor(
      'A to be registered again',
      async () => {
        const d = await deployment();
        return d?.versions.some((v) => v.buildId === 'a') ? d : undefined;
      },
      60_000,
      250,
    );
    const [va, vb] = ['a', 'b'].map((id) => state.versions.find((v) => v.buildId === id)!);
    assert.equal(va!.status, 'inactive');
    assert.ok(va!.createdAt! > vb!.createdAt!, 'A is registered after B');
    assert.deepEqual(newerDecision(state, 'a'), { promote: true }, "by the server's state alone A would promote itself");

    const decided = await waitFor(
      'the A worker to decide',
      () => again.lines.find((l) => l.includes('this build is not made the current version') || l.includes('this build is now the current version')),
      60_000,
      100,
    );
    assert.match(decided, /not made the current version/, decided);
    assert.match(decided, /was the current version before \(recorded in deployment_builds\)/, decided);
    assert.equal((await deployment())?.current, 'b', 'B stays current');
    assert.equal(promotions(b.lines), 1);
  });
});

describe('one promoter per build', () => {
  test('three processes of a build run one promoter; another takes over when it stops', { timeout: 300_000 }, async () => {
    const c = await Promise.all([startBuild('c'), startBuild('c'), startBuild('c')]);
    await waitFor('C to make itself current', async () => (await deployment())?.current === 'c', 60_000, 250);
    const holders = async () => (await leaseHolders(tdb.db, leaseDeployment(buildConfig('c')))).get('build-promotion:c');
    const first = await waitFor('the promoter lease to be held', holders, 30_000, 100);
    // The promoter logs its promotion after the server answered it: on a loaded machine the server
    // may show C current before the line is written.
    await waitFor('the promotion to be logged', async () => c.some((p) => promotions(p.lines) > 0) || undefined, 30_000, 100);
    const promoted = c.map((p) => promotions(p.lines));
    assert.equal(
      promoted.reduce((x, y) => x + y, 0),
      1,
      `one process promoted C (${promoted.join(', ')})`,
    );
    const runs = c.filter((p) => p.lines.some((l) => l.includes('"msg":"this build is') || l.includes('"msg":"not the current version yet'))).length;
    assert.equal(runs, 1, 'only the lease holder ran the promoter');
    // The holder stops: another process of C holds the lease within its TTL and a third of it.
    const holderIndex = c.findIndex((p) => promotions(p.lines) === 1);
    await c[holderIndex]!.workers.stop();
    const next = await waitFor(
      'another process to hold the promoter lease',
      async () => {
        const h = await holders();
        return h && h.holder !== first.holder ? h : undefined;
      },
      30_000,
      200,
    );
    assert.ok(next.epoch > first.epoch, 'a new tenure');
    assert.equal((await deployment())?.current, 'c');
  });
});
