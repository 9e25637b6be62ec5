// Route health probes: one cheap, free call per route that asks the provider whether it still serves
// the route's model, through the model get/list endpoint the provider documents, and reads what the
// provider publishes there of the model's end (OpenAI's shutdown_date, fal's deprecated status). Only a definite
// answer counts: the model absent (404, or a list without it) or the key refused (401/403) makes the
// route unavailable; anything else (5xx, 429, a timeout, an answer we cannot read) tells nothing and
// changes nothing, so a provider's bad minute never takes a route out of rotation.
// Google's models.get and ElevenLabs' GET /v1/models are probed for presence only: neither publishes a
// lifecycle field (googleapis generativelanguage v1beta model.proto and @google/genai's Model; the Model
// type of elevenlabs-python, generated from ElevenLabs' API definition), so a retired model there shows as
// gone, not as deprecated ahead of time.
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
import type { ProvidersConfig } from './adapter-module.js';
import { apiOrigin, joinUrl } from './http.js';

/**
 * What a provider publishes of a served model's end: a deprecation, with the shutdown date when it
 * gives one (YYYY-MM-DD), and what was read, in words.
 */
export interface ProbeLifecycle {
  shutdownAt: string | null;
  signal: string;
}

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

interface Lookup {
  url: string;
  headers: Record<string, string>;
  /** What the call is, for the reason an operator reads (the path, never a key). */
  what: string;
  /** For a list: whether a 200 answer names the model. Absent: a 200 is the model itself. */
  lists?: (body: unknown) => boolean;
  /** Reads the provider's lifecycle signal of the model from a 200 answer, if it publishes one. */
  lifecycle?: (body: unknown) => ProbeLifecycle | undefined;
}

async function lookUp(l: Lookup, subject: string, signal: AbortSignal): Promise<ProbeOutcome> {
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

const isoDate = (v: unknown): v is string => typeof v === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(v);

/**
 * OpenAI's Model object (openai-node resources/models.d.ts, read 2026-12-02; API reference "Retrieve
 * model", developers.openai.com/api/reference/resources/models/methods/retrieve): `shutdown_date`, "the
 * date when the model will shut down, or null if not announced" (format date). OpenAI's deprecations
 * page lists the same dates.
 */
function openaiLifecycle(body: unknown, what: string): ProbeLifecycle | undefined {
  const date = (body as { shutdown_date?: unknown } | null)?.shutdown_date;
  return isoDate(date) ? { shutdownAt: date, signal: `OpenAI announces shutdown_date ${date} (${what})` } : undefined;
}

/**
 * fal's Model search (fal.ai/docs/platform-apis/v1/models, read 2026-12-02): each endpoint carries a
 * status, active or deprecated (the search's `status` filter takes those two), in its `metadata`; fal
 * publishes no shutdown date, so none is set.
 */
function falLifecycle(body: unknown, id: string, what: string): ProbeLifecycle | undefined {
  const models = (body as { models?: { endpoint_id?: unknown; metadata?: { status?: unknown } }[] } | null)?.models;
  const m = Array.isArray(models) ? models.find((x) => x?.endpoint_id === id) : undefined;
  return m?.metadata?.status === 'deprecated' ? { shutdownAt: null, signal: `fal lists the endpoint with status deprecated (${what})` } : undefined;
}

const path = (id: string) => encodeURIComponent(id);

/** The probe of each provider that has one, over the deployment's provider configuration. */
export function routeProbes(c: ProvidersConfig): Partial<Record<LiveProviderName, RouteProbe>> {
  return {
    // fal Platform API, Model Search in "find mode" (fal.ai/docs/api-reference/platform-apis/openapi/v1.json,
    // GET https://api.fal.ai/v1/models?endpoint_id=…, `Authorization: Key …`): { models: [{ endpoint_id,
    // metadata }], has_more, next_cursor }; an endpoint fal no longer has is left out of `models`.
    fal: (id, ctx) =>
      lookUp(
        {
          url: `${joinUrl(apiOrigin(c.FAL_API_URL), '/v1/models')}?endpoint_id=${path(id)}`,
          headers: { authorization: `Key ${c.FAL_KEY ?? ''}` },
          what: `GET /v1/models?endpoint_id=${id}`,
          lists: (b) =>
            Array.isArray((b as { models?: unknown }).models) && (b as { models: { endpoint_id?: unknown }[] }).models.some((m) => m?.endpoint_id === id),
          lifecycle: (b) => falLifecycle(b, id, `GET /v1/models?endpoint_id=${id}`),
        },
        `fal route for ${id}`,
        ctx.signal,
      ),
    // OpenAI "Retrieve model" (openai-node Models.retrieve: GET /models/{model} on the /v1 base): 404 for a
    // model the key cannot use; `shutdown_date` once OpenAI announces the model's shutdown.
    openai: (id, ctx) =>
      lookUp(
        {
          url: joinUrl(apiOrigin(c.OPENAI_BASE_URL), `/v1/models/${path(id)}`),
          headers: { authorization: `Bearer ${c.OPENAI_API_KEY ?? ''}` },
          what: `GET /v1/models/${id}`,
          lifecycle: (b) => openaiLifecycle(b, `GET /v1/models/${id}`),
        },
        `openai route for ${id}`,
        ctx.signal,
      ),
    // xAI's REST API (its OpenAPI document, "Video Generation Models" / "Image Generation Models"):
    // GET /v1/video-generation-models/{model_id} and /v1/image-generation-models/{model_id}, 404 "Model not found".
    xai: (id, ctx) => {
      const family = ctx.kind === 'image' ? 'image-generation-models' : 'video-generation-models';
      return lookUp(
        {
          url: joinUrl(apiOrigin(c.XAI_BASE_URL), `/v1/${family}/${path(id)}`),
          headers: { authorization: `Bearer ${c.XAI_API_KEY ?? ''}` },
          what: `GET /v1/${family}/${id}`,
        },
        `xai route for ${id}`,
        ctx.signal,
      );
    },
    // Gemini API models.get (ai.google.dev/api/rest/v1beta/models/get: GET /v1beta/{name=models/*}, x-goog-api-key): 404 NOT_FOUND for a model it does not serve.
    google: (id, ctx) =>
      lookUp(
        {
          url: joinUrl(c.GEMINI_BASE_URL.replace(/\/+$/, '').replace(/\/v1(beta)?$/, ''), `/v1beta/models/${path(id)}`),
          headers: { 'x-goog-api-key': c.GEMINI_API_KEY ?? '' },
          what: `GET /v1beta/models/${id}`,
        },
        `google route for ${id}`,
        ctx.signal,
      ),
    // ElevenLabs "List models" (elevenlabs.io/docs/api-reference/models/list: GET /v1/models, xi-api-key): an array of { model_id, … }.
    elevenlabs: (id, ctx) =>
      lookUp(
        {
          url: joinUrl(c.ELEVENLABS_BASE_URL, '/v1/models'),
          headers: { 'xi-api-key': c.ELEVENLABS_API_KEY ?? '' },
          what: 'GET /v1/models',
          lists: (b) => Array.isArray(b) && b.some((m: { model_id?: unknown }) => m?.model_id === id),
        },
        `elevenlabs route for ${id}`,
        ctx.signal,
      ),
  };
}
