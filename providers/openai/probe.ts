// OpenAI's route probe: "Retrieve model" (openai-node Models.retrieve: GET /models/{model} on the /v1
// base) answers 404 for a model the key cannot use, and `shutdown_date` once OpenAI announces the
// model's shutdown.
import type { ModelLookup, ProbeLifecycle, ProvidersConfig } from '../../activities/providers/adapter-module.js';
import { apiOrigin, joinUrl } from '../../activities/providers/http.js';

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

export function modelLookup(c: ProvidersConfig, id: string): ModelLookup {
  const what = `GET /v1/models/${id}`;
  return {
    url: joinUrl(apiOrigin(c.OPENAI_BASE_URL), `/v1/models/${encodeURIComponent(id)}`),
    headers: { authorization: `Bearer ${c.OPENAI_API_KEY ?? ''}` },
    what,
    lifecycle: (b) => openaiLifecycle(b, what),
  };
}
