// fal's route probe: the Platform API's Model Search in "find mode"
// (fal.ai/docs/api-reference/platform-apis/openapi/v1.json, GET https://api.fal.ai/v1/models?endpoint_id=…,
// `Authorization: Key …`) answers { models: [{ endpoint_id, metadata }], has_more, next_cursor }; an
// endpoint fal no longer has is left out of `models`.
import type { ModelLookup, ProbeLifecycle, ProvidersConfig } from '../../activities/providers/adapter-module.js';
import { apiOrigin, joinUrl } from '../../activities/providers/http.js';

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

export function modelLookup(c: ProvidersConfig, id: string): ModelLookup {
  const what = `GET /v1/models?endpoint_id=${id}`;
  return {
    url: `${joinUrl(apiOrigin(c.FAL_API_URL), '/v1/models')}?endpoint_id=${encodeURIComponent(id)}`,
    headers: { authorization: `Key ${c.FAL_KEY ?? ''}` },
    what,
    lists: (b) => Array.isArray((b as { models?: unknown }).models) && (b as { models: { endpoint_id?: unknown }[] }).models.some((m) => m?.endpoint_id === id),
    lifecycle: (b) => falLifecycle(b, id, what),
  };
}
