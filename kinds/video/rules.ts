// The video kind's input rules (start frame, end frame, reference images), each stated once: the
// message a create that breaks it is refused with (the quote's 400, jobs/quote.ts) beside the same
// rule as JSON Schema for the model's branch of the published document (./descriptor.ts). A unit
// test holds the two halves of every rule to the same verdict over every video model.
import type { BranchSchema, ModelRoute, RequestRule, RequestShape, RouteTakes } from '../../shared/catalog.js';
import { refusedControlRules, type GenerationControl } from '../../shared/generation-controls.js';

/** The generation controls a video create takes (a route that does not take one refuses it). */
export const videoControls = ['seed', 'negative_prompt', 'audio'] as const satisfies readonly GenerationControl[];

const refs = (p: RequestShape) => p.reference_file_ids?.length ?? 0;
/** What the model's live route takes, where narrower than the create schema. */
const takes = (route: ModelRoute): RouteTakes => route.takes ?? {};
/** Exactly one reference image, in JSON Schema. */
const oneReference = { required: ['reference_file_ids'], properties: { reference_file_ids: { minItems: 1, maxItems: 1 } } };

/**
 * The first frame: the start frame, or a lone reference image on a route without a reference
 * endpoint (providers/fal/requests.ts videoFrames). An end frame without one has no endpoint to go to.
 */
const firstFrame = (route: ModelRoute) => ({
  anyOf: [{ required: ['start_frame_file_id'] }, ...(route.secondaryModelIds?.reference ? [] : [oneReference])],
});

export const videoInputRules: readonly RequestRule[] = [
  {
    name: 'text only',
    refusal: (route, p) =>
      takes(route).imageInputs === false && (refs(p) > 0 || p.start_frame_file_id || p.end_frame_file_id)
        ? `${refs(p) > 0 ? 'reference_file_ids' : p.start_frame_file_id ? 'start_frame_file_id' : 'end_frame_file_id'}: ${route.model} takes text only (no start frame, end frame or reference images)`
        : undefined,
    schema: (route) =>
      takes(route).imageInputs === false
        ? { properties: { reference_file_ids: { maxItems: 0 }, start_frame_file_id: false, end_frame_file_id: false } }
        : undefined,
  },
  {
    name: 'a first frame where the model is image to video only',
    refusal: (route, p) =>
      takes(route).startFrame === 'required' && !p.start_frame_file_id && refs(p) !== 1
        ? `start_frame_file_id: ${route.model} is image to video only; send start_frame_file_id (or one reference image, used as the first frame)`
        : undefined,
    schema: (route) => (takes(route).startFrame === 'required' ? { anyOf: [{ required: ['start_frame_file_id'] }, oneReference] } : undefined),
  },
  {
    name: 'at most the reference images the model takes',
    refusal: (route, p) => {
      const max = takes(route).maxReferenceImages;
      return max !== undefined && refs(p) > max ? `reference_file_ids: ${route.model} takes at most ${max} reference image${max === 1 ? '' : 's'}` : undefined;
    },
    schema: (route) => {
      const max = takes(route).maxReferenceImages;
      return max !== undefined ? { properties: { reference_file_ids: { maxItems: max } } } : undefined;
    },
  },
  {
    name: 'reference images or a start frame, not both',
    refusal: (route, p) =>
      refs(p) > 0 && p.start_frame_file_id
        ? `reference_file_ids: ${route.model} cannot combine reference images with start_frame_file_id; send one or the other`
        : undefined,
    schema: () => ({ dependentSchemas: { start_frame_file_id: { properties: { reference_file_ids: { maxItems: 0 } } } } }),
  },
  {
    name: 'the durations the reference endpoint takes',
    refusal: (route, p) => {
      const durations = takes(route).referenceDurations;
      return refs(p) > 0 && durations && p.duration != null && !durations.includes(p.duration)
        ? `duration: ${route.model} with reference images supports ${durations.join(', ')} seconds`
        : undefined;
    },
    schema: (route) => {
      const durations = takes(route).referenceDurations;
      return durations
        ? {
            dependentSchemas: {
              reference_file_ids: { anyOf: [{ properties: { reference_file_ids: { maxItems: 0 } } }, { properties: { duration: { enum: [...durations] } } }] },
            },
          }
        : undefined;
    },
  },
  {
    name: "the reference endpoint's fewer controls (veo-3.1: no seed or negative_prompt with reference images)",
    // Refused by the route's controls (shared/catalog.ts routeControls), which the quote checks first.
    schema: (route) =>
      route.referenceControls && route.secondaryModelIds?.reference
        ? {
            dependentSchemas: {
              reference_file_ids: {
                anyOf: [{ properties: { reference_file_ids: { maxItems: 0 } } }, { properties: refusedControlRules(videoControls, route.referenceControls) }],
              },
            },
          }
        : undefined,
  },
  {
    name: 'no end frame where the model takes none',
    refusal: (route, p) => (p.end_frame_file_id && takes(route).endFrame === false ? `end_frame_file_id: ${route.model} takes no end frame` : undefined),
    schema: (route) => (takes(route).endFrame === false ? { dependentSchemas: { end_frame_file_id: false } } : undefined),
  },
  {
    name: 'an end frame only with a first frame',
    refusal: (route, p) => {
      const first = !!p.start_frame_file_id || (refs(p) === 1 && !route.secondaryModelIds?.reference);
      return p.end_frame_file_id && !first ? `end_frame_file_id: ${route.model} needs start_frame_file_id (the first frame) with an end frame` : undefined;
    },
    // Where the model takes no end frame, the rule above says all.
    schema: (route) => (takes(route).endFrame === false ? undefined : { dependentSchemas: { end_frame_file_id: firstFrame(route) } }),
  },
];

/** Two rules of one field or one branch, both kept: the second merged in, or both under allOf where a keyword clashes. */
function both(a: unknown, b: unknown): unknown {
  if (a === undefined) return b;
  if (a && b && typeof a === 'object' && typeof b === 'object' && Object.keys(b).every((k) => !(k in a))) return { ...a, ...b };
  const parts = (s: unknown) => (s && typeof s === 'object' && 'allOf' in s && Object.keys(s).length === 1 ? (s as { allOf: unknown[] }).allOf : [s]);
  return { allOf: [...parts(a), ...parts(b)] };
}

/** The rules' schemas for a route, merged into one branch (the rules' order kept, so the document stays stable). */
function branchSchema(parts: readonly (BranchSchema | undefined)[]): BranchSchema {
  const out: BranchSchema = {};
  for (const part of parts) {
    for (const key of ['properties', 'dependentSchemas'] as const) {
      for (const [field, rule] of Object.entries(part?.[key] ?? {})) out[key] = { ...out[key], [field]: both(out[key]?.[field], rule) };
    }
    // Two rules over fields together must both hold.
    if (part?.anyOf && out.anyOf) out.allOf = [...(out.allOf ?? []), { anyOf: part.anyOf }];
    else if (part?.anyOf) out.anyOf = part.anyOf;
  }
  return out;
}

/** The input rules of a video route as one branch's keywords. */
export function videoInputSchema(route: ModelRoute): BranchSchema {
  return branchSchema(videoInputRules.map((r) => r.schema?.(route)));
}
