// ElevenLabs' route probe: "List models" (elevenlabs.io/docs/api-reference/models/list: GET /v1/models,
// xi-api-key) answers an array of { model_id, … }. Presence only: the Model type (elevenlabs-python,
// generated from ElevenLabs' API definition) has no lifecycle field, so a retired model shows as gone.
import type { ModelLookup, ProvidersConfig } from '../../activities/providers/adapter-module.js';
import { joinUrl } from '../../activities/providers/http.js';

export function modelLookup(c: ProvidersConfig, id: string): ModelLookup {
  return {
    url: joinUrl(c.ELEVENLABS_BASE_URL, '/v1/models'),
    headers: { 'xi-api-key': c.ELEVENLABS_API_KEY ?? '' },
    what: 'GET /v1/models',
    lists: (b) => Array.isArray(b) && b.some((m: { model_id?: unknown }) => m?.model_id === id),
  };
}
