// The video job: one workflow per kind, so operators filter and read them apart in the Web UI.
import { runGeneration } from './pipeline.js';
import type { GenerationInput } from './definitions.js';
import { setVersioningBehavior } from './versioning.js';

export async function videoGeneration(input: GenerationInput): Promise<{ outputs: number }> {
  return runGeneration(input);
}

// Pinned (Worker Versioning): a job lives at most its model's deadline, so it ends on the build
// that started it, activities included, and a workflow change never needs a patch.
setVersioningBehavior('PINNED', videoGeneration);
