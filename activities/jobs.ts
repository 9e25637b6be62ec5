// Activities of the generation workflow, shared by the four job kinds. Two groups, so fleets can run
// apart: `io` activities (Postgres, input fetching; the Postgres ones run as LOCAL activities of
// the workflow worker) and `provider` activities (provider calls and output streaming: they need
// storage and provider keys, and the database for the job's provider reference and progress). Every
// status move goes through the job service (jobs/service.ts), for the run the step belongs to.
//
// Progress lives in the job row, written by the steps themselves so a status read is one Postgres
// read and never a Temporal query: each step stores the phase the workflow's `progress` query
// reports while it runs (startGenerating → fetching_inputs or submitting, prepareProviderRequest →
// submitting, the recorded provider reference → generating, a check seeing success →
// storing_outputs, completeJob / failJob → the end), and checks store the provider's percent and
// queue position when they changed, at most once per PROGRESS_WRITE_INTERVAL_MS per job. A progress
// write that fails is logged and skipped: it never fails (and so never repeats) a provider step.
//
// The steps live in activities/jobs/: io.ts (the database and input steps), and one module per
// provider step (speech.ts, submit.ts, check.ts, await.ts, cancel.ts) over the machinery they share (provider-kit.ts),
// with the output store (outputs.ts) and the progress writer (progress.ts). Activity names and
// signatures are the workflows' (workflows/activity-types.ts) and the saved histories'.
import type { JobProviderActivities } from '../workflows/activity-types.js';
import { createProviderStepKit, type ProviderActivityDeps } from './jobs/provider-kit.js';
import { submitAndCheckStep } from './jobs/submit.js';
import { checkProviderStep } from './jobs/check.js';
import { awaitProviderStep } from './jobs/await.js';
import { cancelProviderStep } from './jobs/cancel.js';
import { speakStep } from './jobs/speech.js';

export { runClaim, needsRemoteFetch, nextPhaseSql, type FinishedJob, type JobActivityDeps } from './jobs/common.js';
export { createJobIoActivities } from './jobs/io.js';
export { QUIET_START_MS, quietHeartbeat, givesUp, PROVIDER_BEAT_EVERY_MS, type ProviderActivityDeps } from './jobs/provider-kit.js';
export { createOutputStore } from './jobs/outputs.js';
export { createProgressWriter, type ProgressWriter } from './jobs/progress.js';

export function createJobProviderActivities(deps: ProviderActivityDeps): JobProviderActivities {
  const kit = createProviderStepKit(deps);
  return {
    speak: speakStep(kit),
    submitAndCheck: submitAndCheckStep(kit),
    checkProvider: checkProviderStep(kit),
    awaitProvider: awaitProviderStep(kit),
    cancelProvider: cancelProviderStep(kit),
  };
}

export type { JobIoActivities, JobProviderActivities } from '../workflows/activity-types.js';
