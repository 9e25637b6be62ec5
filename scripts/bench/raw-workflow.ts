// The yardstick of `npm run bench:jobs`: a bare Temporal workflow of six no-op activities, each a
// separate activity task on its own worker, as long as our job pipeline was before it was shortened
// (mark generating, prepare, submit, record the reference, poll, store, complete: six steps between
// start and end). It measures what the server and the SDK alone cost per workflow.
import { proxyActivities } from '@temporalio/workflow';

/** The one activity, registered by scripts/bench/jobs.ts: returns its argument. */
export interface RawActivities {
  noop(step: number): Promise<number>;
}

const { noop } = proxyActivities<RawActivities>({ startToCloseTimeout: '30s' });

export async function rawSixStepPipeline(): Promise<number> {
  let done = 0;
  for (let step = 1; step <= 6; step++) done = await noop(step);
  return done;
}
