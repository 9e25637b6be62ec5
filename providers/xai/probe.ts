// xAI's route probe: its REST API (its OpenAPI document, "Video Generation Models" / "Image
// Generation Models") answers GET /v1/video-generation-models/{model_id} and
// /v1/image-generation-models/{model_id}, 404 "Model not found" for a model it does not serve.
import type { ModelLookup, ProvidersConfig } from '../../activities/providers/adapter-module.js';
import type { ModelRoute } from '../../shared/catalog.js';
import { apiOrigin, joinUrl } from '../../activities/providers/http.js';

export function modelLookup(c: ProvidersConfig, id: string, kind: ModelRoute['kind']): ModelLookup {
  const family = kind === 'image' ? 'image-generation-models' : 'video-generation-models';
  return {
    url: joinUrl(apiOrigin(c.XAI_BASE_URL), `/v1/${family}/${encodeURIComponent(id)}`),
    headers: { authorization: `Bearer ${c.XAI_API_KEY ?? ''}` },
    what: `GET /v1/${family}/${id}`,
  };
}
