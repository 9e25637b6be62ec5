// Which Worker Deployment Version a worker process polls as (worker/deployment.ts): none without a
// deployment name (the suites' in-process fleets), else the configured build id or the build's own.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../shared/config.js';
import { deploymentOptions, newerDecision, workerVersioning, type DeploymentState, type VersionStatusName } from '../../worker/deployment.js';
import { workerPoolSize } from '../../worker/service.js';
import { parseRoles } from '../../worker/roles.js';

const base = {
  DATABASE_URL: 'postgres://u@127.0.0.1:5432/db',
  TEMPORAL_ADDRESS: '127.0.0.1:7233',
  S3_ENDPOINT: 'http://127.0.0.1:9000',
  S3_ACCESS_KEY: 'k',
  S3_SECRET_KEY: 's',
};
const noFile = () => {
  throw new Error('ENOENT');
};

describe('worker versioning settings', () => {
  test('off without WORKER_DEPLOYMENT_NAME', () => {
    assert.equal(workerVersioning(loadConfig(base), noFile), null);
  });

  test('the configured build id, else the one the build wrote; promote defaults to newer (rainbow deploys)', () => {
    assert.deepEqual(workerVersioning(loadConfig({ ...base, WORKER_DEPLOYMENT_NAME: 'mediagen', WORKER_BUILD_ID: 'abc123' }), noFile), {
      deploymentName: 'mediagen',
      buildId: 'abc123',
      promote: 'newer',
    });
    assert.deepEqual(
      workerVersioning(loadConfig({ ...base, WORKER_DEPLOYMENT_NAME: 'mediagen', WORKER_DEPLOYMENT_PROMOTE: 'always' }), () => '0123abcd'),
      { deploymentName: 'mediagen', buildId: '0123abcd', promote: 'always' },
    );
  });

  test('fails naming the variable when there is no build id at all, or a malformed one', () => {
    assert.throws(() => workerVersioning(loadConfig({ ...base, WORKER_DEPLOYMENT_NAME: 'mediagen' }), noFile), /WORKER_BUILD_ID is not set/);
    assert.throws(() => workerVersioning(loadConfig({ ...base, WORKER_DEPLOYMENT_NAME: 'mediagen', WORKER_BUILD_ID: 'a b' }), noFile), /WORKER_BUILD_ID:/);
    assert.throws(() => loadConfig({ ...base, WORKER_DEPLOYMENT_NAME: 'media.gen' }), /WORKER_DEPLOYMENT_NAME/);
    assert.throws(() => loadConfig({ ...base, WORKER_DEPLOYMENT_PROMOTE: 'sometimes' }), /WORKER_DEPLOYMENT_PROMOTE/);
  });

  test('every worker of a versioned process opts in, pinned by default', () => {
    assert.deepEqual(deploymentOptions({ deploymentName: 'mediagen', buildId: 'b1', promote: 'never' }), {
      version: { deploymentName: 'mediagen', buildId: 'b1' },
      useWorkerVersioning: true,
      defaultVersioningBehavior: 'PINNED',
    });
  });

  const deployment = (current: string | null, versions: [string, VersionStatusName, string][], ramping: string | null = null): DeploymentState => ({
    name: 'mediagen',
    current,
    ramping: ramping ? { buildId: ramping, percent: 10 } : null,
    versions: versions.map(([buildId, status, createdAt]) => ({ buildId, status, createdAt })),
  });

  test('`newer` promotes a build never current before and registered after the current one, nothing else', () => {
    const t0 = '2026-11-26T10:00:00.000Z';
    const t1 = '2026-11-26T11:00:00.000Z';
    assert.deepEqual(newerDecision(deployment(null, [['a', 'inactive', t0]]), 'a'), { promote: true }, 'the first build of a fresh deployment');
    assert.deepEqual(
      newerDecision(
        deployment('a', [
          ['a', 'current', t0],
          ['b', 'inactive', t1],
        ]),
        'b',
      ),
      { promote: true },
      'a new build beside the current one',
    );
    // The old build restarted after the new one took over: draining, or drained, never again current by itself.
    for (const status of ['draining', 'drained'] as const) {
      const d = newerDecision(
        deployment('b', [
          ['a', status, t0],
          ['b', 'current', t1],
        ]),
        'a',
      );
      assert.equal(d.promote, false, status);
      assert.match((d as { reason: string }).reason, new RegExp(`current before and is ${status}`));
    }
    const older = newerDecision(
      deployment('b', [
        ['z', 'inactive', t0],
        ['b', 'current', t1],
      ]),
      'z',
    );
    assert.equal(older.promote, false, 'a build that registered before the current one is older');
    assert.equal(
      newerDecision(
        deployment(
          'a',
          [
            ['a', 'current', t0],
            ['b', 'inactive', t1],
            ['c', 'inactive', t1],
          ],
          'c',
        ),
        'b',
      ).promote,
      false,
      'not while an operator ramps another build',
    );
    assert.equal(newerDecision(deployment('a', [['a', 'current', t0]]), 'b').promote, false, 'not registered yet');
  });

  test('`newer` never promotes a build our record says was current, whatever the server recreated', () => {
    const t0 = '2026-11-26T10:00:00.000Z';
    const t1 = '2026-11-26T11:00:00.000Z';
    const t2 = '2026-11-26T12:00:00.000Z';
    // A was current, B took over, A's version was deleted; a worker of A polls again: the server
    // registers A anew, inactive, with a create time after B's.
    const recreated = deployment('b', [
      ['b', 'current', t1],
      ['a', 'inactive', t2],
    ]);
    assert.deepEqual(newerDecision(recreated, 'a'), { promote: true }, "the server's state alone reads A as a new build");
    const d = newerDecision(recreated, 'a', new Set(['a', 'b']));
    assert.equal(d.promote, false);
    assert.match((d as { reason: string }).reason, /was the current version before \(recorded in deployment_builds\)/);
    // A build never current is promoted as before, the record notwithstanding.
    assert.deepEqual(
      newerDecision(
        deployment('b', [
          ['b', 'current', t0],
          ['c', 'inactive', t2],
        ]),
        'c',
        new Set(['a', 'b']),
      ),
      { promote: true },
    );
  });

  test("a worker's database pool has a connection for every Postgres step it may run at once", () => {
    const config = loadConfig({ ...base, DATABASE_POOL_SIZE: '10', IO_ACTIVITY_CONCURRENCY: '50' });
    assert.ok(workerPoolSize(config, parseRoles('workflows,io,reconciler')) >= 50);
    assert.equal(workerPoolSize(config, parseRoles('provider:local')), 10, 'a provider fleet runs no Postgres step as a local activity');
    assert.equal(workerPoolSize(loadConfig({ ...base, DATABASE_POOL_SIZE: '80' }), parseRoles('workflows')), 80);
  });
});
