// One workflow type per job kind (the kind descriptor's `workflowType`, kinds/), so operators
// filter and read them apart in the Web UI; each runs the one generation workflow. A new kind adds
// its function here, named as its descriptor says (the compiler checks every descriptor's type has one;
// workflows/index.ts exports them all).
import { runGeneration } from './job-generation.js';
import type { GenerationInput } from './definitions.js';
import { setVersioningBehavior } from './versioning.js';
import type { JobKind, KindOf } from '../kinds/index.js';

type JobWorkflow = (input: GenerationInput) => Promise<{ outputs: number }>;

export async function imageGeneration(input: GenerationInput): Promise<{ outputs: number }> {
  return runGeneration(input);
}

export async function videoGeneration(input: GenerationInput): Promise<{ outputs: number }> {
  return runGeneration(input);
}

export async function replaceActorGeneration(input: GenerationInput): Promise<{ outputs: number }> {
  return runGeneration(input);
}

export async function talkingActorGeneration(input: GenerationInput): Promise<{ outputs: number }> {
  return runGeneration(input);
}

/** Every kind's workflow by its type name: a descriptor naming a type without a function here fails to compile. */
const byWorkflowType: Record<KindOf<JobKind>['workflowType'], JobWorkflow> = {
  imageGeneration,
  videoGeneration,
  replaceActorGeneration,
  talkingActorGeneration,
};

// Pinned (Worker Versioning): a job lives at most its model's deadline, so it ends on the build
// that started it, activities included, and a workflow change never needs a patch.
setVersioningBehavior('PINNED', ...Object.values(byWorkflowType));
