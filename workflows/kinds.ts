// Every job kind's workflow. A kind's jobs run as a workflow type of their own (its descriptor's
// `workflowType`, derived from the kind's name: shared/job-model.ts kindWorkflowType), so operators
// filter and read them apart in the Web UI; they are all this one function, the bundle's default
// export, which Temporal runs for a type the bundle exports no function of. A new kind needs nothing
// here.
import { ApplicationFailure, workflowInfo } from '@temporalio/workflow';
import { runGeneration } from './job-generation.js';
import type { GenerationInput } from './definitions.js';
import { setVersioningBehavior } from './versioning.js';
import { jobKindNames, kindWorkflowType } from '../shared/job-model.js';

/** The generation workflow of a job of any kind, started under its kind's workflow type. */
export default async function jobGeneration(input: GenerationInput): Promise<{ outputs: number }> {
  const type = workflowInfo().workflowType;
  const kind = (input as Partial<GenerationInput> | undefined)?.kind;
  if (!jobKindNames.some((k) => kindWorkflowType(k) === type)) {
    // A type this build has no workflow of, as for a type the bundle exports no function of: the
    // workflow task fails and is retried, so a worker of a build that has the type (a newer one,
    // mid-deploy without Worker Versioning) takes it; the run's timeout ends it otherwise.
    throw new Error(`workflow type ${type}: no workflow of this build has it`);
  }
  if (typeof kind !== 'string' || kindWorkflowType(kind) !== type) {
    // Another kind's job under a kind's type: no build runs it, so the run fails at once, before
    // any step (nothing claimed, charged or submitted).
    throw ApplicationFailure.nonRetryable(`workflow type ${type} runs jobs of its own kind, not of kind ${String(kind)}`, 'UnknownWorkflowType');
  }
  return runGeneration(input);
}

// Pinned (Worker Versioning): a job lives at most its model's deadline, so it ends on the build
// that started it, activities included, and a workflow change never needs a patch.
setVersioningBehavior('PINNED', jobGeneration);
