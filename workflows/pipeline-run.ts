// The parent workflow of a pipeline (workflow id = the pipeline id; input: the id alone, the rest
// is read by its activities from Postgres). For each step in order:
//   pipelineStartStep (creates the step's job, charged, through the job service: a deterministic job
//   id per step attempt, so a retry or a replay never creates or charges a second one) → the kind's
//   own job workflow as a CHILD (workflow id = the job id, the job workflows unchanged), so the Web
//   UI shows the pipeline and its jobs → pipelineCheckpoint (the job's outputs registered as uploads
//   and checkpointed before the next step starts; a failure or a cancel ends the pipeline).
// The job row is the truth of a step: the child's own result is not read. A child start refused
// because the job's workflow exists already (the reconciler started it, or a reset of this workflow
// runs a step again) and a child that ended without settling its job (terminated: the reconciler
// settles it) are both waited out by checkpointing on durable timers until the job ended.
// Children are ABANDONed when the parent closes: a reset or terminate of the parent never ends a job
// its customer paid for (the reset run finds it and waits for it instead).
// Operators: a reset of this workflow to any point re-runs from there; completed steps are found
// completed (no new job, no charge), and a failed pipeline re-runs its failed step as a resume does.
import { ParentClosePolicy, proxyLocalActivities, sleep, startChild } from '@temporalio/workflow';
import { searchAttributes } from './definitions.js';
import type { ChildStart, PipelineActivities, PipelineRunInput } from './pipeline-types.js';
import { setVersioningBehavior } from './versioning.js';

const acts = proxyLocalActivities<PipelineActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

/** The first look at a step's job after its child ended; later ones back off to MAX_WAIT_MS. */
const FIRST_WAIT_MS = 500;
const MAX_WAIT_MS = 10_000;

async function runChild(c: ChildStart): Promise<void> {
  try {
    const child = await startChild(c.workflowType, {
      workflowId: c.workflowId,
      taskQueue: c.taskQueue,
      args: [c.input],
      priority: c.priority,
      typedSearchAttributes: Object.entries(c.searchAttributes).map(([k, value]) => ({
        key: searchAttributes[k as keyof typeof searchAttributes],
        value,
      })),
      staticSummary: c.summary,
      staticDetails: c.details,
      workflowRunTimeout: c.runTimeoutMs,
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      parentClosePolicy: ParentClosePolicy.ABANDON,
    });
    await child.result();
  } catch {
    // Already started elsewhere, failed, canceled or terminated: the job row says how it ended.
  }
}

export async function pipelineRun(input: PipelineRunInput): Promise<{ steps: number }> {
  const plan = await acts.pipelinePlan(input.pipelineId);
  for (let position = plan.from; position < plan.steps; position++) {
    const start = await acts.pipelineStartStep(input.pipelineId, position);
    if (start.action === 'stop') break;
    if (start.action === 'run') await runChild(start.child);
    let outcome = await acts.pipelineCheckpoint(input.pipelineId, position);
    for (let wait = FIRST_WAIT_MS; outcome === 'running'; wait = Math.min(wait * 2, MAX_WAIT_MS)) {
      await sleep(wait);
      outcome = await acts.pipelineCheckpoint(input.pipelineId, position);
    }
    if (outcome === 'end') break;
  }
  return { steps: plan.steps };
}

// Pinned like the job workflows: a pipeline ends on the build that started it.
setVersioningBehavior('PINNED', pipelineRun);
