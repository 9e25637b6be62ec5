// GET /v1/models: the model catalog as clients need it — every public model with its kind, the
// values it accepts (aspect ratios, durations, resolutions and their defaults), the create fields it
// takes, its price and how the price is counted, and how this deployment serves it. Built from the
// routing catalog (shared/catalog.ts) and the create schemas that validate requests,
// so the listing cannot drift from what the create endpoints accept.
import { z } from 'zod';
import type { Auth } from '../auth.js';
import { Endpoints } from '../endpoint.js';
import { kinds as jobKinds } from './jobs/kinds.js';
import { routeControls, routeFor, routeOutput, type ModelRoute, type RouteOutput } from '../../shared/catalog.js';
import { catalogRoutes, failoverRoutesFor, liveProviderFor, routeCancel, routeMode, type RouteMode } from '../../shared/routing.js';
import { generationControls, type GenerationControl } from '../../shared/generation-controls.js';
import { kindControls } from '../../kinds/index.js';
import type { Database } from '../../db/index.js';
import { openCircuits } from '../../db/repos/provider-circuits.js';
import { deprecatedRoutes, unavailableRoutes } from '../../db/repos/route-probes.js';
import type { CircuitState } from '../../db/schema.js';
import { jobKinds as kindNames } from '../../kinds/index.js';
import type { Config } from '../../shared/config.js';

