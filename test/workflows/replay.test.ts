// Determinism guard: histories of real jobs (saved by scripts/save-histories.ts) replay through the
// current workflow code. A change that would break running workflows — another activity order, a
// removed step, a new timer without versioning — fails here before it reaches a deployment.
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { DefaultLogger, Runtime, Worker, type ReplayWorkerOptions } from '@temporalio/worker';

// Compiled to dist/test/workflows/: the fixtures stay in the source tree, the workflows are the built ones.
const historiesDir = fileURLToPath(new URL('../../../test/workflows/histories/', import.meta.url));
const workflowsPath = fileURLToPath(new URL('../../workflows/index.js', import.meta.url));

let histories: { name: string; json: any }[];
let options: ReplayWorkerOptions;

before(async () => {
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
  } catch {
    // already installed in this process
  }
  const files = (await readdir(historiesDir)).filter((f) => f.endsWith('.json')).sort();
  histories = await Promise.all(files.map(async (f) => ({ name: f.replace(/\.json$/, ''), json: JSON.parse(await readFile(`${historiesDir}${f}`, 'utf8')) })));
  // One bundle for every replay (bundling is the slow part).
  const { bundleWorkflowCode } = await import('@temporalio/worker');
  const bundle = await bundleWorkflowCode({ workflowsPath, logger: new DefaultLogger('ERROR') });
  options = { workflowBundle: bundle };
});

describe('replaying saved histories', () => {
  test('there is a saved history of each job kind, including a failed and a canceled job', () => {
    const names = histories.map((h) => h.name);
    for (const kind of ['image', 'video', 'replace_actor', 'talking_actor', 'image-failed', 'image-canceled']) {
      assert.ok(names.includes(kind), `test/workflows/histories/${kind}.json is missing; run scripts/save-histories.ts`);
    }
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
    const tampered = structuredClone(histories.find((h) => h.name === 'image')!.json);
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
