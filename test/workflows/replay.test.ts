// Determinism guard: histories of real jobs, deliveries, uploads and provider cancels (saved by
// scripts/histories/save-histories.ts, listed in saved-histories.ts) replay through the current workflow
// code. A change that would break running workflows — another activity order, a removed step, a new
// timer — fails here before it reaches a deployment. Jobs are pinned to the build that started them
// (Worker Versioning), so the histories are of the current shape only: one of every path a deploy
// can find in flight.
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker, type ReplayWorkerOptions } from '@temporalio/worker';
import { savedHistories, type HistoryName } from './saved-histories.js';
import { TEST_CODEC_KEY_ID, testDataConverter } from '../support/codec.js';

// Compiled to dist/test/workflows/: the fixtures stay in the source tree, the workflows are the built ones.
const historiesDir = fileURLToPath(new URL('../../../test/workflows/histories/', import.meta.url));
const workflowsPath = fileURLToPath(new URL('../../workflows/index.js', import.meta.url));
const names = Object.keys(savedHistories) as HistoryName[];

interface Event {
  eventId: string;
  eventType: string;
  [attributes: string]: any;
}
type History = { name: HistoryName; json: { events: Event[] } };

let histories: History[];
let options: ReplayWorkerOptions;

const is = (type: string) => (e: Event) => e.eventType === `EVENT_TYPE_${type}`;
const of = (name: HistoryName) => histories.find((h) => h.name === name)!;
const events = (h: History, type: string) => h.json.events.filter(is(type));
const workflowType = (h: History): string => h.json.events[0]!.workflowExecutionStartedEventAttributes.workflowType.name;
const workflowTasks = (h: History) => events(h, 'WORKFLOW_TASK_COMPLETED').length;
/** Remote activities, in the order they were scheduled. */
const activityTypes = (h: History): string[] => events(h, 'ACTIVITY_TASK_SCHEDULED').map((e) => e.activityTaskScheduledEventAttributes.activityType.name);
const closedAs = (h: History) => h.json.events.at(-1)!.eventType.replace('EVENT_TYPE_WORKFLOW_EXECUTION_', '');

interface LocalStep {
  eventId: number;
  type: string;
  attempt: number;
  failure?: { message: string; applicationFailureInfo?: { type?: string } };
}
/** The local activities a history recorded (core's markers: type and attempt in the marker's payload). */
function localSteps(h: History): LocalStep[] {
  return events(h, 'MARKER_RECORDED')
    .filter((e) => e.markerRecordedEventAttributes.markerName === 'core_local_activity')
    .map((e) => {
      const attrs = e.markerRecordedEventAttributes;
      const data = JSON.parse(Buffer.from(attrs.details.data.payloads[0].data, 'base64').toString('utf8')) as { activity_type: string; attempt: number };
      return { eventId: Number(e.eventId), type: data.activity_type, attempt: data.attempt, failure: attrs.failure };
    });
}
const resetTasks = (h: History) =>
  events(h, 'WORKFLOW_TASK_FAILED').filter((e) => e.workflowTaskFailedEventAttributes.cause === 'WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW');

const generationTypes = ['imageGeneration', 'videoGeneration', 'replaceActorGeneration', 'talkingActorGeneration'];
const dbSteps = ['startGenerating', 'routeJob', 'completeJob', 'failJob'];
const remoteJobSteps = ['prepareProviderRequest', 'speak', 'submitAndCheck', 'awaitProvider', 'checkProvider', 'cancelProvider'];

before(async () => {
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
  } catch {
    // already installed in this process
  }
  const files = (await readdir(historiesDir)).filter((f) => f.endsWith('.json')).sort();
  histories = await Promise.all(
    files.map(async (f) => ({ name: f.replace(/\.json$/, '') as HistoryName, json: JSON.parse(await readFile(`${historiesDir}${f}`, 'utf8')) })),
  );
  // One bundle for every replay (bundling is the slow part).
  const bundle = await bundleWorkflowCode({ workflowsPath, logger: new DefaultLogger('ERROR') });
  // The suites' payload codec: recordings made through it replay with its key (clear ones pass through).
  options = { workflowBundle: bundle, ...testDataConverter() };
});

