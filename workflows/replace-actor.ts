// The replace-actor job: one workflow per kind, so operators filter and read them apart in the Web UI.
import { runGeneration } from './pipeline.js';
import type { GenerationInput } from './definitions.js';

export async function replaceActorGeneration(input: GenerationInput): Promise<{ outputs: number }> {
  return runGeneration(input);
}
