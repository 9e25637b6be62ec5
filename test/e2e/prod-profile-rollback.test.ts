// A rollback on the prod profile (`scripts/stack.sh up prod`, started or reused by scripts/test.sh):
// build B, a copy of this checkout's dist under another build id, is deployed beside A with the
// profile's own command and makes itself current. The rollback to A is what the Helm chart's
// pre-rollback hook runs (ops/helm templates/deployment-guard.yaml): `deployment guard --keep A
// --current A`. A release that keeps no build with workers is refused and changes nothing; the
// rollback promotes A while its workers still poll, and a new job then runs on A, completed within
// a bound (the figure is printed). Both builds are in the promotion memory, so neither promoter
// ever makes A current again by itself; B drains and its workers stop.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@temporalio/client';
import type { Database } from '../../db/index.js';
import { createTenant, waitFor } from '../support/stack.js';
import { api } from '../support/services.js';
import { openProfileSuite, type ProfileSuite } from '../support/profile-stack.js';
import { jobRow } from '../support/job-helpers.js';
import { describeDeployment } from '../../worker/deployment.js';
import { runAdmin } from '../../admin/main.js';
import { randomToken } from '../../shared/ids.js';

const dist = fileURLToPath(new URL('../../', import.meta.url));
/** How soon after the rollback began a new job must have completed on A. */
const ROLLBACK_BOUND_MS = 120_000;

let suite: ProfileSuite;
let stack: ProfileSuite['stack'];
let db: Database;
let temporal: Client;
let buildBDir: string | undefined;

const admin = async (...args: string[]) => {
  const r = await runAdmin(['deployment', ...args, '--json'], {
    TEMPORAL_ADDRESS: stack.config.TEMPORAL_ADDRESS,
    ...stack.temporalTls,
    TEMPORAL_NAMESPACE: 'default',
    WORKER_DEPLOYMENT_NAME: 'mediagen',
  });
  return { code: r.code, body: JSON.parse(r.stdout || r.stderr) as any };
};
const deployment = () => describeDeployment(temporal.workflowService, 'default', 'mediagen');

before(
  async () => {
    // B's workers stop soon after B drains (the default check is every 30 s).
    suite = await openProfileSuite('prod', { overrides: { WORKER_DRAIN_CHECK_MS: '5000' } });
    ({ stack, db, temporal } = suite);
  },
  { timeout: 4_200_000 },
);

after(
  async () => {
    await suite?.close(async () => {
      const A = stack.vars.PROD_BUILD_ID!;
      await waitFor(
        `${A} to be current`,
        async () => (await deployment())?.current === A || (await admin('promote', '--build-id', A)).code === 0,
        120_000,
        1000,
      ).catch(() => undefined);
    });
    if (buildBDir) await rm(buildBDir, { recursive: true, force: true });
  },
  { timeout: 600_000 },
);

test(
  'a rollback to A after B promoted itself: the guard refuses a release with no workers for new jobs, then promotes A, and new jobs run on A within the bound',
  { timeout: 1_500_000 },
  async () => {
    const A = stack.vars.PROD_BUILD_ID!;
    if ((await deployment())?.current !== A) {
      await waitFor(
        `${A} to be current`,
        async () => (await deployment())?.current === A || (await admin('promote', '--build-id', A)).code === 0,
        120_000,
        1000,
      );
    }
    // Build B: this build's dist under a build id of its own.
    buildBDir = await mkdtemp(join(tmpdir(), 'rollback-build-b-'));
    const distB = join(buildBDir, 'dist');
    await cp(dist, distB, { recursive: true });
    const B = `${A.slice(0, 40)}-r${randomToken(6).toLowerCase()}`;
    await writeFile(join(distB, 'build-id'), `${B}\n`);
    const deployed = await suite.up({ PROD_DIST: distB });
    assert.match(deployed, new RegExp(`build ${B} starts beside build ${A}`), deployed);
    await waitFor(`${B} to make itself current`, async () => (await deployment())?.current === B, 180_000, 500);

    // A release whose builds have no worker yet (a rollback to a build already removed) is refused:
    // B stays current, with its workers.
    const gone = `gone-${randomToken(6).toLowerCase()}`;
    const refused = await admin('guard', '--keep', gone, '--current', gone);
    assert.equal(refused.code, 5, JSON.stringify(refused.body));
    assert.match(refused.body.error.message, new RegExp(`removes the workers of ${B}, the current version, and ${gone} has no workers`));
    assert.equal((await deployment())?.current, B);

    // The rollback: A's workers still poll (A drains), so the guard makes A current before B's go.
    const began = Date.now();
    const guarded = await admin('guard', '--keep', A, '--current', A, '--wait', '120');
    assert.equal(guarded.code, 0, JSON.stringify(guarded.body));
    assert.equal(guarded.body.promoted, true);
    assert.equal((await deployment())?.current, A);

    const t = await createTenant(db, 1000);
    const r = await api(stack.gateways[0]!, t.apiKey).post('/v1/images/generate', {
      project_id: t.projectId,
      prompt: 'after the rollback',
      model: 'nano-banana-2',
      aspect_ratio: '1:1',
      count: 1,
    });
    assert.equal(r.status, 200, r.text);
    const id = r.body.data.id as string;
    await waitFor('the new job to complete', async () => (await jobRow(db, id)).status === 'completed', ROLLBACK_BOUND_MS - (Date.now() - began), 250);
    const servedMs = Date.now() - began;
    const desc = await temporal.workflow.getHandle(id).describe();
    assert.equal(desc.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId, A, 'the new job ran on A');
    console.log(`[figure] rollback to A: a new job completed on A ${servedMs} ms after the guard began`);

    // Both builds are remembered: neither promoter makes A (or B) current by itself again.
    const recorded = await db.selectFrom('deployment_builds').select('build_id').where('deployment_name', '=', 'mediagen').execute();
    for (const b of [A, B])
      assert.ok(
        recorded.some((x) => x.build_id === b),
        `${b} is recorded as once current`,
      );

    // B has no job left: it drains, and its workers stop by themselves.
    await waitFor(`${B} to drain`, async () => (await deployment())?.versions.find((v) => v.buildId === B)?.status === 'drained', 600_000, 2000);
    assert.equal((await deployment())?.current, A, 'A stays current');
  },
);
