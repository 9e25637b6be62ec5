// Route health probes: one cheap, free call per route that asks the provider whether it still serves
// the route's model, through the model get/list endpoint the provider documents, and reads what the
// provider publishes there of the model's end (OpenAI's shutdown_date, fal's deprecated status). Only a definite
// answer counts: the model absent (404, or a list without it) or the key refused (401/403) makes the
// route unavailable; anything else (5xx, 429, a timeout, an answer we cannot read) tells nothing and
// changes nothing, so a provider's bad minute never takes a route out of rotation.
// Each provider's lookup is its folder's probe.ts (providers/<name>/probe.ts, exported by its adapter
// module as `modelLookup`): the URL, the headers and how to read the answer; this file makes the call
// and turns the answer into an outcome the same way for all.
// Providers without a documented endpoint that says whether a model exists have no probe:
// - Azure OpenAI: the data-plane deployments API (GET {endpoint}/openai/deployments/{id}) was retired
//   (Microsoft Q&A 1371786: "retired in favor of the centralized management plane API"), which needs
//   Azure Resource Manager credentials, not the resource key.
// - BytePlus ModelArk: listing models and endpoints is a control-plane API signed with an access key
//   (docs.byteplus.com/docs/ModelArk/1298459: ListEndpoints, HMAC-SHA256), not ARK_API_KEY.
// - Alibaba Model Studio: GET /api/v1/models is documented (alibabacloud.com/help/en/model-studio/
//   list-models) but its answer's fields could not be read from Alibaba's pages, so nothing reads it.
import type { ModelRoute } from '../../shared/catalog.js';
import type { LiveProviderName } from '../../shared/job-model.js';
import { providers } from '../../providers/index.js';
import type { ModelLookup, ProbeLifecycle, ProvidersConfig } from './adapter-module.js';
import { adapterModuleOf } from './registry.js';

export type { ProbeLifecycle };

/**
 * What a probe found: `available` (with `lifecycle` when the provider announced the model's end);
 * `gone` or `refused` (the route is unavailable, with why); `unknown` (nothing learnt).
 */
export type ProbeOutcome = { state: 'available'; lifecycle?: ProbeLifecycle } | { state: 'gone' | 'refused' | 'unknown'; reason: string };

interface ProbeContext {
  signal: AbortSignal;
  /** The route's kind (xAI answers image and video models on separate endpoints). */
  kind: ModelRoute['kind'];
}

type RouteProbe = (providerModelId: string, ctx: ProbeContext) => Promise<ProbeOutcome>;

/** How long one probe call may take before it counts as telling nothing. */
const PROBE_TIMEOUT_MS = 10_000;

async function lookUp(l: ModelLookup, subject: string, signal: AbortSignal): Promise<ProbeOutcome> {
  let res: Response;
  try {
    res = await fetch(l.url, {
      headers: { accept: 'application/json', ...l.headers },
      signal: AbortSignal.any([signal, AbortSignal.timeout(PROBE_TIMEOUT_MS)]),
    });
  } catch (err) {
    return { state: 'unknown', reason: `${l.what} failed: ${(err as Error).message}` };
  }
  const text = await res.text().catch(() => '');
  if (res.status === 404) return { state: 'gone', reason: `${subject}: model gone (404 from ${l.what})` };
  if (res.status === 401 || res.status === 403) return { state: 'refused', reason: `${subject}: credentials refused (${res.status} from ${l.what})` };
  if (res.status !== 200) return { state: 'unknown', reason: `${res.status} from ${l.what}` };
  if (!l.lists && !l.lifecycle) return { state: 'available' };
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    // A model get answers 200 for a model it serves, whatever else its body says.
    return l.lists ? { state: 'unknown', reason: `${l.what} answered 200 with a body that is not JSON` } : { state: 'available' };
  }
  if (l.lists && !l.lists(body)) return { state: 'gone', reason: `${subject}: model gone (not listed by ${l.what})` };
  const lifecycle = l.lifecycle?.(body);
  return lifecycle ? { state: 'available', lifecycle } : { state: 'available' };
}

/** The probe of each provider whose adapter module has a model lookup, over the deployment's provider configuration. */
export function routeProbes(c: ProvidersConfig): Partial<Record<LiveProviderName, RouteProbe>> {
  const probes: Partial<Record<LiveProviderName, RouteProbe>> = {};
  for (const { name } of providers) {
    const lookup = adapterModuleOf(name)?.modelLookup;
    if (lookup) probes[name] = (id, ctx) => lookUp(lookup(c, id, ctx.kind), `${name} route for ${id}`, ctx.signal);
  }
  return probes;
}
