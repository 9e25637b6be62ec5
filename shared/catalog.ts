// The routing catalog: every public model name mapped to the provider adapter and the provider's own
// model id, with the inputs it allows (aspect ratios, durations, resolutions), defaults, a deadline
// and a price in credits. It is the one source for request validation, pricing and routing.
// Values follow each provider's documentation; the `source` of each entry says where.
// The entries live in each kind's folder (kinds/<kind>/models.ts); this module merges them with the
// second routes the providers declare (providers/<name>/descriptor.ts `routes`) and holds the rules.
import type { JobKindName, JobPriority, ProviderName } from './job-model.js';
import { disabledRoutesOf, providerRoutesOf } from '../providers/index.js';
import { askedControls, generationControls, type GenerationControl } from './generation-controls.js';
import type { CatalogRoute, ModelEntry, OutputFormat, RouteOutput } from './catalog/types.js';
import { kindModels } from '../kinds/models.js';

export type {
  AlternateAccepts,
  AlternateRoute,
  DisabledRoute,
  FalRequestShape,
  LiveProviderName,
  ModelEntry,
  OutputFormat,
  Price,
  RouteOutput,
  RouteTakes,
} from './catalog/types.js';
export { falRequestShapes } from './catalog/types.js';

/** A catalog model's route: its folder's entry (kinds/<kind>/models.ts), its kind one of the list's, with the routes providers add. */
export interface ModelRoute extends CatalogRoute {
  kind: JobKindName;
}

/**
 * A model's entry with the routes other providers add to it, primary first (their order in the
 * provider list), and those they declare but do not offer.
 */
function withAlternates<E extends ModelEntry>(entry: E): E & Pick<ModelRoute, 'alternates' | 'disabledRoutes'> {
  const alternates = providerRoutesOf(entry.model);
  const disabledRoutes = disabledRoutesOf(entry.model);
  return { ...entry, ...(alternates.length ? { alternates } : {}), ...(disabledRoutes.length ? { disabledRoutes } : {}) };
}

type KindEntries = (typeof kindModels)[keyof typeof kindModels];
type Merged<U> = (U extends unknown ? (u: U) => void : never) extends (m: infer M) => void ? M : never;
/** Every kind's models in one map (the kinds' list order, each kind's own order). */
const entries = Object.assign({}, ...Object.values(kindModels)) as Merged<KindEntries>;
type ModelName = keyof typeof entries;
export const catalog = Object.fromEntries(Object.entries(entries).map(([model, entry]) => [model, withAlternates(entry)])) as {
  readonly [M in ModelName]: (typeof entries)[M] & Pick<ModelRoute, 'alternates' | 'disabledRoutes'>;
};

export function routeFor(model: string): ModelRoute | undefined {
  return Object.hasOwn(catalog, model) ? (catalog as Record<string, ModelRoute>)[model] : undefined;
}

export function allowedDurations(route: ModelRoute): string {
  const d = route.durations;
  if (!d) return 'none';
  return 'values' in d ? d.values.join(', ') : `${d.min} to ${d.max}`;
}

export function durationAllowed(route: ModelRoute, seconds: number): boolean {
  const d = route.durations;
  if (!d) return false;
  return 'values' in d ? d.values.includes(seconds) : Number.isInteger(seconds) && seconds >= d.min && seconds <= d.max;
}

/**
 * Speech rate used to bound a script before it is spoken: characters per second at speed 1. ElevenLabs
 * voices speak about 14–17 characters a second; the slow end keeps the estimate on the safe side.
 */
const speechCharsPerSecond = 14;

/** The longest script (characters) a live talking-actor request can speak within the lipsync cap. */
export function talkingActorScriptLimit(route: ModelRoute, speed = 1): number | undefined {
  const seconds = route.takes?.maxSpeechSeconds;
  return seconds === undefined ? undefined : Math.floor(seconds * speechCharsPerSecond * speed);
}

/** The fields of a job's params that `requestRefusal` reads (any kind's params fit). */
export interface RequestShape {
  [field: string]: unknown;
  script?: string;
  voice_options?: { speed?: number } | null;
  reference_file_ids?: readonly string[] | null;
  start_frame_file_id?: string | null;
  end_frame_file_id?: string | null;
  prompt?: string | null;
  duration?: number | null;
  seed?: number | null;
  negative_prompt?: string | null;
  audio?: boolean | null;
}

