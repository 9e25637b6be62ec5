// The catalog's types: a model's route (provider, model ids, inputs, deadline, price) and its price.
// Apart from the entries (each kind's, kinds/<kind>/models.ts) and the rules (shared/catalog.ts).
import type { AlternateAccepts, LiveProviderName, OutputFormat, RouteOutput } from '../../providers/index.js';
import type { GenerationControl } from '../generation-controls.js';

export type { AlternateAccepts, LiveProviderName, OutputFormat, RouteOutput };

/**
 * A model's route as its kind's folder declares it (kinds/<kind>/models.ts); the catalog's ModelRoute
 * (shared/catalog.ts) is this with the kind named by its kind list. The kind is a plain string here
 * so the kinds' models can be typed without the kind names, which derive from them (kinds/models.ts).
 */
export interface CatalogRoute {
  /** Public model name of our API. */
  model: string;
  /** The job kind it serves (its folder's). */
  kind: string;
  /** Adapter that serves the model when it is live. */
  provider: LiveProviderName;
  /** The provider's own model id or endpoint id. */
  providerModelId: string;
  /** How the fal adapter shapes this model's request (its documented input schema), when fal serves it. */
  falRequest?: FalRequestShape;
  /** Further endpoints of the same provider the route's request may go to, by role (image edit, image to video, references). */
  secondaryModelIds?: Record<string, string>;
  /**
   * A step the generation workflow runs before the route's own request (talking actor: the script
   * spoken by ElevenLabs, then lipsynced by the route's provider): the route is live only where the
   * step's provider is too.
   */
  speech?: SpeechStep;
  /** Where these values were read. */
  source: string;
  /**
   * Other live routes for the same model, in order: used when the primary provider's key is absent,
   * and with failover on, the routes a running job moves to when its provider fails in a way another
   * provider can fix (grok-video: fal first, then xAI's own API). See shared/routing.ts.
   */
  alternates?: readonly AlternateRoute[];
  /**
   * Where else the same model is served, from the providers' own documentation, and why it has no
   * alternate here (no adapter written yet, or no second provider at all). README "Provider failover".
   */
  otherRoutes?: string;
  aspectRatios: readonly string[];
  defaultAspectRatio: string;
  /** Allowed durations in seconds: a list of discrete values, or an inclusive range of integers. */
  durations?: { values: readonly number[] } | { min: number; max: number };
  defaultDuration?: number;
  resolutions?: readonly string[];
  defaultResolution?: string;
  /** Provider time budget before the job fails, in seconds. */
  deadlineSeconds: number;
  price: Price;
  /**
   * The fraction of the price (0 < d < 1) a `priority: low` job does not pay: low jobs run only when
   * no normal or high job of the workspace waits, so they fill capacity that would otherwise idle.
   * The provider charges the same for them, so a low price never goes below the provider cost
   * (shared/catalog.ts priceAt). Unset: low jobs pay the full price.
   */
  lowPriorityDiscount?: number;
  /** How the live provider serves what is asked, where it differs (stated in the model catalog and README). */
  servedAs?: Readonly<Record<string, string>>;
  /**
   * What the primary route can take where narrower than the kind's create schema (each provider's
   * published input schema): a request asking for more would be dropped or refused upstream, so it is
   * refused at create (kinds/<kind>/rules.ts, shared/catalog.ts requestRefusal) and GET /v1/models says
   * so. The alternates state theirs as `accepts`. Unset: everything the create schema allows.
   */
  takes?: RouteTakes;
  /**
   * Routes a provider declares for the model but does not offer, each with why (providers/<name>/descriptor.ts
   * `disabled`): never a job's route; GET /v1/models lists them.
   */
  disabledRoutes?: readonly DisabledRoute[];
  /** Set once the model is deprecated (docs/api/deprecations.md); absent for a model in good standing. */
  deprecation?: Deprecation;
  /** What the primary route delivers (documented values); the alternates' must match it for a job to fail over. */
  produces?: RouteOutput;
  /**
   * The generation controls the primary route sends to its provider (shared/generation-controls.ts),
   * from the provider's input type of every endpoint the route may use; unset: none. A job asking for
   * another never starts on this route.
   */
  controls?: readonly GenerationControl[];
  /**
   * Where the route's reference-image endpoint takes fewer controls than its others (fal's Veo 3.1
   * reference-to-video has no seed or negative_prompt): the ones it takes, for jobs with reference images.
   */
  referenceControls?: readonly GenerationControl[];
}