const modelSchema = z.object({
  name: z.string().describe('the public model name, as `model` in create requests'),
  kind: z.enum(kindNames),
  create_path: z.string().describe('the create endpoint of the kind'),
  inputs: z.array(z.string()).describe('the create request fields this model takes (project_id and model aside)'),
  controls: z
    .array(z.enum(generationControls))
    .describe(
      'the generation controls (seed, negative_prompt, audio) some route of the model takes here: a job asking for one runs only on the routes that take it (routes[].controls) and never fails over to another; a control not listed is refused with 400 invalid_request. The local renderer takes every control of the kind (its placeholders ignore them)',
    ),
  output_formats: z
    .array(z.enum(['png', 'jpeg', 'webp', 'mp4']))
    .describe(
      "the formats the outputs can be stored in, the first the default: an image model's every route takes output_format png, jpeg or webp (the image is re-encoded once stored); videos are MP4",
    ),
  aspect_ratios: z.array(z.string()),
  default_aspect_ratio: z.string(),
  durations: z
    .union([z.object({ values: z.array(z.number()) }), z.object({ min: z.number(), max: z.number() })])
    .nullable()
    .describe(
      'allowed durations in seconds: a list, or an inclusive range of integers; null when the kind takes no duration (images, talking actors: the script sets it)',
    ),
  default_duration: z.number().nullable(),
  resolutions: z.array(z.string()),
  default_resolution: z.string().nullable(),
  max_reference_images: z.number().int().nullable().describe('most reference images a request may send; null when the model takes none'),
  durations_with_references: z
    .object({ values: z.array(z.number()) })
    .nullable()
    .describe("durations allowed when reference images are sent (the provider's reference endpoint's own list); null when the same as durations"),
  prompt_length: z
    .object({ min: z.number().int(), max: z.number().int() })
    .nullable()
    .describe(
      "characters a prompt may have (Unicode code points, as the provider counts them): the live provider's bounds where it sets narrower ones; null when the kind takes no prompt",
    ),
  price: z.object({
    credits: z.number().int().describe('credits per unit'),
    per: z.enum(['image', 'second', 'job']).describe('the unit: per image (× count), per second of duration (rounded up), or per job'),
    per_hundred_chars: z.number().int().optional().describe('per job: added for every started 100 characters of the script'),
    low_priority_discount: z
      .number()
      .describe(
        "the fraction of the price a job created with priority low does not pay (the credits taken off rounded down), never below what the model's provider charges for it; 0: low jobs pay the full price",
      ),
  }),
  cancel_policy: z
    .object({
      provider_cost: z
        .number()
        .int()
        .describe(
          "credits per unit of the price (price.per; per job: plus the script's per-hundred-characters part) that a cancel after the job's submit to its provider does not refund; 0 when the local renderer serves the model",
        ),
      provider_cancel: z
        .enum(['queued', 'never', 'free'])
        .describe(
          'whether the provider new jobs start on honors a cancel: queued (a request still in its queue is stopped and not charged: the provider cost is refunded too once it confirms), never (it has no cancel, or is paid before one could land), free (the local renderer: nothing is kept)',
        ),
      rule: z.string().describe('the refund rule in words'),
    })
    .describe(
      'what a cancel (POST /v1/{kind}/{id}/cancel) refunds: the whole price before the job is submitted to a provider; after it, the price less the provider cost unless the provider confirms the cancel',
    ),
  placeholder: z.boolean().describe('true when this deployment serves the model from the local renderer: its media is a placeholder, not a real model output'),
  served_by: z
    .enum(['live', 'local', 'unavailable'])
    .describe(
      'how this deployment serves the model: live (a provider), local (the local renderer: placeholder media), unavailable (its provider is not configured; creates answer 400 invalid_model)',
    ),
  provider: z.string().nullable().describe('the live provider new jobs start on, when served live'),
  routes: z
    .array(
      z.object({
        provider: z.string(),
        circuit: z.enum(['closed', 'open', 'half_open']),
        status: z
          .enum(['available', 'unavailable'])
          .describe(
            "what the route health probe last found: available (the provider lists the model, or the provider has no probe, or none ran yet); unavailable (the provider no longer serves the model, or refuses this deployment's key): new jobs skip the route and no job fails over onto it until a probe finds the model again",
          ),
        unavailable_reason: z
          .string()
          .nullable()
          .describe("why the route is unavailable, in the provider's terms (e.g. the 404 its model endpoint answered); null while available"),
        controls: z
          .array(z.enum(generationControls))
          .describe(
            "the generation controls this route sends to its provider, from the provider's own input types (with reference images fewer may apply: a refusal says so)",
          ),
        output: z
          .object({
            formats: z.array(z.string()).describe('the formats the provider may answer; images are stored as PNG whatever it answers'),
            aspect_ratios: z.array(z.string()).describe('the aspect ratios it documents delivering as asked'),
            resolutions: z.array(z.string()).nullable().describe('videos: the resolutions it documents delivering as asked'),
            image_sizes: z.record(z.string(), z.string()).nullable().describe('images: the pixel size it documents per aspect ratio'),
          })
          .nullable()
          .describe(
            'what the route documents delivering (null: nothing documented). A job fails over to a route only when it stores the same format, aspect ratio and resolution as the route the job started on',
          ),
      }),
    )
    .describe(
      "the live routes in the order jobs use them, each with its circuit breaker and probe status: more than one when a job fails over to the next on a provider outage (never for the customer's own fault); circuit open: new jobs skip it; half_open: a trial job is let through. Empty unless served live",
    ),
  availability: z
    .enum(['available', 'degraded', 'unavailable'])
    .describe(
      'available: served as usual; degraded: a route is skipped (its circuit breaker is open, or the route probe found its model gone), jobs run on the next one; unavailable: not served here, or every route is skipped',
    ),
  served_as: z.record(z.string(), z.string()).optional().describe('where the live provider serves a value differently (e.g. an aspect ratio it lacks)'),
  deprecated_at: z
    .string()
    .nullable()
    .describe(
      'the date (YYYY-MM-DD) the model was deprecated: creates still work, answered with a Deprecation header (docs/api/deprecations.md); or, before the catalog says so, the day a provider of one of its routes announced its end (its shutdown date, read by the route probe); null when it is not deprecated',
    ),
  replacement: z.string().nullable().describe('the public model to move to from a deprecated one; null when none is named'),
  retires_at: z.string().nullable().describe('the date (YYYY-MM-DD) from which creates of the model are refused (410 model_retired); null while none is set'),
  disabled_routes: z
    .array(z.object({ provider: z.string(), reason: z.string() }))
    .describe("routes a provider declares for the model that are not offered (never a job's route), each with why"),
});
export type ModelInfo = z.infer<typeof modelSchema>;

/** The create-body fields of a kind, project_id and model aside. */
function inputsOf(body: z.ZodType): string[] {
  const shape = (body as unknown as { shape?: Record<string, unknown> }).shape ?? {};
  return Object.keys(shape).filter((k) => k !== 'project_id' && k !== 'model');
}

type KeyConfig = Parameters<typeof routeMode>[0];

/** Circuit breaker states that are not closed, by `provider/model`. */
type CircuitStates = ReadonlyMap<string, CircuitState>;

/** Why the route probe found a route unavailable, by `provider/model` (routes it found available are absent). */
type RouteProbeStates = ReadonlyMap<string, string>;
const outputOf = (o: RouteOutput | undefined): ModelInfo['routes'][number]['output'] =>
  o
    ? {
        formats: [...o.formats],
        aspect_ratios: [...o.aspectRatios],
        resolutions: o.resolutions ? [...o.resolutions] : null,
        image_sizes: o.imageSizes ? { ...o.imageSizes } : null,
      }
    : null;

