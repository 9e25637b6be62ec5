// A public model's lifecycle as the catalog states it (deprecatedAt, retiresAt, replacement): what a
// create of it is answered with. A deprecated model still serves jobs, and the answer (and a dry
// run's) carries the standard headers: `Deprecation` (RFC 9745: the date it was deprecated, as a
// structured-field Date), `Sunset` (RFC 8594: the date creates stop, only once one is set) and
// `X-Mediagen-Warning` (the reason and the replacement in words, for logs). From its retirement date
// on, creates are refused with 410 model_retired naming the replacement. docs/api/deprecations.md.
import type { CatalogRoute as ModelRoute } from './catalog/types.js';

type ModelLifecycle = { state: 'active' } | { state: 'deprecated'; headers: Record<string, string>; warning: string } | { state: 'retired'; message: string };

/** Midnight UTC of an ISO date (YYYY-MM-DD); NaN when it is not one. */
export function isoDateMs(date: string): number {
  return /^\d{4}-\d{2}-\d{2}$/.test(date) ? Date.parse(`${date}T00:00:00Z`) : Number.NaN;
}

const replacementText = (route: Pick<ModelRoute, 'replacement'>) => (route.replacement ? `; use ${route.replacement} instead` : '');

/** What a create of the model is answered with at `now`. */
export function modelLifecycle(
  route: Pick<ModelRoute, 'model' | 'deprecatedAt' | 'deprecation' | 'replacement' | 'retiresAt'>,
  now: Date = new Date(),
): ModelLifecycle {
  if (route.retiresAt !== undefined && now.getTime() >= isoDateMs(route.retiresAt)) {
    return {
      state: 'retired',
      message: `model ${route.model} was retired on ${route.retiresAt}${route.deprecation ? ` (${route.deprecation})` : ''}${replacementText(route)}`,
    };
  }
  if (route.deprecatedAt === undefined) return { state: 'active' };
  const warning =
    `model ${route.model} is deprecated since ${route.deprecatedAt}${route.deprecation ? ` (${route.deprecation})` : ''}` +
    `${route.retiresAt ? `; creates are refused from ${route.retiresAt}` : ''}${replacementText(route)}`;
  const headers: Record<string, string> = {
    Deprecation: `@${Math.floor(isoDateMs(route.deprecatedAt) / 1000)}`,
    'X-Mediagen-Warning': warning,
  };
  if (route.retiresAt) headers.Sunset = new Date(isoDateMs(route.retiresAt)).toUTCString();
  return { state: 'deprecated', headers, warning };
}
