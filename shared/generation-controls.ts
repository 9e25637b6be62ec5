// Generation controls: the optional create fields that steer a provider's model beyond the prompt
// (`seed`, `negative_prompt`, `audio`). Each is honoured only where the route's provider takes it:
// the catalog states, per route, which it takes (`controls`), and a job asking for one starts only on
// a route that takes it and never fails over to one that does not (shared/catalog.ts routeRefusal),
// so a control is never dropped silently. Absent, a control leaves the model's own default. Pure
// data and zod, no I/O: the gateway, the workers and the document read it alike.
import { z } from 'zod';
import { NOT_BLANK_PATTERN } from './text-patterns.js';

export const generationControls = ['seed', 'negative_prompt', 'audio'] as const;
export type GenerationControl = (typeof generationControls)[number];

/** The largest seed: a 32-bit signed integer, the widest every route's seed field takes (fal's types say integer). */
const MAX_SEED = 2_147_483_647;

/** The create-body fields of the controls, each described for the document. */
export const controlRequestFields = {
  seed: z
    .number()
    .int('must be an integer')
    .min(0)
    .max(MAX_SEED)
    .optional()
    .describe(
      `the random seed (0–${MAX_SEED}): the same seed, prompt and parameters ask the provider for the same output (most providers do not promise it bit for bit). ` +
        "Only where the model's routes take a seed (GET /v1/models controls): the job runs only on routes that do; absent: the provider picks one",
    ),
  negative_prompt: z
    .string()
    .trim()
    .min(1, 'must not be empty')
    .max(2000, 'must be at most 2000 characters')
    .meta({ pattern: NOT_BLANK_PATTERN })
    .optional()
    .describe("what the video should not show. Only where the model's routes take one (GET /v1/models controls): the job runs only on routes that do"),
  audio: z
    .boolean()
    .optional()
    .describe(
      "whether the video has a generated soundtrack (speech, effects, music). Only where the model's routes have the switch (GET /v1/models controls); absent: the model's default (audio where it makes any). " +
        'The price is the same either way',
    ),
} as const;

/** The record fields of the controls: what the create asked, absent when it asked nothing. */
export const controlRecordFields = {
  seed: z.number().int().optional().describe('the seed the create asked for; absent when it asked none'),
  negative_prompt: z.string().optional().describe('the negative prompt the create asked for; absent when it asked none'),
  audio: z.boolean().optional().describe('whether the create asked for audio (true) or none (false); absent: the model default'),
} as const;

/** A job's controls as its params store them (every kind's params fit). */
interface ControlParams {
  seed?: number | null | undefined;
  negative_prompt?: string | null | undefined;
  audio?: boolean | null | undefined;
}

/** The controls a job's params ask for, in list order. */
export function askedControls(p: ControlParams): GenerationControl[] {
  return generationControls.filter((c) => p[c] !== undefined && p[c] !== null);
}

/** The asked controls of params, copied as they are (for params and records: absent stays absent). */
export function controlsOf(p: ControlParams): { seed?: number; negative_prompt?: string; audio?: boolean } {
  return {
    ...(p.seed != null ? { seed: p.seed } : {}),
    ...(p.negative_prompt != null ? { negative_prompt: p.negative_prompt } : {}),
    ...(p.audio != null ? { audio: p.audio } : {}),
  };
}

/**
 * For the document: the kind's controls (`own`, its descriptor's) none of a model's routes takes, as `false` properties of the
 * model's schema branch (a request sending one is refused).
 */
export function refusedControlRules(own: readonly GenerationControl[], taken: readonly GenerationControl[]): Record<string, false> {
  return Object.fromEntries(own.filter((c) => !taken.includes(c)).map((c) => [c, false]));
}
