// What a live provider declares, once (providers/<name>/descriptor.ts): the variables that hold its keys,
// its configuration variables (zod entries with descriptions, merged into shared/config.ts), the hosts
// its output files come from, whether its cancel is honored, and the catalog routes it serves besides
// the models it is the primary route of. Everything else (provider names, key lists, role secrets,
// the cancel policy, catalog alternates, the worker's adapter registry) is derived in ./index.ts.
// Pure data without zod at run time (workflow code imports the names through shared/job-model.ts):
// a descriptor's config is a function of the zod kit that providers/config.ts hands it.
import type { z } from 'zod';
import type { GenerationControl } from '../shared/generation-controls.js';

/** What a descriptor's `config` is given to declare its variables with (built in ./config.ts). */
export interface ConfigKit {
  z: typeof z;
  /** An optional string variable: unset or empty is undefined. */
  optionalString: z.ZodType<string | undefined, string | undefined>;
  /** A boolean variable: true | 1 | yes, false | 0 | no, or unset/empty for the fallback. */
  bool(fallback: boolean): z.ZodType<boolean, string | undefined>;
  /** A URL variable (give it a default). */
  url: z.ZodURL;
  /** An optional URL variable: unset or empty is undefined. */
  optionalUrl(): z.ZodType<string | undefined, string | undefined>;
}

/**
 * Whether the provider honors a cancel of a submitted request, from its adapter's cancel: `queued`:
 * a request still waiting in the provider's queue is stopped and never charged (the adapter reports
 * the cancel confirmed); `never`: there is no cancel (the adapter's is a no-op) or the provider is
 * paid before a cancel could land. A customer's cancel after the submit refunds the model's provider
 * cost only once a `queued` provider confirmed the cancel (README "Cancel").
 */
export type ProviderCancel = 'queued' | 'never';

/** Where a provider's output files may come from, and the hosts its key may go to with a download. */
export interface OutputHosts {
  /**
   * Host patterns of the provider's own file hosts, each with where the provider documents it; a
   * pattern ending in a path prefix (`host/prefix/`) allows only URLs under it (a shared storage host).
   */
  hosts: readonly string[];
  /** Exact hosts that may receive the provider's key with a download (https only); none by default. */
  keyHosts: readonly string[];
}

/** What a second route can take, where narrower than the model's (shared/routing.ts resolveJobRoute). */
export interface AlternateAccepts {
  durations?: readonly number[];
  resolutions?: readonly string[];
  aspectRatios?: readonly string[];
  /** False: text only (no start frame, end frame or reference images). */
  imageInputs?: boolean;
}

/** A file format a route may deliver (the container, for videos). */
export type OutputFormat = 'png' | 'jpeg' | 'webp' | 'mp4';

/**
 * What a route delivers, from its provider's documentation (shared/catalog.ts sameOutput). Only what
 * is documented is listed: a request outside it is not guaranteed on this route, so the route is not
 * an alternate for that job.
 */
export interface RouteOutput {
  /** The formats the provider may answer (images other than PNG are re-encoded to PNG before storing). */
  formats: readonly OutputFormat[];
  /** The aspect ratios it delivers as asked. */
  aspectRatios: readonly string[];
  /** Videos: the resolutions it delivers as asked (the frame's short side); absent when undocumented. */
  resolutions?: readonly string[];
  /**
   * Videos whose frame the provider does not document: the output store scales and center-crops the
   * video to the asked frame when it differs (activities/providers/output-conform.ts), so the stored
   * aspect ratio and resolution are the asked ones whatever it answered.
   */
  scaledToFrame?: boolean;
  /** Images: the pixel size it delivers per aspect ratio ("2048x2048"); absent when undocumented. */
  imageSizes?: Readonly<Record<string, string>>;
  /** Where these values were read. */
  source: string;
}

/** A catalog model this provider serves as a further route (the catalog's `alternates`). */
export interface ProviderRoute {
  providerModelId: string;
  /** Where these values were read. */
  source: string;
  /** Unset: everything the model takes. A job asking for more never starts on this route nor fails over to it. */
  accepts?: AlternateAccepts;
  /**
   * Why the route is not offered (the provider shut the model down and documents no successor on the
   * same API): it stays declared, is never a job's route, and GET /v1/models lists it with this reason.
   */
  disabled?: string;
  /** What it delivers; unset: nothing documented, so it is never an alternate (a first route still serves). */
  produces?: RouteOutput;
  /** The generation controls (shared/generation-controls.ts) this route sends; unset: none. */
  controls?: readonly GenerationControl[];
}

export interface ProviderDescriptor<N extends string = string, K extends string = string, C extends Record<string, z.ZodType> = Record<string, z.ZodType>> {
  name: N;
  /** The variables that must all be set (here, or on the provider's fleet: PROVIDER_KEYS_SET) for the provider to be live. */
  keys: readonly K[];
  /** Those of `keys` that are not secrets (an endpoint): they are not scoped to the provider's fleet. */
  publicKeys?: readonly K[];
  /** The provider's configuration variables, each described (the configuration reference is generated from them). */
  config: (kit: ConfigKit) => C;
  outputHosts: OutputHosts;
  cancel: ProviderCancel;
  /** Catalog models (by public name) this provider serves besides its primary ones, in the order they were added. */
  routes?: Readonly<Record<string, ProviderRoute>>;
  /**
   * The longest synchronous call its adapter makes, when the paid result itself is the answer (an
   * Images API generation, a speech synthesis): that call's timeout, and the floor of its provider
   * fleet's shutdown grace (activities/providers/call-timeouts.ts), so a deploy lets a paid call
   * finish instead of paying its retry. Unset: a queue API, whose calls take one HTTP timeout.
   */
  longestCallMs?: number;
}

/** Declares a provider; the identity, typed so names, keys and config stay literal for the derivations. */
export function defineProvider<const N extends string, const K extends string, C extends Record<string, z.ZodType>>(
  d: ProviderDescriptor<N, K, C>,
): ProviderDescriptor<N, K, C> {
  return d;
}