/** The live routes of a model with their breakers, and what that makes of the model. */
function routesOf(
  route: ModelRoute,
  config: KeyConfig,
  mode: RouteMode,
  circuits: CircuitStates,
  probes: RouteProbeStates,
): Pick<ModelInfo, 'routes' | 'availability'> {
  if (mode !== 'live') return { routes: [], availability: mode === 'local' ? 'available' : 'unavailable' };
  const providers = failoverRoutesFor(config, route)?.map((r) => r.provider) ?? [liveProviderFor(config, route)!];
  // A speech step's model gone (the route probe's finding on the speech provider) makes every route's jobs fail.
  const speechGone = route.speech ? probes.get(`${route.speech.provider}/${route.model}`) : undefined;
  const routes = providers.map((provider) => {
    const reason = probes.get(`${provider}/${route.model}`) ?? speechGone ?? null;
    return {
      provider,
      circuit: circuits.get(`${provider}/${route.model}`) ?? ('closed' as const),
      status: reason === null ? ('available' as const) : ('unavailable' as const),
      unavailable_reason: reason,
      controls: [...routeControls(route, provider)],
      output: outputOf(routeOutput(route, provider)),
    };
  });
  const skipped = routes.filter((r) => r.circuit === 'open' || r.status === 'unavailable').length;
  return { routes, availability: skipped === 0 ? 'available' : skipped === routes.length ? 'unavailable' : 'degraded' };
}

/** Per public model, the earliest day the route probe read a provider's deprecation of one of its routes (worker/route-prober.ts). */
type ProviderDeprecations = Map<string, string>;

export function modelInfo(
  route: ModelRoute,
  config: KeyConfig,
  circuits: CircuitStates = new Map(),
  probes: RouteProbeStates = new Map(),
  deprecations: ProviderDeprecations = new Map(),
): ModelInfo {
  const kind = jobKinds.find((k) => k.kind === route.kind)!;
  const mode: RouteMode = routeMode(config, route.model);
  const d = route.durations;
  const controls = modelControls(route, config, mode);
  // A control of the kind that no route serving the model here takes is not among its inputs.
  const refused = new Set<string>(kindControls[route.kind].filter((c) => !controls.includes(c)));
  const inputs = inputsOf(kind.body).filter((f) => (route.takes?.maxReferenceImages !== undefined || f !== 'reference_file_ids') && !refused.has(f));
  return {
    name: route.model,
    kind: route.kind,
    create_path: kind.createPath,
    inputs,
    controls,
    output_formats: [...kind.outputs.formats],
    aspect_ratios: [...route.aspectRatios],
    default_aspect_ratio: route.defaultAspectRatio,
    durations: !d ? null : 'values' in d ? { values: [...d.values] } : { min: d.min, max: d.max },
    default_duration: route.defaultDuration ?? null,
    resolutions: [...(route.resolutions ?? [])],
    default_resolution: route.defaultResolution ?? null,
    max_reference_images: route.takes?.maxReferenceImages ?? null,
    durations_with_references: route.takes?.referenceDurations ? { values: [...route.takes.referenceDurations] } : null,
    prompt_length: promptLengthOf(route, inputs, mode),
    price: {
      credits: route.price.credits,
      per: route.price.per,
      ...(route.price.per === 'job' && route.price.perHundredChars !== undefined ? { per_hundred_chars: route.price.perHundredChars } : {}),
      low_priority_discount: route.lowPriorityDiscount ?? 0,
    },
    // Unavailable here: the policy of its catalog provider, for when it is enabled.
    cancel_policy: cancelPolicyOf(route, mode === 'local' ? undefined : (liveProviderFor(config, route) ?? route.provider)),
    placeholder: mode === 'local',
    served_by: mode,
    provider: mode === 'live' ? (liveProviderFor(config, route) ?? null) : null,
    ...routesOf(route, config, mode, circuits, probes),
    ...(route.servedAs && mode === 'live' ? { served_as: { ...route.servedAs } } : {}),
    // The catalog's own deprecation first; else the day a provider announced the model's end.
    deprecated_at: route.deprecation?.since ?? deprecations.get(route.model) ?? null,
    replacement: route.deprecation?.replacement ?? null,
    retires_at: route.deprecation?.retiresAt ?? null,
    disabled_routes: (route.disabledRoutes ?? []).map((r) => ({ provider: r.provider, reason: r.reason })),
  };
}

/**
 * The controls some route of the model takes here, in list order: the live routes' (every catalog
 * route's when none is live), or the kind's own under the local renderer.
 */
