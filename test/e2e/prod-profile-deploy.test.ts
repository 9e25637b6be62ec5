// A rainbow deploy with the prod profile's own command (`scripts/stack.sh up prod`, started or reused
// by scripts/test.sh): build A is this checkout's dist/; build B is a copy of it whose generation
// workflows start with a durable timer (fixtures/deploy-build-b.ts: a change A's histories cannot
// replay) under another build id, deployed with `PROD_DIST=<its dist> stack.sh up prod`. The
// profile points grok's and the image models' fal route at the local fake fal queue (overrides),
// whose requests stay IN_PROGRESS until the suite lets them complete: 20 jobs are held at their
// provider step on A while B is rolled out. B starts beside A and makes itself current once its
// fleets poll every queue; A's 20 jobs finish on A, exactly charged, and so does a pipeline whose
// second step starts after B is current (its parent is pinned to A, and its children with it); A's
// worker processes stop by themselves only once the server reports A drained (the pipeline closed
// too); 20 new jobs run on B; and a worker of A started again afterwards does not make A current.
// At the end the suite rolls the profile back to A (the operator's `deployment promote`), and B's
// workers drain and stop in turn.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import type { Client } from '@temporalio/client';
import type { Database } from '../../db/index.js';
import { createTenant, waitFor } from '../support/stack.js';
import { api, creditsOf, startWorkers } from '../support/services.js';
import { openProfileSuite, processAlive, type ProfileSuite } from '../support/profile-stack.js';
import { jobRow } from '../support/job-helpers.js';
import { startLiveFal, type LiveFal } from '../support/fake-providers/live-fal.js';
import { ledgerForJob } from '../support/ledger.js';
import { describeDeployment, describeVersion } from '../../worker/deployment.js';
import { runAdmin } from '../../admin/main.js';
import { randomToken } from '../../shared/ids.js';
import protos from '@temporalio/proto';

const JOBS = 20;
const dist = fileURLToPath(new URL('../../', import.meta.url));
const buildBWorkflows = fileURLToPath(new URL('./fixtures/deploy-build-b.js', import.meta.url));
const workerNames = async () =>
  (await readFile(fileURLToPath(new URL('../../../scripts/prod/processes', import.meta.url)), 'utf8'))
    .split('\n')
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => l.split(/\s+/))
    .filter(([, command]) => command === 'worker')
    .map(([name]) => name!);

let suite: ProfileSuite;
let stack: ProfileSuite['stack'];
let db: Database;
let temporal: Client;
let live: LiveFal;
let buildBDir: string | undefined;
const up = (env?: Record<string, string>) => suite.up(env);

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
const version = (buildId: string) => describeVersion(temporal.workflowService, 'default', 'mediagen', buildId);

before(
  async () => {
    live = await startLiveFal();
    // NODE_ENV=test: production refuses FETCH_ALLOW_LOOPBACK_ORIGIN, the fake CDN's way past the SSRF guard.
    suite = await openProfileSuite('prod', { overrides: { ...live.env, NODE_ENV: 'test' } });
    ({ stack, db, temporal } = suite);
  },
  { timeout: 4_200_000 },
);

after(
  async () => {
    // Back to this checkout's build with the profile's own settings: its workers start again, and
    // a rollback (the operator's promote) makes it current; B then drains and stops by itself.
    await suite?.close(async () => {
      const A = stack.vars.PROD_BUILD_ID!;
      await waitFor(
        `${A} to poll again`,
        async () => (await admin('promote', '--build-id', A)).code === 0 || (await deployment())?.current === A,
        120_000,
        1000,
      ).catch(() => undefined);
    });
    await live?.close();
    if (buildBDir) await rm(buildBDir, { recursive: true, force: true });
  },
  { timeout: 600_000 },
);

const imageStep = (prompt: string) => ({ prompt, model: 'nano-banana-2', aspect_ratio: '1:1', count: 1 });
const image = (projectId: string, prompt: string) => ({ project_id: projectId, ...imageStep(prompt) });