/** Characters as providers count them (Python `len`: code points, not UTF-16 units). */
function promptLength(prompt: string): number {
  let n = 0;
  for (const _ of prompt) n++;
  return n;
}

/**
 * The generation controls `provider`'s route of the model sends for this request (the local renderer:
 * every one, it draws placeholders whatever is asked).
 */
export function routeControls(route: ModelRoute, provider: ProviderName, p: RequestShape = {}): readonly GenerationControl[] {
  if (provider === 'local') return generationControls;
  if (provider !== route.provider) return route.alternates?.find((a) => a.provider === provider)?.controls ?? [];
  if (route.referenceControls && (p.reference_file_ids?.length ?? 0) > 0 && !p.start_frame_file_id && route.secondaryModelIds?.reference)
    return route.referenceControls;
  return route.controls ?? [];
}

/** The generation controls some route of the model takes, primary or alternate, whatever keys are set (for the document). */
export function catalogControls(route: ModelRoute): GenerationControl[] {
  const taken = new Set([...(route.controls ?? []), ...(route.alternates ?? []).flatMap((a) => a.controls ?? [])]);
  return generationControls.filter((c) => taken.has(c));
}

/** Why `provider`'s route of the model cannot send a generation control this request asks for, or undefined. */
function controlRefusal(route: ModelRoute, provider: ProviderName, p: RequestShape): string | undefined {
  const takes = routeControls(route, provider, p);
  const missing = askedControls(p).find((c) => !takes.includes(c));
  if (!missing) return undefined;
  const refs = route.referenceControls && (p.reference_file_ids?.length ?? 0) > 0 ? ' with reference images' : '';
  return `${missing}: ${route.model} on ${provider} takes no ${missing.replace('_', ' ')}${refs} (GET /v1/models lists each route's controls)`;
}

/** Why `provider`'s route of the model cannot take this request (its controls, an alternate's `accepts`), or undefined. */
export function routeRefusal(route: ModelRoute, provider: ProviderName, p: RequestShape): string | undefined {
  const control = controlRefusal(route, provider, p);
  if (control) return control;
  const accepts = provider === route.provider ? undefined : route.alternates?.find((a) => a.provider === provider)?.accepts;
  if (!accepts) return undefined;
  const via = `${route.model} on ${provider}`;
  if (accepts.imageInputs === false && (p.start_frame_file_id || p.end_frame_file_id || (p.reference_file_ids?.length ?? 0) > 0))
    return `${via} takes no image inputs (text-to-video only)`;
  const duration = p.duration ?? route.defaultDuration;
  if (accepts.durations && duration != null && !accepts.durations.includes(duration))
    return `duration: ${via} supports ${accepts.durations.join(', ')} seconds`;
  const resolution = (p.resolution as string | null | undefined) ?? route.defaultResolution;
  if (accepts.resolutions && resolution != null && !accepts.resolutions.includes(resolution))
    return `resolution: ${via} supports ${accepts.resolutions.join(', ')}`;
  const aspect = (p.aspect_ratio as string | null | undefined) ?? route.defaultAspectRatio;
  if (accepts.aspectRatios && !accepts.aspectRatios.includes(aspect)) return `aspect_ratio: ${via} supports ${accepts.aspectRatios.join(', ')}`;
  return undefined;
}

/** The format a model's outputs are stored in, whatever the route: PNG for images (a JPEG or WebP answer is re-encoded), MP4 for videos. */
export function storedFormat(route: Pick<ModelRoute, 'kind'>): OutputFormat {
  return route.kind === 'image' ? 'png' : 'mp4';
}

/** Answer formats the output store turns into the stored one without loss (activities/providers/output-conform.ts). */
const conformable: Readonly<Record<OutputFormat, readonly OutputFormat[]>> = { png: ['png', 'jpeg', 'webp'], jpeg: ['jpeg'], webp: ['webp'], mp4: ['mp4'] };

/** What `provider`'s route of the model delivers, from the catalog (the primary's or an alternate's `produces`). */
export function routeOutput(route: ModelRoute, provider: ProviderName): RouteOutput | undefined {
  return provider === route.provider ? route.produces : route.alternates?.find((a) => a.provider === provider)?.produces;
}

