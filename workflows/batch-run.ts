// The parent workflow of a batch (workflow id = the batch id; input: the id alone, the rest is read
// by its activities from Postgres), following the customer pipelines' parent (pipeline-run.ts):
//   batchStartItems (charges and starts the next waiting items through the one job create, at
//   most BATCH_START_PER_SECOND a second: a pause of `waitMs` between calls is the bound) → once
//   none waits, batchCheck on durable timers backing off to MAX_WAIT_MS until every item's job
//   ended → the batch completes and its batch.completed is written with that move.
// The items' jobs are started through the client as any job is (not as children: a thousand
// children would weigh on one history), each its own workflow with the workspace as its fairness
// key at priority low, so a batch never makes another workspace's jobs wait behind it; a failed
// start is the reconciler's to retry, as for any job. A retry of failed items makes some wait again:
// the next batchCheck sees them and the run goes back to starting.
// The history is bounded: every CONTINUE_AFTER steps the run continues as new (the batch's state
// is in Postgres, so nothing is carried over but its id). Pinned: a batch ends on the build that
// started it.
import { continueAsNew, proxyLocalActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { BatchActivities, BatchRunInput } from './batch-types.js';
import { setVersioningBehavior } from './versioning.js';

const acts = proxyLocalActivities<BatchActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

/** The first look at the started items after the last start; later ones back off to MAX_WAIT_MS. */
const FIRST_WAIT_MS = 500;
const MAX_WAIT_MS = 10_000;
/** Steps of one run before it continues as new (each is a local activity marker and a timer: a few events). */
const CONTINUE_AFTER = 500;

export async function batchRun(input: BatchRunInput): Promise<{ steps: number }> {
  let wait = FIRST_WAIT_MS;
  for (let steps = 0; ; steps++) {
    if (steps >= CONTINUE_AFTER || workflowInfo().continueAsNewSuggested) await continueAsNew<typeof batchRun>(input);
    const step = await acts.batchStartItems(input.batchId);
    if (step.next === 'start') {
      wait = FIRST_WAIT_MS;
      await sleep(step.waitMs);
      continue;
    }
    if (step.next === 'end') return { steps };
    const check = await acts.batchCheck(input.batchId);
    if (check.next === 'end') return { steps };
    if (check.next === 'start') continue;
    await sleep(wait);
    wait = Math.min(wait * 2, MAX_WAIT_MS);
  }
}

setVersioningBehavior('PINNED', batchRun);
