// Type test, run by `npm run lint` (tsc): every catalog model served by fal names endpoints its request
// builder is checked against (providers/fal/requests.ts falBuilderEndpoints), and the
// aspect ratios, resolutions and durations it offers are values of fal's own input types — of every
// endpoint of its builder for aspect ratio and resolution (one narrowing serves them all), of the
// model's own main endpoint for discrete durations (Kling 2.6 and 3.0 differ). The builders narrow
// these values at run time too; this proves the narrowing never refuses a request the catalog accepts.
// A catalog entry breaking one of these makes `catalogFalValues` below fail to compile, naming it.
import type { kindModels } from '../../kinds/models.js';
import type { FalRequestShape } from '../../shared/catalog.js';
import type { FalEndpointId, FalInput } from '../../providers/fal/contract.js';
import type { Common, EndpointOf, FieldTuple, falBuilderEndpoints } from '../../providers/fal/requests.js';

type KindEntries = (typeof kindModels)[keyof typeof kindModels];
/** Every kind's entries in one map. */
type Entries = (KindEntries extends unknown ? (e: KindEntries) => void : never) extends (e: infer E) => void ? E : never;

/** Values of `V` outside fal's field `F` for builder `S` (nothing when no endpoint of `S` has the field). */
type Outside<S extends FalRequestShape, F extends string, V> = [FieldTuple<S, F>] extends [never] ? never : V extends Common<S, F> ? never : V;

type DurationValues<E> = E extends { durations: { values: readonly (infer D extends number)[] } }
  ? D
  : E extends { durations: { min: infer A extends number; max: infer B extends number } }
    ? A | B
    : never;
/** Durations `D` the model's main endpoint `M` does not take (fal types Veo's as "8s", Kling's and Seedance's as "8", Grok's as a number). */
type DurationOutside<M, D extends number> = M extends FalEndpointId
  ? 'duration' extends keyof FalInput<M>
    ? NonNullable<FalInput<M>['duration' & keyof FalInput<M>]> extends infer T
      ? number extends T
        ? never
        : D extends unknown
          ? `${D}` | `${D}s` extends infer L
            ? [Extract<L, T>] extends [never]
              ? D
              : never
            : never
          : never
      : never
    : never
  : never;

type SecondaryOutside<S extends FalRequestShape, Sec> = {
  [R in keyof Sec]: R extends keyof (typeof falBuilderEndpoints)[S] ? (Sec[R] extends EndpointOf<S, R> ? never : Sec[R]) : R;
}[keyof Sec];

type Problems<E> = E extends { provider: 'fal'; falRequest: infer S extends FalRequestShape; providerModelId: infer M; aspectRatios: readonly (infer A)[] }
  ? | (M extends EndpointOf<S, 'main'> ? never : { endpoint: M })
    | ([Outside<S, 'aspect_ratio', A>] extends [never] ? never : { aspectRatio: Outside<S, 'aspect_ratio', A> })
    | (E extends { resolutions: readonly (infer R)[] }
        ? [Outside<S, 'resolution', R>] extends [never]
          ? never
          : { resolution: Outside<S, 'resolution', R> }
        : never)
    | ([DurationOutside<M, DurationValues<E>>] extends [never] ? never : { duration: DurationOutside<M, DurationValues<E>> })
    | (E extends { secondaryModelIds: infer Sec } ? ([SecondaryOutside<S, Sec>] extends [never] ? never : { secondary: SecondaryOutside<S, Sec> }) : never)
  : never;

type CatalogProblems = { [K in keyof Entries as [Problems<Entries[K]>] extends [never] ? never : K]: Problems<Entries[K]> };

export const catalogFalValues: CatalogProblems = {};

// The check bites: entries a builder could not serve are refused.
type Serves<E> = [Problems<E>] extends [never] ? true : never;
type Kling26 = { provider: 'fal'; falRequest: 'kling'; providerModelId: 'fal-ai/kling-video/v2.6/pro/text-to-video'; aspectRatios: readonly ['16:9'] };
export const kling26Ok: Serves<Kling26 & { durations: { values: [5, 10] } }> = true;
export const kling3Seven: Serves<Kling26 & { providerModelId: 'fal-ai/kling-video/v3/pro/text-to-video'; durations: { values: [7] } }> = true;
// @ts-expect-error Kling 2.6 renders 5 or 10 seconds: a catalog entry offering 7 is refused
export const kling26Seven: Serves<Kling26 & { durations: { values: [7] } }> = true;
// @ts-expect-error Kling text-to-video takes no 4:3
export const klingRatio: Serves<Omit<Kling26, 'aspectRatios'> & { aspectRatios: ['4:3'] }> = true;
// @ts-expect-error an image-to-video endpoint the Kling builder is not checked against
export const klingStray: Serves<Kling26 & { secondaryModelIds: { imageToVideo: 'fal-ai/kling-video/v2.5-turbo/pro/image-to-video' } }> = true;
// @ts-expect-error Veo renders 720p or 1080p on every endpoint of its builder, not 480p
export const veoResolution: Serves<{ provider: 'fal'; falRequest: 'veo'; providerModelId: 'fal-ai/veo3.1'; aspectRatios: ['16:9']; resolutions: ['480p'] }> =
  true;
