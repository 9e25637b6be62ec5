// Determinism guard: histories of real jobs (saved by scripts/save-histories.ts) replay through the
// current workflow code. A change that would break running workflows — another activity order, a
// removed step, a new timer without versioning — fails here before it reaches a deployment.
// histories/ holds the current build's jobs, histories/v1/ the jobs of the build before the
// LOCAL_DB_STEPS patch (workflows/pipeline.ts): both must replay, since jobs of both builds may be
// running when a new worker starts.
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker, type ReplayWorkerOptions } from '@temporalio/worker';

// Compiled to dist/test/workflows/: the fixtures stay in the source tree, the workflows are the built ones.
const historiesDir = fileURLToPath(new URL('../../../test/workflows/histories/', import.meta.url));
const workflowsPath = fileURLToPath(new URL('../../workflows/index.js', import.meta.url));
/** The previous build's workflows (the upgrade test's old build). */
const v1WorkflowsPath = fileURLToPath(new URL('./fixtures/workflows-v1.js', import.meta.url));
const kinds = ['image', 'video', 'replace_actor', 'talking_actor', 'image-failed', 'image-canceled'];

type History = { name: string; json: any };
let histories: History[];
let current: History[];
let v1: History[];
let options: ReplayWorkerOptions;

async function readHistories(dir: string, prefix: string): Promise<History[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.json')).sort();
  return Promise.all(files.map(async (f) => ({ name: `${prefix}${f.replace(/\.json$/, '')}`, json: JSON.parse(await readFile(`${dir}${f}`, 'utf8')) })));
}

const activityTypes = (h: History) => h.json.events.filter((e: any) => e.activityTaskScheduledEventAttributes).map((e: any) => e.activityTaskScheduledEventAttributes.activityType.name as string);
const workflowTasks = (h: History) => h.json.events.filter((e: any) => e.workflowTaskCompletedEventAttributes).length;
const markers = (h: History) => h.json.events.filter((e: any) => e.markerRecordedEventAttributes).map((e: any) => e.markerRecordedEventAttributes.markerName as string);

before(async () => {
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
  } catch {
    // already installed in this process
  }
  current = await readHistories(historiesDir, '');
  v1 = await readHistories(`${historiesDir}v1/`, 'v1/');
  histories = [...current, ...v1];
  // One bundle for every replay (bundling is the slow part).
  const bundle = await bundleWorkflowCode({ workflowsPath, logger: new DefaultLogger('ERROR') });
  options = { workflowBundle: bundle };
});

describe('replaying saved histories', () => {
  test('there is a saved history of each job kind, including a failed and a canceled job, from both builds', () => {
    for (const [set, dir] of [
      [current, ''],
      [v1, 'v1/'],
    ] as const) {
      const names = set.map((h) => h.name);
      for (const kind of kinds) assert.ok(names.includes(`${dir}${kind}`), `test/workflows/histories/${dir}${kind}.json is missing; run scripts/save-histories.ts`);
    }
  });

  test("the current build's jobs carry the patch marker and run their Postgres steps as local activities", () => {
    for (const h of current) {
      assert.ok(markers(h).includes('core_patch'), `${h.name}: the LOCAL_DB_STEPS patch marker`);
      assert.ok(markers(h).includes('core_local_activity'), `${h.name}: local activity markers`);
      const remote = activityTypes(h);
      for (const step of ['markJobGenerating', 'recordProviderRef', 'completeJob', 'failJob', 'storeOutputs']) assert.ok(!remote.includes(step), `${h.name}: ${step} is not a remote activity`);
    }
    // An image job the renderer reports ready 1.5 s after submit (one timer): two activity tasks and
    // four workflow tasks, where the previous build took eight and ten for the same job.
    const image = current.find((h) => h.name === 'image')!;
    assert.deepEqual(activityTypes(image), ['submitAndCheck', 'checkProvider']);
    assert.equal(workflowTasks(image), 4);
    const oldImage = v1.find((h) => h.name === 'v1/image')!;
    assert.equal(activityTypes(oldImage).length, 8, `the previous build's image job scheduled ${activityTypes(oldImage).join(', ')}`);
    assert.equal(workflowTasks(oldImage), 10);
    for (const h of v1) assert.ok(!markers(h).includes('core_patch'), `${h.name} predates the patch`);
  });

  test("the previous build's histories replay through that build's workflows kept as a test fixture (the upgrade test's old build)", async () => {
    const bundle = await bundleWorkflowCode({ workflowsPath: v1WorkflowsPath, logger: new DefaultLogger('ERROR') });
    for (const h of v1) await Worker.runReplayHistory({ workflowBundle: bundle }, h.json, h.name);
  });

  test('every saved history replays through the current workflow code without nondeterminism', async () => {
    const results = Worker.runReplayHistories(
      options,
      histories.map((h) => ({ workflowId: h.name, history: h.json })),
    );
    const failures: string[] = [];
    let replayed = 0;
    for await (const r of results) {
      replayed++;
      if (r.error) failures.push(`${r.workflowId}: ${r.error.name}: ${r.error.message}`);
    }
    assert.equal(replayed, histories.length);
    assert.deepEqual(failures, []);
  });

  test('the prebuilt production bundle (npm run build) replays them too', async () => {
    const codePath = fileURLToPath(new URL('../../workflow-bundle.js', import.meta.url));
    for (const h of histories) await Worker.runReplayHistory({ workflowBundle: { codePath } }, h.json, h.name);
  });

  test('a history that no longer matches the code fails the replay with a determinism violation', async () => {
    // The same job as the saved one, except that its first activity was something else.
    const tampered = structuredClone(histories.find((h) => h.name === 'v1/image')!.json);
    const scheduled = tampered.events.find((e: any) => e.activityTaskScheduledEventAttributes).activityTaskScheduledEventAttributes;
    assert.equal(scheduled.activityType.name, 'markJobGenerating');
    scheduled.activityType.name = 'chargeWorkspace';
    await assert.rejects(Worker.runReplayHistory(options, tampered, 'tampered-image'), (err: Error) => {
      assert.equal(err.name, 'DeterminismViolationError');
      assert.match(err.message, /chargeWorkspace|markJobGenerating|nondetermin/i);
      return true;
    });
  });
});