function modelControls(route: ModelRoute, config: KeyConfig, mode: RouteMode): GenerationControl[] {
  const own = kindControls[route.kind];
  if (mode === 'local') return [...own];
  const routes = mode === 'live' ? (failoverRoutesFor(config, route) ?? [{ provider: liveProviderFor(config, route)! }]) : catalogRoutes(route);
  const taken = new Set(routes.flatMap((r) => routeControls(route, r.provider)));
  return own.filter((c) => taken.has(c));
}

/** What a cancel of the model's jobs refunds, on the provider new jobs start on (none: the local renderer). */
function cancelPolicyOf(route: ModelRoute, provider: ReturnType<typeof liveProviderFor>): ModelInfo['cancel_policy'] {
  if (!provider) return { provider_cost: 0, provider_cancel: 'free', rule: 'a cancel refunds the whole price' };
  const cost = route.price.providerCost;
  const unit = route.price.per === 'job' ? 'per job' : `per ${route.price.per}`;
  const speech =
    route.price.per === 'job' && route.price.perHundredChars ? ` plus ${route.price.perHundredChars} per started 100 characters of the script` : '';
  const honored = routeCancel(route, provider);
  const after = `after it, the price less ${cost} credits ${unit}${speech}`;
  return {
    provider_cost: cost,
    provider_cancel: honored,
    rule: `a cancel before the job is submitted to ${provider} refunds the whole price; ${after}${honored === 'queued' ? `, or the whole price once ${provider} confirms it canceled a request still in its queue` : ''}`,
  };
}

/** The create schema's prompt bounds (1–4000), narrowed by the provider's published ones unless the local renderer serves the model. */
const createPromptChars = { min: 1, max: 4000 } as const;

function promptLengthOf(route: ModelRoute, inputs: readonly string[], mode: RouteMode): ModelInfo['prompt_length'] {
  if (!inputs.includes('prompt')) return null;
  const own = mode === 'local' ? undefined : route.takes?.promptChars;
  return { min: Math.max(createPromptChars.min, own?.min ?? 0), max: Math.min(createPromptChars.max, own?.max ?? Infinity) };
}

/** Every public model, in the order of the create endpoints' model lists. */
export function modelCatalog(
  config: KeyConfig,
  circuits: CircuitStates = new Map(),
  probes: RouteProbeStates = new Map(),
  deprecations: ProviderDeprecations = new Map(),
): ModelInfo[] {
  return jobKinds.flatMap((k) => k.models.map((name) => modelInfo(routeFor(name)!, config, circuits, probes, deprecations)));
}

/** The providers' deprecations the route probe recorded, earliest per model (one read: usually none). */
export async function readProviderDeprecations(db: Database): Promise<ProviderDeprecations> {
  const out: ProviderDeprecations = new Map();
  for (const r of await deprecatedRoutes(db)) if (!out.has(r.model) || r.deprecated_at < out.get(r.model)!) out.set(r.model, r.deprecated_at);
  return out;
}

/** The breakers that are not closed, as modelCatalog reads them (one indexed read: most are closed). */
async function readCircuitStates(db: Database): Promise<CircuitStates> {
  return new Map((await openCircuits(db)).map((c) => [`${c.provider}/${c.model}`, c.state]));
}

/** The routes the route probe found unavailable, with why, as modelCatalog reads them (one indexed read: usually none). */
async function readRouteProbeStates(db: Database): Promise<RouteProbeStates> {
  return new Map((await unavailableRoutes(db)).map((r) => [`${r.provider}/${r.model}`, r.reason ?? 'the route probe found the model unavailable']));
}

/** GET /v1/models, declared once. */
export const modelEndpoints = new Endpoints<{ config: Config; db: Database }>().add({
  method: 'get',
  path: '/v1/models',
  summary: 'List every public model (extension)',
  description: 'Each model with its kind, accepted values, inputs, price and how this deployment serves it.',
  tags: ['Models'],
  scope: 'read',
  rateClass: 'poll',
  response: z.array(modelSchema),
  errors: [401, 429, 500],
  async handler({ res, services }) {
    const [circuits, probes, deprecations] = await Promise.all([
      readCircuitStates(services.db),
      readRouteProbeStates(services.db),
      readProviderDeprecations(services.db),
    ]);
    res.json({ data: modelCatalog(services.config, circuits, probes, deprecations) });
  },
});

export const createModelsRouter = (deps: { config: Config; db: Database }, auth: Auth) => modelEndpoints.router(deps, auth);
