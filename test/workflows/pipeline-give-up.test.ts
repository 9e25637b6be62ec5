// The pipeline parent's give-up with mocked activities, on a Temporal dev server this test starts
// itself: a step activity failing with the pipeline's non-retryable type (PipelineStepInvalid) is
// not retried; the workflow asks pipelineGiveUp to fail the pipeline at that step with the
// activity's message, and ends. A failure of another type is retried, and the step goes on.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { startLocalTemporal } from '../support/local-temporal.js';
import { Worker } from '@temporalio/worker';
import { ApplicationFailure } from '@temporalio/common';
import { randomToken } from '../../shared/ids.js';
import { taskQueues } from '../../workflows/definitions.js';
import { PIPELINE_STEP_INVALID, pipelineWorkflowType, type PipelineActivities } from '../../workflows/pipeline-types.js';

const bundlePath = fileURLToPath(new URL('../../workflow-bundle.js', import.meta.url));
const workflowsPath = fileURLToPath(new URL('../../workflows/index.js', import.meta.url));

let env: TestWorkflowEnvironment;

before(async () => {
  env = await startLocalTemporal();
});

after(async () => {
  await env?.teardown();
});

type Call = [name: string, ...args: unknown[]];

/** Runs a two-step pipeline whose step 0 has its job already (`wait`) and whose checkpoint answers `checkpoint(n)`. */
async function runPipeline(checkpoint: (n: number) => Promise<'next' | 'end'>) {
  const prefix = `plmock-${randomToken(8)}`;
  const calls: Call[] = [];
  let checks = 0;
  const activities: PipelineActivities = {
    async pipelinePlan(id) {
      calls.push(['pipelinePlan', id]);
      return { steps: 2, from: 0 };
    },
    async pipelineStartStep(id, position) {
      calls.push(['pipelineStartStep', id, position]);
      return { action: 'wait' };
    },
    async pipelineCheckpoint(id, position) {
      calls.push(['pipelineCheckpoint', id, position]);
      return checkpoint(++checks);
    },
    async pipelineGiveUp(id, position, reason) {
      calls.push(['pipelineGiveUp', id, position, reason]);
    },
  };
  const workflowSource = existsSync(bundlePath) ? { workflowBundle: { codePath: bundlePath } } : { workflowsPath };
  const worker = await Worker.create({
    connection: env.nativeConnection,
    namespace: 'default',
    taskQueue: taskQueues(prefix).workflows,
    ...workflowSource,
    activities,
  });
  const pipelineId = `pl_${randomToken(12)}`;
  return worker.runUntil(async () => {
    const handle = await env.client.workflow.start(pipelineWorkflowType, {
      workflowId: pipelineId,
      taskQueue: taskQueues(prefix).workflows,
      args: [{ pipelineId }],
    });
    const result = await handle.result();
    return { pipelineId, calls, result };
  });
}

describe('pipeline give-up (mocked activities)', () => {
  test('a non-retryable failure is not retried: the pipeline gives up at that step with its message', async () => {
    const { pipelineId, calls } = await runPipeline(async () => {
      throw ApplicationFailure.nonRetryable('step "b": step "a" has no output 1', PIPELINE_STEP_INVALID);
    });
    assert.deepEqual(calls, [
      ['pipelinePlan', pipelineId],
      ['pipelineStartStep', pipelineId, 0],
      ['pipelineCheckpoint', pipelineId, 0],
      ['pipelineGiveUp', pipelineId, 0, 'step "b": step "a" has no output 1'],
    ]);
  });

  test('a retryable failure is retried, and the pipeline goes on', async () => {
    const { pipelineId, calls } = await runPipeline(async (n) => {
      if (n === 1) throw new Error('canceling statement due to lock timeout');
      return n === 2 ? 'next' : 'end';
    });
    assert.deepEqual(calls, [
      ['pipelinePlan', pipelineId],
      ['pipelineStartStep', pipelineId, 0],
      ['pipelineCheckpoint', pipelineId, 0],
      ['pipelineCheckpoint', pipelineId, 0],
      ['pipelineStartStep', pipelineId, 1],
      ['pipelineCheckpoint', pipelineId, 1],
    ]);
  });
});