/** The output a route stores for a request: format, aspect ratio, and resolution (videos) or pixel size (images). */
interface OutputShape {
  format: OutputFormat;
  aspectRatio: string;
  resolution?: string;
  size?: string;
}

/** What `provider`'s route stores for this request, or why that is not documented (a string). */
export function outputShape(route: ModelRoute, provider: ProviderName, p: RequestShape): OutputShape | string {
  const via = `${route.model} on ${provider}`;
  const out = routeOutput(route, provider);
  if (!out) return `${via} documents no output shape`;
  const format = storedFormat(route);
  const odd = out.formats.filter((f) => !conformable[format].includes(f));
  if (odd.length) return `${via} may answer ${odd.join(', ')}, not conformable to ${format}`;
  const aspectRatio = (p.aspect_ratio as string | null | undefined) ?? route.defaultAspectRatio;
  const scaled = route.kind !== 'image' && out.scaledToFrame === true;
  if (!scaled && !out.aspectRatios.includes(aspectRatio)) return `${via} does not document aspect ratio ${aspectRatio} in its output`;
  if (route.kind === 'image') {
    const size = out.imageSizes?.[aspectRatio];
    return size ? { format, aspectRatio, size } : `${via} does not document its image size at ${aspectRatio}`;
  }
  const resolution = (p.resolution as string | null | undefined) ?? route.defaultResolution;
  if (resolution === undefined) return { format, aspectRatio };
  return scaled || out.resolutions?.includes(resolution) ? { format, aspectRatio, resolution } : `${via} does not document ${resolution} output`;
}

/**
 * The frame a video output of this route is scaled to before it is stored, when the route's frame
 * is not documented (`scaledToFrame`); undefined when the output is stored as answered.
 */
export function outputFrame(route: ModelRoute, provider: ProviderName, p: RequestShape): { width: number; height: number } | undefined {
  if (route.kind === 'image' || routeOutput(route, provider)?.scaledToFrame !== true) return undefined;
  return frameSize(
    (p.aspect_ratio as string | null | undefined) ?? route.defaultAspectRatio,
    (p.resolution as string | null | undefined) ?? route.defaultResolution,
  );
}

/**
 * Whether two routes of a model store the same output for this request (format, aspect ratio,
 * resolution or pixel size), from what both document: only then is one an alternate for the other.
 */
export function sameOutput(route: ModelRoute, a: ProviderName, b: ProviderName, p: RequestShape): boolean {
  const x = outputShape(route, a, p);
  const y = outputShape(route, b, p);
  if (typeof x === 'string' || typeof y === 'string') return false;
  return x.format === y.format && x.aspectRatio === y.aspectRatio && x.resolution === y.resolution && x.size === y.size;
}

/** Whether `provider`'s route of the model can take this request. */
export function routeTakes(route: ModelRoute, provider: ProviderName, p: RequestShape): boolean {
  return routeRefusal(route, provider, p) === undefined;
}

/** A model branch's JSON Schema keywords: its fields' rules, the rules one field brings along, and rules over fields together. */
export interface BranchSchema {
  properties?: Record<string, unknown>;
  dependentSchemas?: Record<string, unknown>;
  anyOf?: unknown[];
  allOf?: unknown[];
}

/**
 * One rule of a kind's requests, stated once (kinds/<kind>/rules.ts): why a request breaks it on a
 * route, the message of a 400, and the same rule as JSON Schema keywords of the model's branch in
 * the published document.
 */
export interface RequestRule {
  name: string;
  /** Why this request breaks the rule on the route, or undefined; absent where a check of the route's own refuses it first. */
  refusal?(route: ModelRoute, p: RequestShape): string | undefined;
  /** The rule as JSON Schema for the route's branch, or undefined where the route does not have it. */
  schema?(route: ModelRoute): BranchSchema | undefined;
}

/**
 * Why a request the create schema accepts cannot be served as asked (the message of a 400), or
 * undefined: the route's own controls and accepts, the kind's rules (its descriptor's
 * `requestRules`), then the provider's prompt and speech bounds. `provider` is the adapter that
 * would serve it: caps of a live provider do not apply to the local renderer.
 */
