// Rolling a new build out across separate fleets with Worker Versioning, on the prod profile's
// Temporal server 1.32 (Postgres persistence; started by scripts/test.sh for prod-profile* suites).
// Build A is the current code (the built workflow bundle); build B (fixtures/rollout-build-b.ts)
// changes every generation workflow in a way A's histories cannot replay and adds an activity only
// B's provider fleet registers. Each build runs as two fleets in this process, polling as versions
// A and B of one Worker Deployment: workflows+io+fetch, and provider:local. 20 jobs are held
// mid-pipeline on A; B is deployed beside A (its provider fleet before, or after, its workflows
// fleet) and made current with the admin CLI; A's jobs finish on A while 20 new jobs run on B;
// then the deployment is rolled back to A with B's jobs in flight, and every job completes on the
// build that started it: no workflow task or activity fails anywhere, credits are exact.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import puppeteer from 'puppeteer-core';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, DefaultLogger, type ActivityInterceptorsFactory } from '@temporalio/worker';
import type { Client } from '@temporalio/client';
import { createTenant, createTestDatabase, testConfig, waitFor, type Tenant, type TestDatabase } from '../support/stack.js';
import { api, creditsOf, startGateway, startWorkers, type Workers } from '../support/services.js';
import { Holds, type HeldCall } from '../support/holds.js';
import { openProfileSuite, type ProfileSuite } from '../support/profile-stack.js';
import { ledgerForJob } from '../support/ledger.js';
import { randomToken } from '../../shared/ids.js';
import { runAdmin } from '../../admin/main.js';
import type { Config } from '../../shared/config.js';
import protos from '@temporalio/proto';

const temporalEnums = protos.temporal.api.enums.v1;

const buildBWorkflows = fileURLToPath(new URL('./fixtures/rollout-build-b.js', import.meta.url));
const JOBS = 20;

let suite: ProfileSuite;
let prod: ProfileSuite['stack'];
let tdb: TestDatabase;
let bundleDir: string;
let buildBBundle: string;
let temporal: Client;

before(
  async () => {
    suite = await openProfileSuite('prod');
    ({ stack: prod, temporal } = suite);
    tdb = await createTestDatabase();
    bundleDir = await mkdtemp(join(tmpdir(), 'rollout-test-'));
    buildBBundle = join(bundleDir, 'workflow-bundle-b.js');
    const { code } = await bundleWorkflowCode({ workflowsPath: buildBWorkflows, logger: new DefaultLogger('ERROR') });
    await writeFile(buildBBundle, code);
  },
  { timeout: 4_200_000 },
);

after(async () => {
  await tdb?.drop();
  if (bundleDir) await rm(bundleDir, { recursive: true, force: true });
  await suite?.close();
});

/** Which fleet ran each activity task, per job: an activity interceptor on each provider fleet. */
class Ledger {
  readonly runs: { fleet: string; type: string; jobId: string }[] = [];
  on(fleet: string): ActivityInterceptorsFactory {
    return (ctx) => ({
      inbound: {
        execute: (input, next) => {
          this.runs.push({ fleet, type: ctx.info.activityType, jobId: ctx.info.workflowExecution?.workflowId ?? '' });
          return next(input);
        },
      },
    });
  }
  fleetsOf(jobId: string): string[] {
    return [...new Set(this.runs.filter((r) => r.jobId === jobId).map((r) => r.fleet))];
  }
}

const image = (t: Tenant, prompt: string) => ({ project_id: t.projectId, prompt, model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });

