// Which Worker Deployment Version a worker process polls as (worker/deployment.ts): none without a
// deployment name (the suites' in-process fleets), else the configured build id or the build's own.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../shared/config.js';
import { deploymentOptions, workerVersioning } from '../../worker/deployment.js';

const base = { DATABASE_URL: 'postgres://u@127.0.0.1:5432/db', TEMPORAL_ADDRESS: '127.0.0.1:7233', S3_ENDPOINT: 'http://127.0.0.1:9000', S3_ACCESS_KEY: 'k', S3_SECRET_KEY: 's' };
const noFile = () => {
  throw new Error('ENOENT');
};

describe('worker versioning settings', () => {
  test('off without WORKER_DEPLOYMENT_NAME', () => {
    assert.equal(workerVersioning(loadConfig(base), noFile), null);
  });

  test('the configured build id, else the one the build wrote; promote defaults to first', () => {
    assert.deepEqual(workerVersioning(loadConfig({ ...base, WORKER_DEPLOYMENT_NAME: 'mediagen', WORKER_BUILD_ID: 'abc123' }), noFile), { deploymentName: 'mediagen', buildId: 'abc123', promote: 'first' });
    assert.deepEqual(workerVersioning(loadConfig({ ...base, WORKER_DEPLOYMENT_NAME: 'mediagen', WORKER_DEPLOYMENT_PROMOTE: 'always' }), () => '0123abcd'), { deploymentName: 'mediagen', buildId: '0123abcd', promote: 'always' });
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
});
