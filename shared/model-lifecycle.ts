// A public model's lifecycle as the catalog states it (its `deprecation`: since, reason, replacement, retiresAt): what a
// create of it is answered with. A deprecated model still serves jobs, and the answer (and a dry
// run's) carries the standard headers: `Deprecation` (RFC 9745: the date it was deprecated, as a
// structured-field Date), `Sunset` (RFC 8594: the date creates stop, only once one is set) and
// `X-Mediagen-Warning` (the reason and the replacement in words, for logs). From its retirement date
// on, creates are refused with 410 model_retired naming the replacement. docs/api/deprecations.md.
import type { CatalogRoute as ModelRoute, Deprecation } from './catalog/types.js';

type ModelLifecycle = { state: 'active' } | { state: 'deprecated'; headers: Record<string, string>; warning: string } | { state: 'retired'; message: string };

/** Midnight UTC of an ISO date (YYYY-MM-DD); NaN when it is not one. */
export function isoDateMs(date: string): number {
  return /^\d{4}-\d{2}-\d{2}$/.test(date) ? Date.parse(`${date}T00:00:00Z`) : Number.NaN;
}

const replacementText = (d: Deprecation) => (d.replacement ? `; use ${d.replacement} instead` : '');

/** What a create of the model is answered with at `now`. */
export function modelLifecycle(route: Pick<ModelRoute, 'model' | 'deprecation'>, now: Date = new Date()): ModelLifecycle {
  const d = route.deprecation;
  if (d === undefined) return { state: 'active' };
  if (d.retiresAt !== undefined && now.getTime() >= isoDateMs(d.retiresAt)) {
    return { state: 'retired', message: `model ${route.model} was retired on ${d.retiresAt} (${d.reason})${replacementText(d)}` };
  }
  const warning =
    `model ${route.model} is deprecated since ${d.since} (${d.reason})` +
    `${d.retiresAt ? `; creates are refused from ${d.retiresAt}` : ''}${replacementText(d)}`;
  const headers: Record<string, string> = {
    Deprecation: `@${Math.floor(isoDateMs(d.since) / 1000)}`,
    'X-Mediagen-Warning': warning,
  };
  if (d.retiresAt) headers.Sunset = new Date(isoDateMs(d.retiresAt)).toUTCString();
  return { state: 'deprecated', headers, warning };
}