/** The primary route's input limits (CatalogRoute `takes`). */
export interface RouteTakes {
  /** Most reference images the route can use (extra ones would be dropped silently, so they are refused). */
  maxReferenceImages?: number;
  /** Durations the provider's reference-image endpoint allows, where narrower than the model's `durations`. */
  referenceDurations?: readonly number[];
  /**
   * 'required' where the route is image to video only: a job without a first frame (a start frame,
   * or a lone reference image used as one) has no endpoint to go to, so it is refused at create.
   */
  startFrame?: 'required';
  /** False where the route has no end-frame input (an end frame would be dropped, so it is refused). */
  endFrame?: false;
  /**
   * False where the route takes text only (no endpoint for a start frame, an end frame or reference
   * images is written: they would be dropped, so they are refused).
   */
  imageInputs?: false;
  /**
   * Prompt length in characters (Unicode code points, as the provider counts them) that the provider's
   * published input schema allows, where it is narrower than the create schema's 1–4000.
   */
  promptChars?: { min?: number; max?: number };
  /** Longest speech one request can lipsync, in seconds (talking actor). */
  maxSpeechSeconds?: number;
}

/** The speech step of a route (talking actor): which provider speaks the script, with which of its models. */
interface SpeechStep {
  provider: LiveProviderName;
  /** The provider's own speech model id (ElevenLabs' model_id). */
  modelId: string;
}

/** A public model's deprecation as the catalog states it: when, why, what to move to, and when creates stop. */
export interface Deprecation {
  /**
   * The date (ISO, YYYY-MM-DD) from which the model is deprecated: creates still work and are answered
   * with the Deprecation header.
   */
  since: string;
  /** Why, with where that was read (the Deprecation answers' warning text starts here; ASCII, it travels in a header). */
  reason: string;
  /** The public model (of the same kind, not deprecated) to move to. */
  replacement?: string;
  /** The date (ISO, YYYY-MM-DD) from which creates are refused (410 model_retired); unset while none is announced. */
  retiresAt?: string;
}

export interface DisabledRoute {
  provider: LiveProviderName;
  providerModelId: string;
  reason: string;
}

/** The fal request builders (providers/fal/adapter.ts), one per documented input schema family. */
export const falRequestShapes = [
  'nano-banana',
  'seedream',
  'veo',
  'kling',
  'kling-turbo',
  'seedance',
  'seedance-2',
  'grok',
  'grok-1.5',
  'wan-animate-replace',
  'infinitalk',
] as const;
export type FalRequestShape = (typeof falRequestShapes)[number];

export interface AlternateRoute {
  provider: LiveProviderName;
  providerModelId: string;
  source: string;
  /**
   * What this route can take, where narrower than the model's: a job asking for more never starts
   * on it and never fails over to it (shared/routing.ts resolveJobRoute). Unset: everything the model takes.
   */
  accepts?: AlternateAccepts;
  /** What this route delivers; unset: undocumented, so never an alternate (shared/catalog.ts sameOutput). */
  produces?: RouteOutput;
  /** The generation controls this route sends to its provider; unset: none (a job asking for one never moves here). */
  controls?: readonly GenerationControl[];
}

/**
 * `providerCost`: what the provider charges for a submitted request, in credits per the same unit
 * (per job: plus the price's per-hundred-characters part, the speech made first). A customer's
 * cancel after the submit does not refund it unless the provider honors the cancel (README "Cancel").
 */
export type Price =
  | { per: 'image'; credits: number; providerCost: number }
  | { per: 'second'; credits: number; providerCost: number }
  | { per: 'job'; credits: number; perHundredChars?: number; providerCost: number };

/** A catalog entry as its data file writes it: the alternates come from the providers' descriptors. */
export type ModelEntry = Omit<CatalogRoute, 'alternates' | 'disabledRoutes'>;
