// xAI's answers, classed from xAI's "Debugging Errors" status table (https://docs.x.ai/docs/key-information/debugging):
// 400 an invalid argument (or an incorrect API key), 401 no or an invalid key, 403 the key or team
// lacks permission or is blocked (credits), 404 the model or resource does not exist, 405/415/422
// malformed requests, 429 rate limits (retry with backoff), 5xx xAI's side. A 404 on the submit is a
// model gone from the route; on a status check, the deferred request is gone (retried, then another
// route). A 400 that says the key is incorrect is our account's.
import { errorTable, type ErrorFacts, type ErrorTable } from '../../activities/providers/error-table.js';
import { openaiCodeOf } from '../openai/errors.js';

const debugging = 'https://docs.x.ai/docs/key-information/debugging';

export const xaiErrors: ErrorTable = errorTable([
  {
    status: 400,
    text: /incorrect api key|invalid api key/i,
    class: 'failover',
    reason: 'account',
    says: 'the provider refused our credentials',
    hint: 'check the API key configuration',
    source: debugging,
  },
  { status: 404, call: 'submit', class: 'failover', reason: 'route', says: 'the model is not served on this route', source: debugging },
  { status: 404, call: 'check', class: 'retry', ended: true, says: 'the request is unknown to the provider', source: debugging },
  { status: 429, class: 'retry', says: 'rate limited', source: debugging },
  { status: [405, 415, 422], class: 'customer', says: 'request rejected', source: debugging },
]);

export function xaiFacts(res: Pick<Response, 'status' | 'headers'>, text: string, call: 'submit' | 'check'): ErrorFacts {
  return { status: res.status, code: openaiCodeOf(text), text, headers: res.headers, call };
}