async function rollout(order: 'providers-first' | 'workflows-first', opts: { webUi?: true } = {}) {
  const deployment = `rollout-${randomToken(8).toLowerCase()}`;
  const A = `a-${randomToken(8).toLowerCase()}`;
  const B = `b-${randomToken(8).toLowerCase()}`;
  const config = testConfig(tdb.url, {
    TEMPORAL_ADDRESS: prod.config.TEMPORAL_ADDRESS,
    ...prod.temporalTls,
    RECONCILE_INTERVAL_MS: '3600000',
    // Held renders keep their slots: room for every job of a build.
    PROVIDER_CONCURRENCY: 'local=30',
    RATE_LIMIT_GENERATE_PER_MIN: '1000',
    RATE_LIMIT_POLL_PER_MIN: '100000',
  });
  const providerQueue = `${config.TASK_QUEUE_PREFIX}-provider-local/activity`;
  const build = (buildId: string, extra: Partial<Config> = {}): Config => ({
    ...config,
    WORKER_DEPLOYMENT_NAME: deployment,
    WORKER_BUILD_ID: buildId,
    WORKER_DEPLOYMENT_PROMOTE: 'first',
    WORKER_DRAIN_CHECK_MS: 0,
    ...extra,
  });
  const adminEnv = { TEMPORAL_ADDRESS: prod.config.TEMPORAL_ADDRESS, ...prod.temporalTls, TEMPORAL_NAMESPACE: 'default', WORKER_DEPLOYMENT_NAME: deployment };
  const admin = async (...args: string[]) => {
    const r = await runAdmin(['deployment', ...args, '--json'], adminEnv);
    return { code: r.code, body: JSON.parse(r.stdout || r.stderr) as any };
  };
  const status = async () => {
    const r = await admin('status');
    return r.code === 0
      ? (r.body as { current: string | null; versions: { buildId: string; status: string; running: number; taskQueues: string[] }[] })
      : undefined;
  };
  const versionHas = async (buildId: string, queue: string) =>
    (await status())?.versions.find((v) => v.buildId === buildId)?.taskQueues.includes(queue) ?? false;

  const ledger = new Ledger();
  const holdsA = new Holds();
  const holdsB = new Holds();
  const recordedBuild: string[] = [];
  const fleets: Workers[] = [];
  const allHeld: HeldCall[] = [];
  const gw = await startGateway(config, tdb.db);
  try {
    const t = await createTenant(tdb.db, 1000);
    const c = api(gw.baseUrl, t.apiKey);
    const create = async (prompt: string) => {
      const r = await c.post('/v1/images/generate', image(t, prompt));
      assert.equal(r.status, 200, r.text);
      return r.body.data.id as string;
    };
    const hold = (holds: Holds, n: number) => {
      const held = Array.from({ length: n }, () => holds.activity('submitAndCheck', 'before'));
      allHeld.push(...held);
      return held;
    };
    const allReached = (held: HeldCall[], what: string) =>
      Promise.race([
        Promise.all(held.map((h) => h.reached)),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), 60_000).unref()),
      ]);

    // Build A: the first version of a fresh deployment makes itself current (WORKER_DEPLOYMENT_PROMOTE=first).
    fleets.push(await startWorkers(build(A), tdb.db, 'workflows,io,fetch'));
    fleets.push(await startWorkers(build(A), tdb.db, 'provider:local', { activityInterceptors: [ledger.on('A'), holdsA.activityInterceptor] }));
    await waitFor(
      `${A} to be current with its provider fleet`,
      async () => (await status())?.current === A && (await versionHas(A, providerQueue)),
      60_000,
      250,
    );

    // 20 jobs held mid-pipeline on A: started, their render dispatched to A's provider fleet.
    const heldA = hold(holdsA, JOBS);
    const jobsA: string[] = [];
    for (let i = 0; i < JOBS; i++) jobsA.push(await create(`build A job ${i}`));
    const heldIds = await allReached(heldA, 'the A jobs to reach their render');
    assert.deepEqual([...heldIds].sort(), [...jobsA].sort(), 'every A job is held at its render');

    // Build B beside A, its fleets in the order under test. Neither makes itself current: A is.
    const startProvidersB = async () =>
      fleets.push(
        await startWorkers(build(B), tdb.db, 'provider:local', {
          activityInterceptors: [ledger.on('B'), holdsB.activityInterceptor],
          extraActivities: {
            provider: {
              recordBuild: async (jobId: string) => {
                recordedBuild.push(jobId);
                return B;
              },
            },
          },
        }),
      );
    const startWorkflowsB = async () => fleets.push(await startWorkers(build(B, { WORKFLOW_BUNDLE_PATH: buildBBundle }), tdb.db, 'workflows,io,fetch'));
    if (order === 'providers-first') {
      await startProvidersB();
      await startWorkflowsB();
    } else {
      await startWorkflowsB();
      await waitFor(`${B}'s workflows fleet to register`, () => versionHas(B, `${config.TASK_QUEUE_PREFIX}-workflows/workflow`), 60_000, 250);
      const refused = await admin('promote', '--build-id', B);
      assert.equal(refused.code, 5, JSON.stringify(refused.body));
      assert.match(refused.body.error.message, /provider-local/, 'the promotion names the fleet B lacks');
      await startProvidersB();
    }
    await waitFor(`${B} to have its provider fleet`, () => versionHas(B, providerQueue), 60_000, 250);
    // Every queue's pollers register on their own: promote once the server has seen them all.
    for (const queue of [`${config.TASK_QUEUE_PREFIX}-io/activity`, `${config.TASK_QUEUE_PREFIX}-fetch/activity`]) {
      await waitFor(`${B} to poll ${queue}`, () => versionHas(B, queue), 60_000, 250);
    }
    assert.equal((await status())?.current, A, 'a new build does not take new jobs by itself');
    if (order === 'workflows-first') {
      // A ramp before the promotion: set, seen, ended.
      assert.equal((await admin('ramp', '--build-id', B, '--percent', '25')).code, 0);
      assert.deepEqual(((await status()) as any)?.ramping, { buildId: B, percent: 25 });
      assert.equal((await admin('ramp', '--build-id', B, '--percent', '0')).code, 0);
      assert.equal(((await status()) as any)?.ramping, null);
    }

    const promoted = await admin('promote', '--build-id', B);
    assert.equal(promoted.code, 0, JSON.stringify(promoted.body));
    assert.deepEqual(promoted.body, { deployment, current: B, previous: A });
    const promotedAt = Date.now();

    // A's jobs go on (on A) while 20 new ones start on B and are held at their render there.
    const heldB = hold(holdsB, JOBS);
    for (const h of heldA) h.release();
    const jobsB: string[] = [];
    for (let i = 0; i < JOBS; i++) jobsB.push(await create(`build B job ${i}`));
    assert.deepEqual([...(await allReached(heldB, 'the B jobs to reach their render'))].sort(), [...jobsB].sort(), 'every B job is held at its render');

    // Roll back to A with B's jobs in flight: B keeps them, new jobs go to A again.
    const rolledBack = await admin('promote', '--build-id', A);
    assert.equal(rolledBack.code, 0, JSON.stringify(rolledBack.body));
    const rolledBackAt = Date.now();
    const retireEarly = await admin('retire', '--build-id', B);
    assert.equal(retireEarly.code, 5, JSON.stringify(retireEarly.body));
    assert.match(retireEarly.body.error.message, /still runs \d+ job/, 'a build with running jobs is not retired');
    const described = await describeWithCli(deployment);
    assert.match(described, new RegExp(`CurrentVersionBuildID\\s+${A}\\n`), described);
    assert.match(described, new RegExp(`${deployment}\\s+${B}\\s+draining`), described);
    assert.match(described, new RegExp(`${deployment}\\s+${A}\\s`), described);
    if (process.env.DEPLOYMENT_DESCRIBE_OUT) await writeFile(process.env.DEPLOYMENT_DESCRIBE_OUT, described);
    if (opts.webUi) await checkDeploymentPage(deployment, { current: A, draining: B });

    const jobsAfter: string[] = [];
    for (let i = 0; i < 5; i++) jobsAfter.push(await create(`after the rollback ${i}`));
    for (const h of heldB) h.release();

    const all = [...jobsA, ...jobsB, ...jobsAfter];
    await waitFor(
      `${all.length} jobs to finish`,
      async () => {
        const rows = await tdb.db.selectFrom('jobs').select(['status']).where('id', 'in', all).execute();
        return rows.every((r) => r.status === 'completed' || r.status === 'failed');
      },
      180_000,
      500,
    );

    const expectations: [string[], string, number][] = [
      [jobsA, A, promotedAt],
      [jobsB, B, rolledBackAt],
      [jobsAfter, A, rolledBackAt],
    ];
    for (const [ids, buildId, laterThan] of expectations) {
      for (const id of ids) {
        const row = await tdb.db.selectFrom('jobs').select(['status', 'error', 'price']).where('id', '=', id).executeTakeFirstOrThrow();
        assert.equal(row.status, 'completed', `${id}: ${JSON.stringify(row.error)}`);
        const net = (await ledgerForJob(tdb.db, id)).reduce((sum, e) => sum - e.delta, 0);
        assert.equal(net, row.price, `${id} is charged its price once`);

        const handle = temporal.workflow.getHandle(id);
        const info = (await handle.describe()).raw.workflowExecutionInfo?.versioningInfo;
        assert.equal(info?.deploymentVersion?.buildId, buildId, `${id} runs on ${buildId}`);
        assert.equal(info?.behavior, temporalEnums.VersioningBehavior.VERSIONING_BEHAVIOR_PINNED, `${id} is pinned`);
        const events = (await handle.fetchHistory()).events ?? [];
        const tasks = events
          .filter((e) => e.workflowTaskCompletedEventAttributes)
          .map((e) => ({ at: Number(e.eventTime?.seconds ?? 0) * 1000, build: e.workflowTaskCompletedEventAttributes!.deploymentVersion?.buildId }));
        assert.deepEqual([...new Set(tasks.map((x) => x.build))], [buildId], `${id}: every workflow task ran on ${buildId}`);
        assert.ok(
          tasks.some((x) => x.at >= Math.floor(laterThan / 1000) * 1000),
          `${id}: it still had workflow tasks after the routing changed`,
        );
        const failures = events.filter(
          (e) => e.workflowTaskFailedEventAttributes || e.activityTaskFailedEventAttributes || e.activityTaskTimedOutEventAttributes,
        );
        assert.deepEqual(
          failures.map((e) =>
            JSON.stringify(e.workflowTaskFailedEventAttributes?.failure?.message ?? e.activityTaskFailedEventAttributes?.failure?.message ?? 'timed out'),
          ),
          [],
          `${id}: no nondeterminism, no "activity not registered", no failed step`,
        );
        const scheduled = events.map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name).filter((n): n is string => !!n);
        assert.equal(scheduled.includes('recordBuild'), buildId === B, `${id}: ${scheduled.join(', ')}`);
        assert.deepEqual(ledger.fleetsOf(id), [buildId === A ? 'A' : 'B'], `${id}: its activities ran on ${buildId}'s provider fleet`);
      }
    }
    assert.deepEqual([...recordedBuild].sort(), [...jobsB].sort(), "B's added activity ran once per B job, on B's fleet");
    assert.equal(await creditsOf(tdb.db, t), 1000 - all.length * 4, 'the workspace paid every job once');

    // Retiring B: refused while its jobs ran; now it has none, and its workers stop.
    await waitFor(`${B} to have no running jobs`, async () => (await status())?.versions.find((v) => v.buildId === B)?.running === 0, 60_000, 500);
  } finally {
    // A held render never ends by itself: release them all, or stopping the fleets would wait forever.
    for (const h of allHeld) h.release();
    for (const f of fleets.reverse()) await f.stop();
    await gw.close();
  }
}

