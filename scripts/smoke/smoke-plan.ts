// What `npm run smoke:live` (scripts/smoke/smoke-live.ts) runs, derived from the catalog so the smoke follows
// it: for every live provider and job kind the catalog routes to that provider, the cheapest model that
// is live there today (neither deprecated nor retired), at its smallest job; one cancel while queued on
// each provider that honors one (providers/<name>/descriptor.ts `cancel: 'queued'`); and one job whose input is a
// URL (a fal image-to-video job whose first frame is the fal image step's output, a public fal CDN URL,
// since a local MinIO is not reachable from the providers). Pure: test/unit/smoke-plan.test.ts checks it.
import { catalog, providerCostFor, type ModelRoute } from '../../shared/catalog.js';
import { jobKindNames, type JobKindName } from '../../shared/job-model.js';
import { liveProviderNames, providerCancel, type LiveProviderName } from '../../providers/index.js';

type SmokeAction =
  /** Submit, poll to the end, store the outputs. */
  | 'run'
  /** The speech step of a talking actor (ElevenLabs): the speech alone, as the adapter's speak makes it. */
  | 'speech'
  /** Submit, cancel at once, and report whether the provider confirmed it (a confirmed cancel is not billed). */
  | 'cancel-queued'
  /** A run whose first frame is a URL: the output of the `run` step of the same provider's image kind. */
  | 'url-input';

export interface SmokeStep {
  action: SmokeAction;
  provider: LiveProviderName;
  kind: JobKindName;
  model: string;
  /** The provider's own model id on this route (the primary's or an alternate's). */
  providerModelId: string;
  count?: number;
  duration?: number;
  resolution?: string;
}

/** Job kinds the smoke does not run, and why. */
export const smokeExcludedKinds: Readonly<Partial<Record<JobKindName, string>>> = {
  replace_actor:
    "its motion video and actor image are conformed by the worker's media step (720p at the aspect ratio) before the provider sees them; a replace-actor job through the stack is its live check",
};

/** Whether a model is live on `day` (YYYY-MM-DD): created without a Deprecation header and not retired. */
export function liveOn(route: ModelRoute, day: string): boolean {
  return !(route.deprecation && route.deprecation.since <= day);
}

const label = (r: string) => Number.parseInt(r, 10) || Number.POSITIVE_INFINITY;

/** The smallest job a route takes on `provider`: one image, or the shortest duration at the lowest resolution. */
function smallestJob(route: ModelRoute, provider: LiveProviderName): Pick<SmokeStep, 'count' | 'duration' | 'resolution'> {
  const accepts = provider === route.provider ? undefined : route.alternates?.find((a) => a.provider === provider)?.accepts;
  if (route.kind === 'image') return { count: 1 };
  const d = route.durations;
  const durations = accepts?.durations ?? (d ? ('values' in d ? d.values : [d.min]) : []);
  const resolutions = accepts?.resolutions ?? route.resolutions ?? [];
  const duration = durations.length ? Math.min(...durations) : undefined;
  const resolution = [...resolutions].sort((a, b) => label(a) - label(b))[0];
  return { ...(duration !== undefined ? { duration } : {}), ...(resolution ? { resolution } : {}) };
}

/** Every live route of the catalog: the primary and each alternate, with its provider model id; a speech step in place of its route. */
function liveRoutes(day: string): { route: ModelRoute; provider: LiveProviderName; providerModelId: string }[] {
  const out: { route: ModelRoute; provider: LiveProviderName; providerModelId: string }[] = [];
  for (const route of Object.values(catalog) as ModelRoute[]) {
    if (!liveOn(route, day)) continue;
    // A route with a speech step is smoked by that step alone (its lipsync needs a paid speech first).
    if (route.speech) {
      out.push({ route, provider: route.speech.provider, providerModelId: route.speech.modelId });
      continue;
    }
    out.push({ route, provider: route.provider, providerModelId: route.providerModelId });
    for (const a of route.alternates ?? []) out.push({ route, provider: a.provider, providerModelId: a.providerModelId });
  }
  return out;
}

/** The smoke plan for `day` (default: today, UTC). */
export function smokePlan(day = new Date().toISOString().slice(0, 10)): SmokeStep[] {
  const routes = liveRoutes(day);
  const steps: SmokeStep[] = [];
  for (const provider of liveProviderNames) {
    for (const kind of jobKindNames) {
      if (smokeExcludedKinds[kind]) continue;
      const candidates = routes
        .filter((r) => r.provider === provider && r.route.kind === kind)
        .map((r) => ({ ...r, job: smallestJob(r.route, provider) }))
        .sort((a, b) => providerCostFor(a.route, a.job) - providerCostFor(b.route, b.job) || a.route.model.localeCompare(b.route.model));
      const cheapest = candidates[0];
      if (!cheapest) continue;
      const step = { provider, kind, model: cheapest.route.model, providerModelId: cheapest.providerModelId, ...cheapest.job };
      steps.push({ action: kind === 'talking_actor' ? 'speech' : 'run', ...step });
      // One cancel per provider is enough to see its semantics: on its first (image before video) kind.
      const cancelled = steps.some((s) => s.provider === provider && s.action === 'cancel-queued');
      if (providerCancel[provider] === 'queued' && (kind === 'image' || kind === 'video') && !cancelled) steps.push({ action: 'cancel-queued', ...step });
    }
  }
  // The URL input: fal's cheapest video model that takes a first frame, fed the fal image step's output.
  const firstFrame = routes
    .filter((r) => r.provider === 'fal' && r.route.provider === 'fal' && r.route.kind === 'video' && (r.route.takes?.maxReferenceImages ?? 0) >= 1)
    .map((r) => ({ ...r, job: smallestJob(r.route, 'fal') }))
    .sort((a, b) => providerCostFor(a.route, a.job) - providerCostFor(b.route, b.job) || a.route.model.localeCompare(b.route.model))[0];
  if (firstFrame && steps.some((s) => s.provider === 'fal' && s.kind === 'image' && s.action === 'run')) {
    steps.push({
      action: 'url-input',
      provider: 'fal',
      kind: 'video',
      model: firstFrame.route.model,
      providerModelId: firstFrame.providerModelId,
      ...firstFrame.job,
    });
  }
  return steps;
}
