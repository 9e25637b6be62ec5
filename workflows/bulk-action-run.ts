// The workflow of a bulk action (workflow id = the action's id; input: the id alone, the rest is read
// by its activity from Postgres): bulkActionStep applies the action to the next jobs, at most
// BULK_ACTION_PER_SECOND a second (the step's `waitMs` is the rest of its second), until none is
// pending. Durable: the jobs' marks are in Postgres, so a run replayed on another worker after a
// process kill takes up where the last committed mark left it. The history stays bounded: every
// CONTINUE_AFTER steps the run continues as new. Pinned: an action ends on the build that started it.
import { continueAsNew, proxyLocalActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { BulkActionActivities, BulkActionRunInput } from './bulk-action-types.js';
import { setVersioningBehavior } from './versioning.js';

const acts = proxyLocalActivities<BulkActionActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

/** Steps of one run before it continues as new (each is a local activity marker and a timer). */
const CONTINUE_AFTER = 500;

export async function bulkActionRun(input: BulkActionRunInput): Promise<{ steps: number }> {
  for (let steps = 0; ; steps++) {
    if (steps >= CONTINUE_AFTER || workflowInfo().continueAsNewSuggested) await continueAsNew<typeof bulkActionRun>(input);
    const step = await acts.bulkActionStep(input.bulkActionId);
    if (step.next === 'end') return { steps };
    if (step.waitMs > 0) await sleep(step.waitMs);
  }
}

setVersioningBehavior('PINNED', bulkActionRun);
