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
// Children are ABANDONed when the parent closes: a reset of the parent never ends a job its customer
// paid for (the reset run finds it and waits for it instead). An operator's terminate or cancel of
// the parent is a cancel of the pipeline, which the reconciler carries out (worker/pipeline-operator-ends.ts).
// Operators: a reset of this workflow to any point re-runs from there; completed steps are found
// completed (no new job, no charge), and a failed pipeline re-runs its failed step as a resume does.
import { ApplicationFailure, isCancellation, ParentClosePolicy, patched, proxyLocalActivities, sleep, startChild, TemporalFailure } from '@temporalio/workflow';
import { searchAttributes } from './definitions.js';
import { PIPELINE_STEP_INVALID, type ChildStart, type PipelineActivities, type PipelineRunInput } from './pipeline-types.js';
import { setVersioningBehavior } from './versioning.js';

// A step's Postgres work retries a failure it may outlive (a lock timeout, a lost connection) until
// GIVE_UP_AFTER; one of the pipeline's own making (PipelineStepInvalid) is not retried. Either way
// the pipeline then fails at that step (pipelineGiveUp) rather than hold one of the workspace's
// active-pipeline places for ever.
const GIVE_UP_AFTER = '15 minutes';
const acts = proxyLocalActivities<PipelineActivities>({
  startToCloseTimeout: '1 minute',
  scheduleToCloseTimeout: GIVE_UP_AFTER,
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', nonRetryableErrorTypes: [PIPELINE_STEP_INVALID] },
});
/** The give-up itself retries for longer: it is what ends the pipeline. */
const giveUp = proxyLocalActivities<PipelineActivities>({
  startToCloseTimeout: '1 minute',
  scheduleToCloseTimeout: '2 hours',
  retry: { initialInterval: '1 second', maximumInterval: '1 minute' },
});
/** Histories recorded before a step's activities could give up never took this branch. */
const GIVE_UP_PATCH = 'pipeline-step-give-up';

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
  let position = -1;
  try {
    const plan = await acts.pipelinePlan(input.pipelineId);
    for (position = plan.from; position < plan.steps; position++) {
      if ((await runStep(input.pipelineId, position)) === 'end') break;
    }
    return { steps: plan.steps };
  } catch (err) {
    // Only a step activity's failure (a local activity's comes as its own failure, or wrapped in an
    // ActivityFailure or a timeout) gives up; a cancel of this workflow ends the run as cancels do.
    if (!(err instanceof TemporalFailure) || isCancellation(err) || !patched(GIVE_UP_PATCH)) throw err;
    await giveUp.pipelineGiveUp(input.pipelineId, position < 0 ? null : position, giveUpReason(err));
    return { steps: position + 1 };
  }
}

/** One step: start its job (or find it), run its workflow as a child, and checkpoint it until it ended. */
async function runStep(pipelineId: string, position: number): Promise<'next' | 'end'> {
  const start = await acts.pipelineStartStep(pipelineId, position);
  if (start.action === 'stop') return 'end';
  if (start.action === 'run') await runChild(start.child);
  let outcome = await acts.pipelineCheckpoint(pipelineId, position);
  for (let wait = FIRST_WAIT_MS; outcome === 'running'; wait = Math.min(wait * 2, MAX_WAIT_MS)) {
    await sleep(wait);
    outcome = await acts.pipelineCheckpoint(pipelineId, position);
  }
  return outcome === 'end' ? 'end' : 'next';
}

/** What the step's last failure said: the activity's own message, or its timeout. */
function giveUpReason(err: TemporalFailure): string {
  for (let e: Error | undefined = err; e; e = e.cause instanceof Error ? e.cause : undefined) {
    if (e instanceof ApplicationFailure && e.type === PIPELINE_STEP_INVALID) return e.message;
  }
  const last = err.cause instanceof Error ? err.cause.message : err.message;
  return `its database work kept failing for ${GIVE_UP_AFTER}: ${last}`;
}

// Pinned like the job workflows: a pipeline ends on the build that started it.
setVersioningBehavior('PINNED', pipelineRun);
