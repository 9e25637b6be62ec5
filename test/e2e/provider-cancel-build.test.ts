// A provider cancel that a job's run hands off (here the request of the route it gave up) runs on the
// deployment's current build, not on the build the job is pinned to: a child of a pinned run would
// inherit that build, whose workers a deploy may already have stopped. Two builds of one deployment
// on the real Temporal dev server (Worker Versioning), Postgres and MinIO; the job is pinned to X,
// Y becomes current, then fal's status endpoint goes down and the job fails over to xAI (fakes
// speaking fal's Queue API and xAI's video API on loopback).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTenant, waitFor } from '../support/stack.js';
import { startWorkers, type Workers } from '../support/services.js';
import { falRequestsWith, startFailoverStack, type FailoverStack } from '../support/failover-stack.js';
import { createVideoOnFal, jobFinished, jobRow } from '../support/job-helpers.js';
import { json } from '../support/fake-providers/server.js';
import { describeDeployment } from '../../worker/deployment.js';
import { randomToken } from '../../shared/ids.js';
import type { Config } from '../../shared/config.js';

let stack: FailoverStack<'xai'>;

before(async () => {
  stack = await startFailoverStack({ secondary: 'xai', roles: '', env: { PROVIDER_BREAKER_OPEN_MS: '3600000' } });
});

after(() => stack?.close());

test("a given-up route's cancel runs on the current build while the job stays on the build it is pinned to", { timeout: 300_000 }, async () => {
  const { fal, tdb, gw } = stack;
  const deployment = `cancel-build-${randomToken(8).toLowerCase()}`;
  const X = `x-${randomToken(8).toLowerCase()}`;
  const Y = `y-${randomToken(8).toLowerCase()}`;
  const build = (buildId: string, promote: Config['WORKER_DEPLOYMENT_PROMOTE']): Config => ({
    ...stack.config,
    WORKER_DEPLOYMENT_NAME: deployment,
    WORKER_BUILD_ID: buildId,
    WORKER_DEPLOYMENT_PROMOTE: promote,
    WORKER_DRAIN_CHECK_MS: 0,
  });
  const roles = 'workflows,io,fetch,provider:fal,provider:xai';
  const current = async () => (await describeDeployment(gw.client.workflowService, 'default', deployment))?.current;
  const buildOf = async (workflowId: string) =>
    (await gw.client.workflow.getHandle(workflowId).describe()).raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId;
  // The request stays queued at fal until the job gives the route up.
  fal.flow = ['IN_QUEUE'];

  const fleets: Workers[] = [];
  try {
    fleets.push(await startWorkers(build(X, 'first'), tdb.db, roles));
    await waitFor(`${X} to be current`, async () => (await current()) === X, 60_000, 250);
    const t = await createTenant(tdb.db, 100);
    const marker = '[cancel-on-current-build]';
    const id = await createVideoOnFal(gw.baseUrl, t, 'grok-video', marker);
    await waitFor(`${id}'s request at fal`, async () => ((await jobRow(tdb.db, id)).provider_ref ? true : undefined), 60_000, 100);
    assert.equal(await buildOf(id), X, 'the job is pinned to X');

    // A deploy: Y becomes current while X still serves its job.
    fleets.push(await startWorkers(build(Y, 'always'), tdb.db, roles));
    await waitFor(`${Y} to be current`, async () => (await current()) === Y, 60_000, 250);

    // fal's status endpoint goes down past the failover budget: the job's run (on X) gives fal up,
    // hands that request's cancel off and completes on xAI.
    fal.down(['status'], json(503, { detail: 'Service Unavailable' }));
    const row = await jobFinished(tdb.db, id);
    assert.equal(row.status, 'completed', JSON.stringify(row.error));
    assert.equal(await buildOf(id), X, 'the job ran to its end on X');

    const cancelId = `${id}-given-up-fal`;
    await waitFor(
      'the given-up request to be canceled',
      async () => ((await gw.client.workflow.getHandle(cancelId).describe()).status.name === 'COMPLETED' ? true : undefined),
      120_000,
      250,
    );
    assert.ok(falRequestsWith(fal, 'cancel', marker) >= 1, 'fal was asked to cancel the given-up request');
    assert.equal(await buildOf(cancelId), Y, 'the cancel ran on the current build');
  } finally {
    for (const f of fleets.reverse()) await f.stop();
  }
});
