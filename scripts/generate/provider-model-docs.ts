// The "Models" section of each provider page (docs/operations/providers/<name>.md), generated from the
// catalog so the page lists exactly the models that provider serves: its primary routes, the ones it is a
// failover alternate for, the steps of a pipeline it runs, and the routes it declares but does not offer.
// `npm run docs:models` rewrites the sections; test/unit/provider-model-docs.test.ts fails when a page
// drifts from the catalog. The section sits between two markers, so the rest of a page is hand-written.
import { readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { allowedDurations, catalog, type ModelRoute } from '../../shared/catalog.js';
import { liveProviderNames, type AlternateAccepts, type LiveProviderName } from '../../providers/index.js';

export const modelsBegin = '<!-- models:begin (generated from the catalog by `npm run docs:models`; do not edit) -->';
export const modelsEnd = '<!-- models:end -->';

export const providerPagePath = (provider: LiveProviderName) => fileURLToPath(new URL(`../../../docs/operations/providers/${provider}.md`, import.meta.url));

interface ProviderModel {
  model: string;
  kind: string;
  providerModelId: string;
  role: string;
  route: ModelRoute;
  /** What this route takes where narrower than the model (a failover route's `accepts`). */
  accepts?: AlternateAccepts | undefined;
}

/** Every catalog model `provider` has a part in, in catalog order. */
function providerModels(provider: LiveProviderName): ProviderModel[] {
  const out: ProviderModel[] = [];
  for (const route of Object.values(catalog) as ModelRoute[]) {
    const base = { model: route.model, kind: route.kind, route };
    if (route.provider === provider) out.push({ ...base, providerModelId: route.providerModelId, role: 'primary route' });
    for (const a of route.alternates ?? []) {
      if (a.provider === provider) out.push({ ...base, providerModelId: a.providerModelId, role: 'failover route (after the primary)', accepts: a.accepts });
    }
    if (route.speech?.provider === provider) out.push({ ...base, providerModelId: route.speech.modelId, role: 'speech step (before the route)' });
    for (const d of route.disabledRoutes ?? []) {
      if (d.provider === provider) out.push({ ...base, providerModelId: d.providerModelId, role: `declared, not offered: ${d.reason}` });
    }
  }
  return out;
}

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
const code = (s: string) => `\`${s}\``;

function limits(r: ModelRoute, accepts: AlternateAccepts | undefined): string {
  const parts = [`aspect ratios ${r.aspectRatios.join(', ')}`];
  const narrower = [
    accepts?.aspectRatios && `aspect ratios ${accepts.aspectRatios.join(', ')}`,
    accepts?.durations && `durations ${accepts.durations.join(', ')} s`,
    accepts?.resolutions && `resolutions ${accepts.resolutions.join(', ')}`,
    accepts?.imageInputs === false && 'text only (no image inputs)',
  ].filter(Boolean);
  if (r.durations) parts.push(`durations ${allowedDurations(r)} s`);
  if (r.resolutions?.length) parts.push(`resolutions ${r.resolutions.join(', ')}`);
  const takes = r.takes ?? {};
  if (takes.startFrame === 'required') parts.push('image to video only (a first frame is required)');
  if (takes.maxReferenceImages !== undefined) parts.push(`at most ${takes.maxReferenceImages} reference image${takes.maxReferenceImages === 1 ? '' : 's'}`);
  if (takes.promptChars) parts.push(`prompt ${takes.promptChars.min ?? 1}–${takes.promptChars.max ?? 4000} characters`);
  if (narrower.length) parts.push(`on this route only ${narrower.join(', ')}`);
  return parts.join('; ');
}

function price(r: ModelRoute): string {
  const p = r.price;
  const unit = p.per === 'image' ? 'an image' : p.per === 'second' ? 'a second' : 'a job';
  const chars = p.per === 'job' && p.perHundredChars ? ` + ${p.perHundredChars} per 100 script characters` : '';
  return `${p.credits} credits ${unit}${chars}`;
}

function status(r: ModelRoute): string {
  const d = r.deprecation;
  if (!d) return 'live';
  const use = d.replacement ? ` (use ${code(d.replacement)})` : '';
  return d.retiresAt ? `retires ${d.retiresAt}${use}` : `deprecated since ${d.since}${use}`;
}

/** The generated section of one provider page, markers included. */
export function providerModelsSection(provider: LiveProviderName): string {
  const rows = providerModels(provider);
  const out = [modelsBegin, '## Models', ''];
  if (!rows.length) {
    out.push('No catalog model routes to this provider.');
  } else {
    out.push(
      'Every catalog model this provider has a part in (`kinds/<kind>/models.ts`; `GET /v1/models` gives the same per deployment). Limits are refused at create with a 400 naming the allowed values; the price is fixed at create.',
      '',
      '| Model | Kind | Provider model id | Role | Limits | Price | Status |',
      '|---|---|---|---|---|---|---|',
    );
    for (const m of rows) {
      const id = m.providerModelId === '—' ? '—' : m.providerModelId.split(', ').map(code).join(', ');
      out.push(
        `| ${code(m.model)} | ${m.kind} | ${cell(id)} | ${cell(m.role)} | ${cell(limits(m.route, m.accepts))} | ${price(m.route)} | ${cell(status(m.route))} |`,
      );
    }
  }
  out.push(modelsEnd);
  return out.join('\n');
}

/** A page with its section replaced (or appended at its end when the page has none yet). */
export function withModelsSection(page: string, provider: LiveProviderName): string {
  const section = providerModelsSection(provider);
  const begin = page.indexOf(modelsBegin);
  const end = page.indexOf(modelsEnd);
  if (begin >= 0 && end > begin) return page.slice(0, begin) + section + page.slice(end + modelsEnd.length);
  return `${page.trimEnd()}\n\n${section}\n`;
}

function main() {
  for (const provider of liveProviderNames) {
    const path = providerPagePath(provider);
    writeFileSync(path, withModelsSection(readFileSync(path, 'utf8'), provider));
    console.log(`wrote the models of ${path}`);
  }
}

// Runs as `node dist/scripts/generate/provider-model-docs.js`; the test only imports it.
if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) main();