describe('replaying saved histories', () => {
  test('there is a saved history of every path a deploy can find in flight, and no other', () => {
    const present = histories.map((h) => h.name);
    for (const name of names)
      assert.ok(present.includes(name), `test/workflows/histories/${name}.json (${savedHistories[name]}) is missing; run scripts/histories/save-histories.ts`);
    assert.deepEqual(
      present.filter((n) => !names.includes(n)),
      [],
      'every saved history is listed in saved-histories.ts (a stale file would never be re-recorded)',
    );
  });

  test('jobs run their Postgres steps as local activities, inside the workflow tasks', () => {
    const jobs = histories.filter((h) => generationTypes.includes(workflowType(h)));
    const notJobs = [
      'webhook-delivery',
      'webhook-abandon',
      'upload-from-url',
      'provider-cancel',
      'provider-cancel-given-up',
      'pipeline-completed',
      'pipeline-step-failed',
    ];
    assert.equal(jobs.length, names.length - notJobs.length, `every history but ${notJobs.join(', ')} is a job`);
    for (const h of jobs) {
      const local = localSteps(h).map((s) => s.type);
      assert.ok(local.length > 0 && local.every((s) => dbSteps.includes(s)), `${h.name}: local steps ${local.join(', ')}`);
      assert.ok(local.includes('completeJob') || local.includes('failJob'), `${h.name}: settled by a local step`);
      for (const remote of activityTypes(h)) assert.ok(remoteJobSteps.includes(remote), `${h.name}: ${remote} is scheduled as a remote activity`);
    }
    // The instant path: the claim and the request in the first workflow task, one activity task
    // that renders, checks and stores, the completion in the second task.
    const image = of('image');
    assert.deepEqual(
      localSteps(image).map((s) => s.type),
      ['startGenerating', 'completeJob'],
    );
    assert.deepEqual(activityTypes(image), ['submitAndCheck']);
    assert.equal(workflowTasks(image), 2);
    assert.equal(closedAs(image), 'COMPLETED');
  });

  test('each history shows the path it was recorded for', () => {
    for (const name of ['video', 'replace_actor', 'talking_actor'] as const) {
      assert.deepEqual(activityTypes(of(name)), ['submitAndCheck'], name);
      assert.equal(closedAs(of(name)), 'COMPLETED', name);
    }

    // A route with a speech step: the script spoken on the speech provider's queue, then the route's request on its own.
    const spoken = of('fal-talking-actor');
    const spokenSteps = events(spoken, 'ACTIVITY_TASK_SCHEDULED').map((e) => [
      e.activityTaskScheduledEventAttributes.activityType.name,
      e.activityTaskScheduledEventAttributes.taskQueue.name.replace(/^.*-provider-/, ''),
    ]);
    assert.deepEqual(spokenSteps.slice(0, 2), [
      ['speak', 'elevenlabs'],
      ['submitAndCheck', 'fal'],
    ]);
    assert.deepEqual(spokenSteps.at(-1), ['checkProvider', 'fal'], "the outputs stored on fal's queue");
    assert.equal(closedAs(spoken), 'COMPLETED');

    const urls = of('replace_actor-url-inputs');
    assert.deepEqual(activityTypes(urls), ['prepareProviderRequest', 'submitAndCheck']);
    assert.match(
      events(urls, 'ACTIVITY_TASK_SCHEDULED')[0]!.activityTaskScheduledEventAttributes.taskQueue.name,
      /-fetch$/,
      'URL inputs are fetched on the fetch queue',
    );
    assert.equal(closedAs(urls), 'COMPLETED');

    const failed = of('image-failed');
    assert.deepEqual(
      localSteps(failed).map((s) => s.type),
      ['startGenerating', 'failJob'],
    );
    assert.match(events(failed, 'ACTIVITY_TASK_FAILED')[0]!.activityTaskFailedEventAttributes.failure.message, /injected terminal failure/);
    assert.equal(closedAs(failed), 'FAILED');

    const canceled = of('image-canceled');
    assert.equal(events(canceled, 'WORKFLOW_EXECUTION_CANCEL_REQUESTED').length, 1);
    assert.equal(localSteps(canceled).at(-1)!.type, 'failJob');
    assert.equal(activityTypes(canceled).at(-1), 'cancelProvider', 'the provider cancel comes after the refund');
    assert.equal(closedAs(canceled), 'CANCELED');

    const afterOutputs = of('image-canceled-after-completion');
    assert.equal(events(afterOutputs, 'WORKFLOW_EXECUTION_CANCEL_REQUESTED').length, 1);
    assert.deepEqual(
      localSteps(afterOutputs).map((s) => [s.type, s.failure ? 'failed' : 'ok']),
      [
        ['startGenerating', 'ok'],
        ['completeJob', 'failed'],
        ['failJob', 'ok'],
      ],
      'the completion in flight gives way to the cancel',
    );
    assert.equal(closedAs(afterOutputs), 'CANCELED');

    const late = of('image-deadline-exceeded');
    assert.ok(events(late, 'TIMER_FIRED').length >= 1 && activityTypes(late).includes('checkProvider'), 'polled on durable timers');
    assert.match(events(late, 'WORKFLOW_EXECUTION_FAILED')[0]!.workflowExecutionFailedEventAttributes.failure.message, /did not finish within 3 s/);
    assert.equal(activityTypes(late).at(-1), 'cancelProvider');

    // The customer's deadline: a timer from the first workflow task, canceled when the job completes first…
    const inTime = of('image-deadline-completed');
    assert.equal(events(inTime, 'TIMER_STARTED').length, 1);
    assert.equal(events(inTime, 'TIMER_CANCELED').length, 1);
    assert.equal(closedAs(inTime), 'COMPLETED');
    // …firing while the renderer works: the wait for the next check canceled, the job failed and refunded, then its request canceled.
    const overdue = of('image-deadline-passed-while-running');
    assert.ok(events(overdue, 'TIMER_FIRED').length >= 1 && activityTypes(overdue).includes('submitAndCheck'));
    assert.equal(localSteps(overdue).at(-1)!.type, 'failJob');
    assert.equal(activityTypes(overdue).at(-1), 'cancelProvider', 'the provider cancel comes after the refund');
    assert.match(
      events(overdue, 'WORKFLOW_EXECUTION_FAILED')[0]!.workflowExecutionFailedEventAttributes.failure.message,
      /deadline .* passed before it completed/,
    );
    // …or passed before the run: failed by its first step, nothing scheduled at the provider.
    const stale = of('image-deadline-passed-before-start');
    assert.deepEqual(
      localSteps(stale).map((s) => s.type),
      ['failJob'],
    );
    assert.deepEqual(activityTypes(stale), []);
    assert.equal(closedAs(stale), 'FAILED');

    // The claim failed while Postgres was away, its retry waited on a workflow timer, then it went through.
    const backoff = of('image-db-step-backoff');
    const [claimFailed, claimed] = localSteps(backoff);
    assert.equal(claimFailed!.type, 'startGenerating');
    assert.ok(claimFailed!.failure, 'the backoff marker carries the failure');
    const timer = events(backoff, 'TIMER_STARTED')[0]!;
    assert.ok(
      Number(timer.eventId) > claimFailed!.eventId && Number(timer.eventId) < claimed!.eventId,
      'a timer between the failed attempts and the one that went through',
    );
    assert.equal(claimed!.type, 'startGenerating');
    assert.ok(claimed!.attempt > claimFailed!.attempt && !claimed!.failure, `attempt ${claimed!.attempt} claimed the job`);
    assert.equal(closedAs(backoff), 'COMPLETED');

    const paid = of('fal-image');
    assert.equal(activityTypes(paid).filter((t) => t === 'submitAndCheck').length, 1, 'submitted once');
    assert.ok(activityTypes(paid).includes('checkProvider') && events(paid, 'TIMER_FIRED').length >= 1);
    assert.equal(closedAs(paid), 'COMPLETED');

    const afterSubmit = of('fal-image-failed-after-submit');
    assert.equal(activityTypes(afterSubmit)[0], 'submitAndCheck');
    assert.equal(localSteps(afterSubmit).at(-1)!.type, 'failJob');
    assert.equal(activityTypes(afterSubmit).at(-1), 'cancelProvider', 'the recorded request is canceled after the refund');
    assert.equal(closedAs(afterSubmit), 'FAILED');

    // Reset to the task after the submit: the new run's check found the request canceled and submitted again.
    const revived = of('fal-image-reset');
    assert.equal(resetTasks(revived).length, 1);
    assert.equal(activityTypes(revived).filter((t) => t === 'submitAndCheck').length, 2);
    assert.ok(
      Number(events(revived, 'ACTIVITY_TASK_SCHEDULED')[0]!.eventId) < Number(resetTasks(revived)[0]!.eventId),
      'the first submit is from the run that was reset',
    );
    assert.equal(localSteps(revived).at(-1)!.type, 'completeJob');
    assert.equal(closedAs(revived), 'COMPLETED');

    // Failover: fal took the request, its status stayed down past the budget; the route was given up
    // (a local step), its request canceled on fal's queue, and the job completed on xAI's.
    const moved = of('grok-video-failover');
    assert.deepEqual(
      localSteps(moved).map((s) => s.type),
      ['startGenerating', 'routeJob', 'routeJob', 'completeJob'],
    );
    const scheduled = events(moved, 'ACTIVITY_TASK_SCHEDULED').map((e) => [
      e.activityTaskScheduledEventAttributes.activityType.name,
      e.activityTaskScheduledEventAttributes.taskQueue.name.replace(/^.*-provider-/, ''),
    ]);
    assert.deepEqual(scheduled[0], ['submitAndCheck', 'fal']);
    assert.ok(!scheduled.some(([type]) => type === 'cancelProvider'), 'the job itself never waits for the given-up cancel');
    const handedOff = events(moved, 'START_CHILD_WORKFLOW_EXECUTION_INITIATED');
    assert.equal(handedOff.length, 1);
    assert.equal(
      handedOff[0]!.startChildWorkflowExecutionInitiatedEventAttributes.workflowType.name,
      'cancelProviderRequest',
      "the given-up request's cancel is its own workflow",
    );
    assert.ok(
      Number(handedOff[0]!.eventId) <
        Number(moved.json.events.find((e) => e.activityTaskScheduledEventAttributes?.taskQueue?.name?.endsWith('-provider-xai'))!.eventId),
      'handed off before the next submit',
    );
    assert.equal(scheduled.filter(([type, queue]) => type === 'submitAndCheck' && queue === 'xai').length, 1, 'submitted once on the next route');
    assert.match(events(moved, 'ACTIVITY_TASK_FAILED')[0]!.activityTaskFailedEventAttributes.failure.applicationFailureInfo.type, /ProviderFailover/);
    assert.equal(closedAs(moved), 'COMPLETED');
    const givenUpCancel = of('provider-cancel-given-up');
    assert.equal(workflowType(givenUpCancel), 'cancelProviderRequest');
    assert.deepEqual(activityTypes(givenUpCancel), ['cancelProvider']);

    const everyRoute = of('grok-video-every-route-failed');
    assert.deepEqual(
      localSteps(everyRoute).map((s) => s.type),
      ['startGenerating', 'routeJob', 'routeJob', 'routeJob', 'failJob'],
    );
    assert.equal(closedAs(everyRoute), 'FAILED');
    const skipped = of('grok-video-breaker-skip');
    assert.ok(
      activityTypes(skipped).every(
        (type, i) =>
          type !== 'submitAndCheck' ||
          !events(skipped, 'ACTIVITY_TASK_SCHEDULED')[i]!.activityTaskScheduledEventAttributes.taskQueue.name.endsWith('-provider-fal'),
      ),
      'fal never asked',
    );
    assert.equal(closedAs(skipped), 'COMPLETED');
    assert.equal(closedAs(of('grok-video-canceled-during-failover')), 'CANCELED');

    const unpaid = of('image-reset-insufficient-credits');
    assert.equal(resetTasks(unpaid).length, 1);
    const [claim, fail] = localSteps(unpaid);
    assert.equal(claim!.type, 'startGenerating');
    assert.equal(claim!.failure?.applicationFailureInfo?.type, 'InsufficientCredits', 'the refused revival is a marker, not an activity task');
    assert.equal(fail!.type, 'failJob');
    assert.deepEqual(activityTypes(unpaid), []);
    assert.equal(closedAs(unpaid), 'FAILED');

    const delivery = of('webhook-delivery');
    assert.equal(workflowType(delivery), 'webhookDelivery');
    assert.deepEqual(activityTypes(delivery), ['deliverWebhook']);
    assert.equal(events(delivery, 'ACTIVITY_TASK_STARTED')[0]!.activityTaskStartedEventAttributes.attempt, 2, 'delivered on its retry');
    assert.equal(closedAs(delivery), 'COMPLETED');

    const abandoned = of('webhook-abandon');
    assert.deepEqual(activityTypes(abandoned), ['deliverWebhook', 'abandonWebhook']);
    assert.equal(closedAs(abandoned), 'FAILED');

    const upload = of('upload-from-url');
    assert.equal(workflowType(upload), 'uploadFromUrl');
    assert.deepEqual(activityTypes(upload), ['fetchRemoteUpload']);
    assert.equal(closedAs(upload), 'COMPLETED');

    const cancel = of('provider-cancel');
    assert.equal(workflowType(cancel), 'cancelProviderRequest');
    assert.deepEqual(activityTypes(cancel), ['cancelProvider']);
    assert.equal(closedAs(cancel), 'COMPLETED');
  });

  test("customer pipelines: each step's job a child workflow between the pipeline's own Postgres steps", () => {
    const childTypes = (h: History) =>
      events(h, 'START_CHILD_WORKFLOW_EXECUTION_INITIATED').map((e) => e.startChildWorkflowExecutionInitiatedEventAttributes.workflowType.name);
    const steps = ['pipelinePlan', 'pipelineStartStep', 'pipelineCheckpoint', 'pipelineStartStep', 'pipelineCheckpoint'];
    for (const name of ['pipeline-completed', 'pipeline-step-failed'] as const) {
      const h = of(name);
      assert.equal(workflowType(h), 'pipelineRun', name);
      assert.deepEqual(
        localSteps(h).map((s) => s.type),
        steps,
        `${name}: its Postgres steps are local activities`,
      );
      assert.deepEqual(activityTypes(h), [], `${name}: no remote activity of its own`);
      assert.deepEqual(childTypes(h), ['imageGeneration', 'videoGeneration'], `${name}: one child job workflow per step`);
      // The pipeline's outcome is in its rows: the run itself completes once its last checkpoint ended it.
      assert.equal(closedAs(h), 'COMPLETED', name);
    }
    assert.equal(events(of('pipeline-completed'), 'CHILD_WORKFLOW_EXECUTION_COMPLETED').length, 2);
    const failed = of('pipeline-step-failed');
    assert.equal(events(failed, 'CHILD_WORKFLOW_EXECUTION_COMPLETED').length, 1, 'step 1 completed');
    assert.equal(events(failed, 'CHILD_WORKFLOW_EXECUTION_FAILED').length, 1, 'step 2 failed, and the pipeline ended after its checkpoint');
    assert.ok(
      Number(events(failed, 'CHILD_WORKFLOW_EXECUTION_FAILED')[0]!.eventId) < localSteps(failed).at(-1)!.eventId,
      'the failed step is checkpointed after its job ended',
    );
  });

  test("an encrypted history: its payloads sealed under the test key, replayed only through the codec's data converter", async () => {
    const sealed = of('image-encrypted');
    const input = sealed.json.events[0]!.workflowExecutionStartedEventAttributes.input.payloads[0];
    const meta = (p: { metadata: Record<string, string> }, k: string) => Buffer.from(p.metadata[k] ?? '', 'base64').toString('utf8');
    assert.equal(meta(input, 'encoding'), 'binary/encrypted', 'the workflow input is sealed');
    assert.equal(meta(input, 'encryption-key-id'), TEST_CODEC_KEY_ID);
    const completed = events(sealed, 'ACTIVITY_TASK_COMPLETED')[0]!.activityTaskCompletedEventAttributes.result.payloads[0];
    assert.equal(meta(completed, 'encoding'), 'binary/encrypted', "the provider step's result is sealed");
    assert.ok(!JSON.stringify(sealed.json).includes('a sealed fox'), 'no prompt in the saved history');
    // Without the codec the workflow cannot read its own input: the replay fails; with it, it replays.
    await assert.rejects(Worker.runReplayHistory({ workflowBundle: options.workflowBundle }, sealed.json, 'sealed-without-codec'), (err: Error) => {
      assert.match(err.message, /binary\/encrypted|encoding/i);
      return true;
    });
    await Worker.runReplayHistory({ workflowBundle: options.workflowBundle, ...testDataConverter() }, sealed.json, 'sealed-with-codec');
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
    assert.equal(replayed, names.length);
    assert.deepEqual(failures, []);
  });

  test('the prebuilt production bundle (npm run build) replays them too', async () => {
    const codePath = fileURLToPath(new URL('../../workflow-bundle.js', import.meta.url));
    for (const h of histories) await Worker.runReplayHistory({ workflowBundle: { codePath }, ...testDataConverter() }, h.json, h.name);
  });

  test('a history that no longer matches the code fails the replay with a determinism violation', async () => {
    // The same job as the saved one, except that its first activity was something else.
    const tampered = structuredClone(of('image').json);
    const scheduled = tampered.events.find(is('ACTIVITY_TASK_SCHEDULED'))!.activityTaskScheduledEventAttributes;
    assert.equal(scheduled.activityType.name, 'submitAndCheck');
    scheduled.activityType.name = 'checkProvider';
    await assert.rejects(Worker.runReplayHistory(options, tampered, 'tampered-image'), (err: Error) => {
      assert.equal(err.name, 'DeterminismViolationError');
      assert.match(err.message, /checkProvider|submitAndCheck|nondetermin/i);
      return true;
    });
  });
});