export function requestRefusal(route: ModelRoute, p: RequestShape, provider: ProviderName, kindRules: readonly RequestRule[] = []): string | undefined {
  const narrower = routeRefusal(route, provider, p);
  if (narrower) return narrower;
  for (const rule of kindRules) {
    const refusal = rule.refusal?.(route, p);
    if (refusal) return refusal;
  }
  // A provider's prompt bounds are its own: the local renderer takes any prompt the create schema does.
  const promptChars = route.takes?.promptChars;
  if (provider !== 'local' && typeof p.prompt === 'string' && promptChars) {
    const { min, max } = promptChars;
    const n = promptLength(p.prompt);
    if (min !== undefined && n < min) return `prompt: ${route.model} needs at least ${min} characters; this prompt has ${n}`;
    if (max !== undefined && n > max) return `prompt: ${route.model} takes at most ${max} characters; this prompt has ${n}`;
  }
  if (provider !== 'local' && p.script !== undefined) {
    const speed = p.voice_options?.speed ?? 1;
    const limit = talkingActorScriptLimit(route, speed);
    if (limit !== undefined && p.script.length > limit) {
      return `script: at most ${limit} characters at speed ${speed} here (${route.model} lipsyncs at most ${route.takes?.maxSpeechSeconds} seconds of speech per video); this script has ${p.script.length}`;
    }
  }
  return undefined;
}

/** The price of a job in credits: an integer, fixed at create time. */
export function priceFor(route: ModelRoute, p: { count?: number; duration?: number; script?: string }): number {
  const price = route.price;
  switch (price.per) {
    case 'image':
      return price.credits * (p.count ?? 1);
    case 'second':
      return price.credits * Math.ceil(p.duration ?? route.defaultDuration ?? 1);
    case 'job':
      return price.credits + (price.perHundredChars ?? 0) * Math.ceil((p.script?.length ?? 0) / 100);
  }
}

/**
 * The price of a job at its priority, fixed at create: a `low` job of a model with a
 * `lowPriorityDiscount` pays that fraction less (the credits taken off rounded down), never less
 * than the provider cost, so the operator is never out of pocket for a discounted job.
 */
export function priceAt(route: ModelRoute, p: { count?: number; duration?: number; script?: string }, priority: JobPriority = 'normal'): number {
  const full = priceFor(route, p);
  const discount = priority === 'low' ? (route.lowPriorityDiscount ?? 0) : 0;
  if (discount <= 0) return full;
  // A small epsilon so 0.3 × 10 (2.9999…) takes 3 credits off, as written.
  const off = Math.floor(full * discount + 1e-9);
  return Math.max(providerCostFor(route, p), full - off);
}

/** The credits of a job's price that a cancel after its submit does not refund: never more than the price. */
export function providerCostFor(route: ModelRoute, p: { count?: number; duration?: number; script?: string }): number {
  const price = route.price;
  const units = price.per === 'image' ? (p.count ?? 1) : price.per === 'second' ? Math.ceil(p.duration ?? route.defaultDuration ?? 1) : 1;
  const speech = price.per === 'job' ? (price.perHundredChars ?? 0) * Math.ceil((p.script?.length ?? 0) / 100) : 0;
  return Math.max(0, Math.min(priceFor(route, p), price.providerCost * units + speech));
}

/** Pixel size of a frame for an aspect ratio at a resolution label (short side = the label). */
export function frameSize(aspectRatio: string, resolution = '720p'): { width: number; height: number } {
  const short = Number.parseInt(resolution, 10) || 720;
  const [w, h] = aspectRatio.split(':').map(Number) as [number, number];
  const even = (n: number) => Math.round(n / 2) * 2;
  if (w === h) return { width: short, height: short };
  return w > h ? { width: even((short * w) / h), height: short } : { width: short, height: even((short * h) / w) };
}

/** Pixel size of a generated image for an aspect ratio. */
export function imageSize(aspectRatio: string): { width: number; height: number } {
  switch (aspectRatio) {
    case '9:16':
      return { width: 576, height: 1024 };
    case '16:9':
      return { width: 1024, height: 576 };
    default:
      return { width: 1024, height: 1024 };
  }
}
