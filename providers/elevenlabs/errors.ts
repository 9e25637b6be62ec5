// ElevenLabs' answers, classed from ElevenLabs' help pages: "API - Error Code 400 or 401"
// (https://help.elevenlabs.io/hc/en-us/articles/19572237925521): the body's `detail.status` says
// which — max_character_limit_exceeded (the request's), invalid_api_key and quota_exceeded (our
// account: credits used up), voice_not_found (a voice id our catalog holds, no fault of the
// customer's and no other route has it: final). A 429 (too many concurrent requests, the system
// busy) is the shared rate-limit row: retried.
import { errorTable, type ErrorFacts, type ErrorTable } from '../../activities/providers/error-table.js';

const errors400 = 'https://help.elevenlabs.io/hc/en-us/articles/19572237925521';

export const elevenlabsErrors: ErrorTable = errorTable([
  {
    code: 'quota_exceeded',
    class: 'failover',
    reason: 'account',
    says: 'the provider account has no quota left',
    hint: 'check its plan and credits',
    source: errors400,
  },
  {
    code: 'invalid_api_key',
    class: 'failover',
    reason: 'account',
    says: 'the provider refused our credentials',
    hint: 'check the API key configuration',
    source: errors400,
  },
  { code: 'voice_not_found', class: 'final', says: 'request rejected', source: errors400 },
  { code: 'max_character_limit_exceeded', class: 'customer', says: 'request rejected', source: errors400 },
]);

/** `detail.status` (or `detail.code`) of an ElevenLabs error body. */
function elevenlabsCodeOf(text: string): string | undefined {
  try {
    const detail = (JSON.parse(text) as { detail?: { status?: unknown; code?: unknown } } | null)?.detail;
    const code = detail && typeof detail === 'object' ? (detail.status ?? detail.code) : undefined;
    return typeof code === 'string' && code ? code : undefined;
  } catch {
    return undefined;
  }
}

export function elevenlabsFacts(res: Pick<Response, 'status' | 'headers'>, text: string): ErrorFacts {
  return { status: res.status, code: elevenlabsCodeOf(text), text, headers: res.headers };
}
