// Google's route probe: the Gemini API's models.get (ai.google.dev/api/rest/v1beta/models/get:
// GET /v1beta/{name=models/*}, x-goog-api-key) answers 404 NOT_FOUND for a model it does not serve.
// Presence only: models.get publishes no lifecycle field (googleapis generativelanguage v1beta
// model.proto and @google/genai's Model), so a retired model shows as gone, not as deprecated ahead.
import type { ModelLookup, ProvidersConfig } from '../../activities/providers/adapter-module.js';
import { joinUrl } from '../../activities/providers/http.js';

export function modelLookup(c: ProvidersConfig, id: string): ModelLookup {
  return {
    url: joinUrl(c.GEMINI_BASE_URL.replace(/\/+$/, '').replace(/\/v1(beta)?$/, ''), `/v1beta/models/${encodeURIComponent(id)}`),
    headers: { 'x-goog-api-key': c.GEMINI_API_KEY ?? '' },
    what: `GET /v1beta/models/${id}`,
  };
}