/**
 * The Web UI's page of the deployment (Workers → Deployments → the deployment), in headless
 * Chromium: both builds listed with their lifecycle. DEPLOYMENTS_SCREENSHOT=path.png saves it.
 */
async function checkDeploymentPage(deployment: string, builds: { current: string; draining: string }) {
  const executablePath =
    process.env.CHROMIUM_PATH || execFileSync('sh', ['-c', 'command -v chromium || command -v chromium-browser'], { encoding: 'utf8' }).trim().split('\n')[0]!;
  const browser = await puppeteer.launch({
    executablePath,
    headless: true,
    // Root in a container has no user namespace sandbox; the page is the profile's own UI, on loopback.
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update'],
  });
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 560 });
    await page.goto(`${prod.vars.TEMPORAL_UI_URL}/namespaces/default/worker-deployments/${deployment}`, { waitUntil: 'networkidle0', timeout: 60_000 });
    const text = await page.waitForFunction(
      (b: { current: string; draining: string }) => {
        const t = (globalThis as any).document.body.innerText as string;
        return new RegExp(`${b.current}\\s+Current`).test(t) && new RegExp(`${b.draining}\\s+Draining`).test(t) ? t : false;
      },
      { timeout: 30_000 },
      builds,
    );
    assert.match(String(await text.jsonValue()), new RegExp(`${builds.draining}\\s+Draining`));
    if (process.env.DEPLOYMENTS_SCREENSHOT) await page.screenshot({ path: process.env.DEPLOYMENTS_SCREENSHOT as `${string}.png` });
  } finally {
    await browser.close();
  }
}

/** `temporal worker deployment describe` as an operator runs it. */
function describeWithCli(deployment: string): Promise<string> {
  const cli = process.env.TEMPORAL_CLI_PATH || 'temporal';
  return new Promise((resolve, reject) =>
    execFile(
      cli,
      ['worker', 'deployment', 'describe', '--name', deployment, '--address', prod.config.TEMPORAL_ADDRESS, '--namespace', 'default', ...prod.temporalCliTls],
      (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)),
    ),
  );
}

describe('rolling a new build out with Worker Versioning on the production server', () => {
  test("B's provider fleet first: A's jobs finish on A, B's on B, a rollback to A strands nothing; the Web UI shows both builds", () =>
    rollout('providers-first', { webUi: true }));
  test("B's workflows fleet first: B is not promoted until its provider fleet polls, then the same", () => rollout('workflows-first'));
});