// The suite runs longer than scripts/test.sh's default per-file timeout: TEST_TIMEOUT_MS=1800000.
test(
  `rainbow deploy: ${JOBS} jobs and a pipeline held on build A finish on A while B becomes current (the pipeline's next step too); A's workers stop by themselves once drained; ${JOBS} jobs run on B; a restarted A worker does not make A current`,
  { timeout: 1_500_000 },
  async () => {
    const A = stack.vars.PROD_BUILD_ID!;
    // An earlier run may have left another build current (A itself drained then): the operator's rollback.
    if ((await deployment())?.current !== A) {
      await waitFor(
        `${A} to be current`,
        async () => (await deployment())?.current === A || (await admin('promote', '--build-id', A)).code === 0,
        120_000,
        1000,
      );
    }
    const t = await createTenant(db, 10_000);
    const gateways = stack.gateways.map((g) => api(g, t.apiKey));
    // 40 creates on one key pass its 30-a-minute generation limit: the client waits as the 429 says.
    const create = async (i: number, prompt: string): Promise<string> => {
      for (;;) {
        const r = await gateways[i % 2]!.post('/v1/images/generate', image(t.projectId, prompt));
        if (r.status === 429 && r.body?.error?.code === 'rate_limited') {
          await new Promise((resolve) => setTimeout(resolve, r.body.retry_after_ms as number));
          continue;
        }
        assert.equal(r.status, 200, r.text);
        return r.body.data.id as string;
      }
    };
    const createPipeline = async (i: number, body: unknown): Promise<string> => {
      for (;;) {
        const r = await gateways[i % 2]!.post('/v1/pipelines', body);
        if (r.status === 429 && r.body?.error?.code === 'rate_limited') {
          await new Promise((resolve) => setTimeout(resolve, r.body.retry_after_ms as number));
          continue;
        }
        assert.equal(r.status, 200, r.text);
        return r.body.data.id as string;
      }
    };

    // 20 jobs on A, each held at its provider step: submitted to fal, which answers IN_PROGRESS.
    live.fal.flow = ['IN_PROGRESS'];
    const marker = randomToken(6);
    const jobsA: string[] = [];
    for (let i = 0; i < JOBS; i++) jobsA.push(await create(i, `deploy ${marker} A ${i}`));
    // The prompt carries no job id: find each job's request by its prompt.
    await waitFor(
      'every A job to be submitted to fal',
      () => [...live.fal.states.values()].filter((s) => String(s.input.prompt).includes(`deploy ${marker} A `)).length === JOBS,
      120_000,
      250,
    );
    for (const id of jobsA) assert.equal((await jobRow(db, id)).status, 'generating', id);
    // A pipeline on A, its first step held at fal like the jobs: its second step starts only after B
    // is current, and still runs on A (a pinned parent's children stay on its build).
    const pipeline = await createPipeline(0, {
      project_id: t.projectId,
      steps: [
        { id: 'first', kind: 'image', body: imageStep(`deploy ${marker} P first`) },
        { id: 'second', kind: 'image', body: imageStep(`deploy ${marker} P second`) },
      ],
    });
    await waitFor(
      "the pipeline's first step to be submitted to fal",
      () => [...live.fal.states.values()].some((s) => String(s.input.prompt).includes(`deploy ${marker} P first`)),
      120_000,
      250,
    );

    // Build B: this build's dist with B's workflow bundle, under a build id of its own.
    buildBDir = await mkdtemp(join(tmpdir(), 'deploy-build-b-'));
    const distB = join(buildBDir, 'dist');
    await cp(dist, distB, { recursive: true });
    const { code } = await bundleWorkflowCode({ workflowsPath: buildBWorkflows, logger: new DefaultLogger('ERROR') });
    await writeFile(join(distB, 'workflow-bundle.js'), code);
    await rm(join(distB, 'workflow-bundle.traced.js'), { force: true });
    const B = `${A.slice(0, 40)}-b${randomToken(6).toLowerCase()}`;
    await writeFile(join(distB, 'build-id'), `${B}\n`);

    const workers = await workerNames();
    const pidsA = new Map<string, number>();
    for (const name of workers) pidsA.set(name, Number((await readFile(join(stack.buildDir(A), `${name}.pid`), 'utf8')).trim()));

    // The profile's own command, pointed at B's dist: B starts beside A.
    const deployed = await up({ PROD_DIST: distB });
    assert.match(deployed, new RegExp(`build ${B} starts beside build ${A}`), deployed);
    await waitFor(`${B} to make itself current once its fleets poll every queue`, async () => (await deployment())?.current === B, 180_000, 500);
    const bCurrentAt = new Date();
    for (const [name, pid] of pidsA) assert.ok(processAlive(pid), `${name} of A still runs while A's jobs are in flight`);
    assert.equal((await version(A))?.status, 'draining');

    // 20 new jobs: on B. Then fal completes every request, A's and B's.
    const jobsB: string[] = [];
    for (let i = 0; i < JOBS; i++) jobsB.push(await create(i, `deploy ${marker} B ${i}`));
    await waitFor(
      'every B job to be submitted to fal',
      () => [...live.fal.states.values()].filter((s) => String(s.input.prompt).includes(`deploy ${marker} B `)).length === JOBS,
      120_000,
      250,
    );
    live.fal.flow = ['COMPLETED'];

    const all = [...jobsA, ...jobsB];
    await waitFor(
      `${all.length} jobs to finish`,
      async () => {
        const rows = await db.selectFrom('jobs').select('status').where('id', 'in', all).execute();
        return rows.every((r) => r.status === 'completed' || r.status === 'failed');
      },
      300_000,
      1000,
    );
    const piped = await waitFor(
      'the pipeline to finish',
      async () => {
        const p = (await gateways[0]!.get(`/v1/pipelines/${pipeline}`)).body?.data;
        return p && (p.status === 'completed' || p.status === 'failed') ? p : undefined;
      },
      300_000,
      1000,
    );
    assert.equal(piped.status, 'completed', JSON.stringify(piped.error));
    const stepJobs = (piped.steps as { job_id: string }[]).map((s) => s.job_id);
    assert.equal(stepJobs.length, 2);
    assert.ok((await jobRow(db, stepJobs[1]!)).created_at >= bCurrentAt, 'the second step started after B became current');
    let lastAClose = 0;
    let total = 0;
    for (const [ids, buildId] of [
      [[...jobsA, ...stepJobs], A],
      [jobsB, B],
    ] as const) {
      for (const id of ids) {
        const row = await jobRow(db, id);
        assert.equal(row.status, 'completed', `${id}: ${JSON.stringify(row.error)}`);
        const net = (await ledgerForJob(db, id)).reduce((sum, e) => sum - e.delta, 0);
        assert.equal(net, row.price, `${id} is charged its price once`);
        total += row.price;
        const handle = temporal.workflow.getHandle(id);
        const desc = await handle.describe();
        assert.equal(desc.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId, buildId, `${id} ran on ${buildId}`);
        const events = (await handle.fetchHistory()).events ?? [];
        // Both builds poll on timers; only B's first command is one (A's is the claim, a local activity's marker).
        const first = events.find((e) => e.timerStartedEventAttributes || e.markerRecordedEventAttributes || e.activityTaskScheduledEventAttributes);
        assert.equal(!!first?.timerStartedEventAttributes, buildId === B, `${id}: B's change (a first timer) only in B's jobs`);
        assert.deepEqual(events.filter((e) => e.workflowTaskFailedEventAttributes).length, 0, `${id}: no workflow task failed (no nondeterminism)`);
        if (buildId === A) lastAClose = Math.max(lastAClose, desc.closeTime?.getTime() ?? 0);
      }
    }
    assert.equal(
      piped.charged,
      (await Promise.all(stepJobs.map(async (id) => (await jobRow(db, id)).price))).reduce((a, b) => a + b, 0),
    );
    const parent = await temporal.workflow.getHandle(pipeline).describe();
    assert.equal(parent.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId, A, 'the pipeline ran on A');
    lastAClose = Math.max(lastAClose, parent.closeTime?.getTime() ?? 0);
    assert.equal(await creditsOf(db, t), 10_000 - total, 'the workspace paid every job and step once');

    // A's workers stop by themselves, and only once the server reported A drained.
    await waitFor("A's workers to stop by themselves", () => [...pidsA.values()].every((pid) => !processAlive(pid)), 300_000, 1000);
    assert.equal((await version(A))?.status, 'drained');
    for (const name of workers) {
      const log = await readFile(join(stack.buildDir(A), 'logs', `${name}.log`), 'utf8');
      const drained = log.split('\n').find((l) => l.includes('"msg":"this build is drained: stopping its workers"'));
      assert.ok(drained, `${name} of A stopped because A drained`);
      assert.ok(Number(JSON.parse(drained).time) > lastAClose, `${name} of A stopped after A's last job closed`);
      assert.match(log, /"msg":"worker stopped"/, `${name} of A stopped cleanly`);
    }
    for (const name of workers) assert.ok(processAlive(Number((await readFile(join(stack.buildDir(B), `${name}.pid`), 'utf8')).trim())), `${name} of B runs`);

    // A worker of A started again (this checkout's code is A): it polls, and leaves B current.
    const lines: string[] = [];
    const logDestination = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(...chunk.toString().split('\n').filter(Boolean));
        done();
      },
    });
    const restarted = await startWorkers(
      {
        ...stack.config,
        LOG_LEVEL: 'info',
        WORKER_DEPLOYMENT_NAME: 'mediagen',
        WORKER_BUILD_ID: A,
        WORKER_DEPLOYMENT_PROMOTE: 'newer',
        WORKER_DRAIN_CHECK_MS: 0,
      },
      db,
      'provider:local',
      { logDestination },
    );
    try {
      const decided = await waitFor(
        'the restarted A worker to decide',
        () => lines.find((l) => l.includes('this build is not made the current version') || l.includes('this build is now the current version')),
        60_000,
        100,
      );
      assert.match(decided, /not made the current version/, decided);
      // Refused from the promotion memory (deployment_builds), whatever the server says of A now.
      assert.match(decided, /was the current version before \(recorded in deployment_builds\)/, decided);
      await waitFor(
        'the restarted A worker to poll',
        async () => {
          const res = await temporal.workflowService.describeTaskQueue({
            namespace: 'default',
            taskQueue: { name: 'media-provider-local' },
            taskQueueType: protos.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
            reportPollers: true,
          });
          return (res.pollers ?? []).some((p) => p.deploymentOptions?.buildId === A && p.identity?.includes(String(process.pid)));
        },
        60_000,
        500,
      );
      assert.equal((await deployment())?.current, B, 'B stays current');
    } finally {
      await restarted.stop();
    }
  },
);
